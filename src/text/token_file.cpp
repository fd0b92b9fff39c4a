// Token files: header, reading and writing.
#include "text/token_file.h"

#include <cstdio>
#include <cstring>

#include "core/errors.h"
#include "io/file_io.h"

namespace optimus::text {

using core::ConfigError;

namespace {

template <typename T>
T field(const unsigned char* data, size_t offset) {
  T v;
  std::memcpy(&v, data + offset, sizeof v);  // the file is little-endian, as every machine we run on
  return v;
}

template <typename T>
void put(std::vector<unsigned char>& header, size_t offset, T v) {
  std::memcpy(header.data() + offset, &v, sizeof v);
}

}  // namespace

bool is_token_file(const unsigned char* data, size_t size) {
  return size >= sizeof kTokenFileMagic && std::memcmp(data, kTokenFileMagic, sizeof kTokenFileMagic) == 0;
}

TokenFileHeader read_token_file_header(const unsigned char* data, size_t size, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return ConfigError("the token file '" + path + "' " + what + "; write it again with optimus tokenize");
  };
  if (size < kTokenFileHeaderBytes) throw bad("is shorter than its 64-byte header");
  if (field<uint32_t>(data, 8) != 1) throw bad("has version " + std::to_string(field<uint32_t>(data, 8)) + ", not 1");
  TokenFileHeader h;
  h.bytes_per_token = field<uint32_t>(data, 12);
  h.tokens = field<uint64_t>(data, 16);
  h.text_bytes = field<uint64_t>(data, 24);
  h.vocab_size = field<uint32_t>(data, 32);
  h.merges = field<uint32_t>(data, 36);
  h.tokenizer_fingerprint = field<uint64_t>(data, 40);
  if (h.bytes_per_token != 2 && h.bytes_per_token != 4) {
    throw bad("has " + std::to_string(h.bytes_per_token) + " bytes per token, not 2 or 4");
  }
  if (h.vocab_size == 0 || h.vocab_size > (h.bytes_per_token == 2 ? 65536u : 0x7fffffffu)) {
    throw bad("has a vocabulary of " + std::to_string(h.vocab_size) + ", which its ids cannot address");
  }
  if ((size - kTokenFileHeaderBytes) / h.bytes_per_token != h.tokens ||
      (size - kTokenFileHeaderBytes) % h.bytes_per_token != 0) {
    throw bad("says it holds " + std::to_string(h.tokens) + " tokens, but has " +
              std::to_string(size - kTokenFileHeaderBytes) + " bytes of them (truncated?)");
  }
  return h;
}

void write_token_file(std::FILE* f, const std::string& path, const std::vector<uint32_t>& ids, size_t from,
                      size_t count, TokenFileHeader h) {
  h.bytes_per_token = h.vocab_size <= 65536 ? 2 : 4;
  h.tokens = count;
  std::vector<unsigned char> header(kTokenFileHeaderBytes, 0);
  std::memcpy(header.data(), kTokenFileMagic, sizeof kTokenFileMagic);
  put<uint32_t>(header, 8, 1);
  put<uint32_t>(header, 12, h.bytes_per_token);
  put<uint64_t>(header, 16, h.tokens);
  put<uint64_t>(header, 24, h.text_bytes);
  put<uint32_t>(header, 32, h.vocab_size);
  put<uint32_t>(header, 36, h.merges);
  put<uint64_t>(header, 40, h.tokenizer_fingerprint);
  io::write_bytes(f, header.data(), header.size(), path);
  std::vector<unsigned char> block;
  for (size_t i = from; i < from + count; ++i) {
    const uint32_t id = ids[i];
    for (uint32_t k = 0; k < h.bytes_per_token; ++k) block.push_back(static_cast<unsigned char>(id >> (8 * k)));
    if (block.size() >= (1 << 20) || i + 1 == from + count) {
      io::write_bytes(f, block.data(), block.size(), path);
      block.clear();
    }
  }
}

void write_token_file(const std::string& path, const std::vector<uint32_t>& ids, size_t from, size_t count,
                      uint64_t text_bytes, uint32_t vocab_size) {
  TokenFileHeader h;
  h.text_bytes = text_bytes;
  h.vocab_size = vocab_size;
  io::write_atomically(path, [&](std::FILE* f) { write_token_file(f, path, ids, from, count, h); });
}

}  // namespace optimus::text
