// Data (chapter 1): a text file's bytes are its tokens (vocabulary 256). Training batches are
// windows drawn from (seed, step) with Philox, so every rank agrees on the global batch without
// talking, and a resumed run replays the same data. Evaluation batches are consecutive windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/token_file.h"

namespace optimus::train {

/// The byte tokenizer: token = byte value, 0..255.
inline constexpr int kByteVocab = 256;

/// A run of tokens that a TokenFile shares: a memory-mapped file, or the bytes read from a pipe.
/// Each token is 1 byte (text), or 2 or 4 little-endian bytes (a token file). Copies share the
/// storage, which lives while any copy does.
class TokenSpan {
 public:
  TokenSpan() = default;
  /// `mapped_bytes`: the length of the file mapping that starts at storage (0: not a mapping).
  TokenSpan(std::shared_ptr<const unsigned char> storage, size_t offset, size_t count, int width,
            size_t mapped_bytes = 0)
      : storage_(std::move(storage)), offset_(offset), count_(count), width_(width), mapped_bytes_(mapped_bytes) {}
  size_t size() const { return count_; }
  int operator[](size_t i) const {
    const unsigned char* p = storage_.get() + offset_ + i * static_cast<size_t>(width_);
    if (width_ == 1) return p[0];
    if (width_ == 2) return p[0] | p[1] << 8;
    return static_cast<int>(p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24);
  }
  /// Tokens [from, from + count) of this span, sharing its storage.
  TokenSpan sub(size_t from, size_t count) const {
    return TokenSpan(storage_, offset_ + from * static_cast<size_t>(width_), count, width_, mapped_bytes_);
  }
  /// Unmaps from this process the pages of the file that reads have mapped (they stay in the
  /// kernel's page cache, shared by the ranks of a node, and map again when read). The kernel maps
  /// a whole page-cache folio, up to 2 MiB, on a read fault, so without this a rank's resident
  /// memory would grow by megabytes for every window of a few hundred bytes it reads.
  void release_pages() const;

 private:
  std::shared_ptr<const unsigned char> storage_;
  size_t offset_ = 0, count_ = 0;  // offset in bytes, count in tokens
  int width_ = 1;
  size_t mapped_bytes_ = 0;
};

struct TokenFile {
  std::string path;
  TokenSpan tokens;
  std::string part;              // which part of the file `tokens` holds: "" (all of it), or "first 90%" after a split
  int vocab_size = kByteVocab;   // every token is below it: 256 for text, the tokenizer's for a token file
  double bytes_per_token = 1.0;  // of the text the tokens encode (bits per byte = loss / ln 2 / this)
  bool tokenized = false;        // a token file (its sizes are counted in tokens, a text file's in bytes)
  text::TokenFileHeader header;  // a token file's header (what wrote it; zero for text)

  /// A text file's bytes, or a token file's ids (`optimus tokenize`, text/token_file.h; told apart
  /// by its magic). A regular file is memory-mapped read-only, so the memory a process uses does
  /// not grow with the corpus: only the pages its windows touch are read, and the kernel may drop
  /// them again. A pipe (one process only: every rank reads the data, and a pipe can be read once)
  /// is read into memory, up to `max_bytes`. A missing, unreadable or empty file, a folder, a device
  /// or a damaged token file is a ConfigError.
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
/// by one. inputs and targets are (B, T). The file must hold at least T + 1 tokens; a token at or
/// past the file's vocabulary (a damaged token file) is a ConfigError.
void sample_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, uint32_t seed, uint64_t step);

/// Both samplers unmap the corpus's pages once a window is copied (TokenSpan::release_pages).
///
/// Evaluation batch k: row b takes tokens [(kB+b)T, (kB+b+1)T) and the targets one further.
/// The file must hold at least ((k+1)B)T + 1 tokens.
void eval_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, int k);

/// The rule that keeps every id a model reads inside its vocabulary (sample_batch and eval_batch
/// refuse an id at or past the file's own): throws ConfigError unless the vocabulary `data`'s ids
/// come from (256 for text, a token file's tokenizer's) is at most `vocab_size`, the vocabulary of
/// `model` (for the message: "--init-from DIR", "the checkpoint DIR"). An id past a model's
/// vocabulary would otherwise look up no row (a zero embedding) instead of failing.
void require_vocabulary_holds(const TokenFile& data, int vocab_size, const std::string& model);

/// Checks (before any work) that `data` is long enough for sampling windows of T + 1, or for
/// `eval_batches` evaluation batches; throws ConfigError naming the file, its length and the need.
void require_tokens_for_training(const TokenFile& data, int T);
void require_tokens_for_eval(const TokenFile& data, int B, int T, int eval_batches);

}  // namespace optimus::train
