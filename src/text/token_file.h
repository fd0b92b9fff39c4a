// Token files: the ids of a tokenized corpus, written once by `optimus tokenize` and memory-mapped
// by train and eval. Layout, little-endian:
//   bytes  0..7   magic "OPTMTOKN"
//   bytes  8..11  version (1)
//   bytes 12..15  bytes per token: 2 (uint16, when every id fits) or 4 (uint32)
//   bytes 16..23  token count n
//   bytes 24..31  bytes of text the tokens encode (for bits per byte)
//   bytes 32..35  vocabulary size V of the tokenizer (every id is below it)
//   bytes 36..39  merges of the tokenizer (0: not recorded)
//   bytes 40..47  fingerprint of the tokenizer's files (text/tokenizer_folder.h; 0: not recorded)
//   bytes 48..63  zero
//   then n ids of that width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace optimus::text {

inline constexpr char kTokenFileMagic[8] = {'O', 'P', 'T', 'M', 'T', 'O', 'K', 'N'};
inline constexpr size_t kTokenFileHeaderBytes = 64;

struct TokenFileHeader {
  uint32_t bytes_per_token = 0;
  uint64_t tokens = 0;
  uint64_t text_bytes = 0;
  uint32_t vocab_size = 0;
  uint32_t merges = 0;                 // of the tokenizer that wrote it (0: not recorded)
  uint64_t tokenizer_fingerprint = 0;  // of that tokenizer's vocab.json and merges.txt (0: not recorded)
};

/// Whether `size` bytes at `data` start with the token-file magic.
bool is_token_file(const unsigned char* data, size_t size);

/// The header of a token file of `size` bytes mapped at `data`; a bad version, width, vocabulary
/// or a size that does not match the count is a ConfigError naming `path`.
TokenFileHeader read_token_file_header(const unsigned char* data, size_t size, const std::string& path);

/// Writes ids[from, from + count) as a token file to the open stream `f`: `header` (its
/// vocab_size, text_bytes and tokenizer fields; the width, uint16 when vocab_size <= 65536, and the
/// count are set here), then the ids. A failure is a ConfigError naming `path`.
void write_token_file(std::FILE* f, const std::string& path, const std::vector<uint32_t>& ids, size_t from,
                      size_t count, TokenFileHeader header);

/// The same as a file of its own at `path`, written under a temporary name renamed into place.
void write_token_file(const std::string& path, const std::vector<uint32_t>& ids, size_t from, size_t count,
                      uint64_t text_bytes, uint32_t vocab_size);

}  // namespace optimus::text
