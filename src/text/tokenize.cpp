// `optimus tokenize`.
#include "text/tokenize.h"

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

}  // namespace

std::string tokenize_corpus(const TokenizeOptions& o) {
  namespace fs = std::filesystem;
  if (o.inputs.empty()) throw core::ConfigError("--input names no file; give one or more text files");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw core::ConfigError("--val-fraction must be in [0, 1), but is " + std::to_string(o.val_fraction));
  }
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  std::vector<uint32_t> ids;
  uint64_t text_bytes = 0;
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const std::string text = model::read_whole_file(o.inputs[k], "the input file", kMaxInputBytes);
    if (k > 0 && tokenizer.end_of_text()) ids.push_back(static_cast<uint32_t>(*tokenizer.end_of_text()));
    for (int id : tokenizer.encode(text)) ids.push_back(static_cast<uint32_t>(id));
    text_bytes += text.size();
  }
  if (ids.empty()) throw core::ConfigError("the input files hold no text; give files with some text in them");

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw core::ConfigError("cannot make the output folder " + o.out + " (" + ec.message() + ")");
  const size_t n = ids.size(), n_val = static_cast<size_t>(std::floor(static_cast<double>(n) * o.val_fraction));
  const auto vocab = static_cast<uint32_t>(tokenizer.vocab_size());
  // Each part is credited with the text bytes in proportion to its tokens (for bits per byte).
  const auto bytes_of = [&](size_t count) {
    return static_cast<uint64_t>(std::llround(static_cast<double>(text_bytes) * static_cast<double>(count) / n));
  };
  const std::string train_path = (fs::path(o.out) / "train.tok").string();
  const std::string val_path = (fs::path(o.out) / "val.tok").string();
  write_token_file(train_path, ids, 0, n - n_val, bytes_of(n - n_val), vocab);
  if (n_val > 0) {
    write_token_file(val_path, ids, n - n_val, n_val, bytes_of(n_val), vocab);
  } else {
    fs::remove(val_path, ec);  // an earlier split's val.tok would not match this corpus
  }
  for (const char* file : Tokenizer::kFiles) {
    const fs::path from = fs::path(o.tokenizer) / file, to = fs::path(o.out) / file;
    if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) continue;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw core::ConfigError("cannot copy " + from.string() + " to " + o.out + " (" + ec.message() + ")");
  }
  char report[512];
  std::snprintf(report, sizeof report,
                "tokenized %llu bytes of text from %zu file%s into %zu tokens (%.3f bytes per token, vocabulary %u): "
                "%s (%zu tokens)%s%s%s",
                static_cast<unsigned long long>(text_bytes), o.inputs.size(), o.inputs.size() == 1 ? "" : "s", n,
                static_cast<double>(text_bytes) / n, vocab, train_path.c_str(), n - n_val, n_val > 0 ? ", " : "",
                n_val > 0 ? val_path.c_str() : "",
                n_val > 0 ? (" (" + std::to_string(n_val) + " tokens)").c_str() : "");
  return report;
}

}  // namespace optimus::text
