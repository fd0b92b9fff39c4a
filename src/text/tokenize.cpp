// `optimus tokenize`.
#include "text/tokenize.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/errors.h"
#include "model/file_io.h"
#include "text/bpe.h"
#include "text/token_file.h"

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
    const std::string text = model::read_whole_file(files[k], "the input file", kMaxInputBytes);
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

// Writes ids[from, from + count) to path, credited with text_bytes in proportion to its share of
// all `total` ids (for bits per byte); returns "PATH (N tokens)".
std::string write_part(const std::string& path, const std::vector<uint32_t>& ids, size_t from, size_t count,
                       uint64_t text_bytes, uint32_t vocab) {
  const double share = static_cast<double>(count) / static_cast<double>(ids.size());
  write_token_file(path, ids, from, count, static_cast<uint64_t>(std::llround(share * text_bytes)), vocab);
  return path + " (" + std::to_string(count) + " tokens)";
}

}  // namespace

std::string tokenize_corpus(const TokenizeOptions& o) {
  namespace fs = std::filesystem;
  if (o.inputs.empty()) throw core::ConfigError("--input names no file; give one or more text files");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw core::ConfigError("--val-fraction must be in [0, 1), but is " + std::to_string(o.val_fraction));
  }
  auto start = std::chrono::steady_clock::now();
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  const std::string load_s = seconds_since(start);
  const auto vocab = static_cast<uint32_t>(tokenizer.vocab_size());
  uint64_t text_bytes = 0, val_bytes = 0;
  start = std::chrono::steady_clock::now();  // reading and encoding the files
  const std::vector<uint32_t> ids = encode_files(tokenizer, o.inputs, text_bytes);
  const std::vector<uint32_t> val_ids =
      o.val_inputs.empty() ? std::vector<uint32_t>() : encode_files(tokenizer, o.val_inputs, val_bytes);
  const std::string encode_s = seconds_since(start);

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw core::ConfigError("cannot make the output folder " + o.out + " (" + ec.message() + ")");
  const std::string train_path = (fs::path(o.out) / "train.tok").string();
  const std::string val_path = (fs::path(o.out) / "val.tok").string();
  const size_t n = ids.size();
  const size_t n_val =
      o.val_inputs.empty() ? static_cast<size_t>(std::floor(static_cast<double>(n) * o.val_fraction)) : 0;
  char per_token[32];
  std::snprintf(per_token, sizeof per_token, "%.3f", static_cast<double>(text_bytes) / static_cast<double>(n));
  std::string report = "tokenized " + std::to_string(text_bytes + val_bytes) + " bytes of text into " +
                       std::to_string(n + val_ids.size()) + " tokens (vocabulary " + std::to_string(vocab) + ", " +
                       per_token + " bytes per token): " + write_part(train_path, ids, 0, n - n_val, text_bytes, vocab);
  if (!val_ids.empty()) {
    report += ", " + write_part(val_path, val_ids, 0, val_ids.size(), val_bytes, vocab);
  } else if (n_val > 0) {
    report += ", " + write_part(val_path, ids, n - n_val, n_val, text_bytes, vocab);
  } else {
    fs::remove(val_path, ec);  // an earlier run's val.tok would not belong to this corpus
  }
  for (const char* file : Tokenizer::kFiles) {
    const fs::path from = fs::path(o.tokenizer) / file, to = fs::path(o.out) / file;
    if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) continue;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw core::ConfigError("cannot copy " + from.string() + " to " + o.out + " (" + ec.message() + ")");
  }
  return report + "; the tokenizer loaded in " + load_s + " s, the text read and encoded in " + encode_s + " s";
}

}  // namespace optimus::text
