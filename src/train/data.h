// Data (chapter 1): a text file's bytes are its tokens (vocabulary 256). Training batches are
// windows drawn from (seed, step) with Philox, so every rank agrees on the global batch without
// talking, and a resumed run replays the same data. Evaluation batches are consecutive windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace optimus::train {

/// The byte tokenizer: token = byte value, 0..255.
inline constexpr int kByteVocab = 256;

/// A run of byte tokens that a TokenFile shares: a memory-mapped file, or the bytes read from a
/// pipe. Copies share the storage, which lives while any copy does.
class TokenSpan {
 public:
  TokenSpan() = default;
  TokenSpan(std::shared_ptr<const unsigned char> storage, size_t offset, size_t count)
      : storage_(std::move(storage)), offset_(offset), count_(count) {}
  size_t size() const { return count_; }
  int operator[](size_t i) const { return storage_.get()[offset_ + i]; }
  /// Tokens [from, from + count) of this span, sharing its storage.
  TokenSpan sub(size_t from, size_t count) const { return TokenSpan(storage_, offset_ + from, count); }

 private:
  std::shared_ptr<const unsigned char> storage_;
  size_t offset_ = 0, count_ = 0;
};

struct TokenFile {
  std::string path;
  TokenSpan tokens;
  std::string part;  // which part of the file `tokens` holds: "" (all of it), or "first 90%" after a split

  /// A file's bytes as tokens. A regular file is memory-mapped read-only, so the memory a process
  /// uses does not grow with the corpus: only the pages its windows touch are read, and the kernel
  /// may drop them again. A pipe (one process only: every rank reads the data, and a pipe can be
  /// read once) is read into memory, up to `max_bytes`. A missing, unreadable or empty file, a
  /// folder or a device is a ConfigError.
  static TokenFile load(const std::string& path, int processes, uint64_t max_bytes);
  /// The last `fraction` of the tokens as a second file (a validation split), the rest kept; both
  /// share the mapping.
  TokenFile split_tail(double fraction);
  /// The file and the part, for messages: "the data file 'x.txt'", "the first 90% of the data file 'x.txt'".
  std::string describe() const;
};

/// Text ↔ tokens.
std::vector<int> encode(const std::string& text);
std::string decode(const std::vector<int>& tokens);

/// Training batch `step`: row b is the window starting at a position drawn from Philox
/// (data_key(seed), counter step*B + b), uniform over [0, n - T - 1]; targets are inputs shifted
/// by one. inputs and targets are (B, T). The file must hold at least T + 1 tokens.
void sample_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, uint32_t seed, uint64_t step);

/// Evaluation batch k: row b takes tokens [(kB+b)T, (kB+b+1)T) and the targets one further.
/// The file must hold at least ((k+1)B)T + 1 tokens.
void eval_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, int k);

/// Checks (before any work) that `data` is long enough for sampling windows of T + 1, or for
/// `eval_batches` evaluation batches; throws ConfigError naming the file, its length and the need.
void require_tokens_for_training(const TokenFile& data, int T);
void require_tokens_for_eval(const TokenFile& data, int B, int T, int eval_batches);

}  // namespace optimus::train
