// `optimus tokenize`.
#include "text/tokenize.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/staged_files.h"
#include "text/bpe.h"
#include "text/token_file.h"
#include "text/tokenizer_folder.h"

namespace optimus::text {

namespace {

constexpr size_t kMaxInputBytes = size_t{16} << 30;  // one input file; its ids take 2-4 times as much

// The ids of the files in order, <|endoftext|> between them (when the vocabulary has it), and the
// bytes of text they encode.
std::vector<uint32_t> encode_files(const Tokenizer& tokenizer, const std::vector<std::string>& files,
                                   uint64_t& text_bytes) {
  std::vector<uint32_t> ids;
  text_bytes = 0;
  for (size_t k = 0; k < files.size(); ++k) {
    const std::string text = io::read_whole_file(files[k], "the input file", kMaxInputBytes);
    if (k > 0 && tokenizer.end_of_text()) ids.push_back(static_cast<uint32_t>(*tokenizer.end_of_text()));
    for (int id : tokenizer.encode(text)) ids.push_back(static_cast<uint32_t>(id));
    text_bytes += text.size();
  }
  if (ids.empty()) throw core::ConfigError("the input files hold no text; give files with some text in them");
  return ids;
}

// Seconds since `start`, with 3 decimals.
std::string seconds_since(std::chrono::steady_clock::time_point start) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return s;
}

// Stages ids[from, from + count) as the token file `name`, credited with text_bytes in proportion
// to its share of all the ids (for bits per byte); returns "PATH (N tokens)".
std::string stage_part(io::StagedFiles& out, const std::string& name, const std::vector<uint32_t>& ids, size_t from,
                       size_t count, uint64_t text_bytes, const TokenizerFiles& tokenizer) {
  const double share = static_cast<double>(count) / static_cast<double>(ids.size());
  TokenFileHeader h;
  h.text_bytes = static_cast<uint64_t>(std::llround(share * static_cast<double>(text_bytes)));
  stamp(h, tokenizer);
  const std::string path = out.path_of(name);
  out.write(name, [&](std::FILE* f) { write_token_file(f, path, ids, from, count, h); });
  return path + " (" + std::to_string(count) + " tokens)";
}

// The token files and the tokenizer's files, written under temporary names and renamed together
// only when all are written: a failure (a full disk) leaves the folder's earlier files as they were.
// Returns the files' part of the report.
std::string write_corpus(const TokenizeOptions& o, const TokenizerFiles& tokenizer, const std::vector<uint32_t>& ids,
                         uint64_t text_bytes, const std::vector<uint32_t>& val_ids, uint64_t val_bytes) {
  const size_t n = ids.size();
  const size_t n_val =
      o.val_inputs.empty() ? static_cast<size_t>(std::floor(static_cast<double>(n) * o.val_fraction)) : 0;
  io::StagedFiles out(o.out);
  std::string report = stage_part(out, "train.tok", ids, 0, n - n_val, text_bytes, tokenizer);
  if (!val_ids.empty()) {
    report += ", " + stage_part(out, "val.tok", val_ids, 0, val_ids.size(), val_bytes, tokenizer);
  } else if (n_val > 0) {
    report += ", " + stage_part(out, "val.tok", ids, n - n_val, n_val, text_bytes, tokenizer);
  } else {
    out.remove_at_commit("val.tok");  // an earlier run's val.tok would not belong to this corpus
  }
  write_tokenizer_files(out, tokenizer);  // transformers' AutoTokenizer loads the folder as it is
  out.commit();
  return report;
}

}  // namespace

std::string tokenize_corpus(const TokenizeOptions& o) {
  namespace fs = std::filesystem;
  if (o.inputs.empty()) throw core::ConfigError("--input names no file; give one or more text files");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw core::ConfigError("--val-fraction must be in [0, 1), but is " + std::to_string(o.val_fraction));
  }
  auto start = std::chrono::steady_clock::now();
  Tokenizer tokenizer;
  const TokenizerFiles files = read_tokenizer_files(o.tokenizer, &tokenizer);
  const std::string load_s = seconds_since(start);
  uint64_t text_bytes = 0, val_bytes = 0;
  start = std::chrono::steady_clock::now();  // reading and encoding the files
  const std::vector<uint32_t> ids = encode_files(tokenizer, o.inputs, text_bytes);
  const std::vector<uint32_t> val_ids =
      o.val_inputs.empty() ? std::vector<uint32_t>() : encode_files(tokenizer, o.val_inputs, val_bytes);
  const std::string encode_s = seconds_since(start);

  std::error_code ec;
  const bool made = !fs::exists(o.out, ec);
  fs::create_directories(o.out, ec);
  if (ec) throw core::ConfigError("cannot make the output folder " + o.out + " (" + ec.message() + ")");
  std::string written;
  try {
    written = write_corpus(o, files, ids, text_bytes, val_ids, val_bytes);
  } catch (...) {
    if (made) fs::remove(o.out, ec);  // the folder this run made, empty again
    throw;
  }
  char per_token[32];
  std::snprintf(per_token, sizeof per_token, "%.3f", static_cast<double>(text_bytes) / static_cast<double>(ids.size()));
  return "tokenized " + std::to_string(text_bytes + val_bytes) + " bytes of text into " +
         std::to_string(ids.size() + val_ids.size()) + " tokens (vocabulary " + std::to_string(files.vocab_size) +
         ", " + per_token + " bytes per token): " + written + "; the tokenizer loaded in " + load_s +
         " s, the text read and encoded in " + encode_s + " s";
}

}  // namespace optimus::text
