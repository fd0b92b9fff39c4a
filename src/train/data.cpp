// The byte tokenizer and the batch samplers.
#include "train/data.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/philox.h"
#include "text/token_file.h"

namespace optimus::train {

using core::ConfigError;

namespace {

std::string mib(uint64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

namespace {

// The regular file at `path`, mapped read-only; unmapped when the last TokenSpan using it goes.
std::shared_ptr<const unsigned char> map_file(const std::string& path, size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw ConfigError("cannot read the data file '" + path + "' (" + std::strerror(errno) + "); check its permissions");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) {
    throw ConfigError("cannot map the data file '" + path + "' into memory (" + std::strerror(map_errno) +
                      "); check the file");
  }
  ::madvise(p, size, MADV_RANDOM);  // windows are read at random: no read-ahead of megabytes around each
  return std::shared_ptr<const unsigned char>(static_cast<const unsigned char*>(p), [size](const unsigned char* q) {
    ::munmap(const_cast<unsigned char*>(q), size);
  });
}

// A pipe's bytes, read into memory up to max_bytes.
std::shared_ptr<const unsigned char> read_pipe(const std::string& path, uint64_t max_bytes, size_t& size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read the data file '" + path + "' (" + std::strerror(errno) + "); check its permissions");
  }
  auto bytes = std::make_shared<std::vector<unsigned char>>();
  std::vector<char> chunk(1 << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    bytes->insert(bytes->end(), chunk.begin(), chunk.begin() + in.gcount());
    if (bytes->size() > max_bytes) {
      throw ConfigError("the data read from '" + path + "' passed the " + mib(max_bytes) +
                        " this machine's memory can hold for each process; use less data");
    }
  }
  size = bytes->size();
  return std::shared_ptr<const unsigned char>(bytes, bytes->data());  // shares ownership of the vector
}

}  // namespace

TokenFile TokenFile::load(const std::string& path, int processes, uint64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && status.type() != fs::file_type::not_found) {
    throw ConfigError("cannot read the data file '" + path + "' (" + ec.message() + "); check the path");
  }
  std::shared_ptr<const unsigned char> storage;
  size_t size = 0;
  switch (status.type()) {
    case fs::file_type::not_found:
      throw ConfigError("the data file '" + path + "' does not exist; check the path");
    case fs::file_type::directory:
      throw ConfigError("the data file '" + path + "' is a folder; give the path of a text file");
    case fs::file_type::regular:
      size = static_cast<size_t>(fs::file_size(path, ec));
      if (ec) throw ConfigError("cannot read the data file '" + path + "' (" + ec.message() + "); check the path");
      if (size > 0) storage = map_file(path, size);
      break;
    case fs::file_type::fifo:  // a pipe, e.g. --data <(zcat corpus.gz)
      if (processes > 1) {
        throw ConfigError("the data file '" + path + "' is a pipe, which only one of the " + std::to_string(processes) +
                          " processes can read (every process reads the data); write it to a file first");
      }
      storage = read_pipe(path, max_bytes, size);
      break;
    default:
      throw ConfigError("the data file '" + path + "' is not a regular file or a pipe (a device?); give a text file");
  }
  if (size == 0) throw ConfigError("the data file '" + path + "' is empty; give a text file with some text in it");
  TokenFile f;
  f.path = path;
  const size_t mapped = status.type() == fs::file_type::regular ? size : 0;
  if (!text::is_token_file(storage.get(), size)) {
    f.tokens = TokenSpan(std::move(storage), 0, size, 1, mapped);
    return f;
  }
  const text::TokenFileHeader h = text::read_token_file_header(storage.get(), size, path);
  if (h.tokens == 0) throw ConfigError("the token file '" + path + "' holds no tokens; give one with some text in it");
  f.tokens =
      TokenSpan(std::move(storage), text::kTokenFileHeaderBytes, h.tokens, static_cast<int>(h.bytes_per_token), mapped);
  f.vocab_size = static_cast<int>(h.vocab_size);
  f.bytes_per_token = static_cast<double>(h.text_bytes) / static_cast<double>(h.tokens);
  f.tokenized = true;
  f.header = h;
  return f;
}

TokenFile TokenFile::split_tail(double fraction) {
  const size_t n = tokens.size(), n_tail = static_cast<size_t>(static_cast<double>(n) * fraction);
  const int percent = static_cast<int>(fraction * 100.0 + 0.5);
  TokenFile tail = *this;
  tail.tokens = tokens.sub(n - n_tail, n_tail);
  tail.part = "last " + std::to_string(percent) + "%";
  tokens = tokens.sub(0, n - n_tail);
  if (n_tail > 0) part = "first " + std::to_string(100 - percent) + "%";
  return tail;
}

std::string TokenFile::describe() const {
  return (part.empty() ? "" : "the " + part + " of ") + "the data file '" + path + "'";
}

std::vector<int> encode(const std::string& text) {
  std::vector<int> t;
  t.reserve(text.size());
  for (char c : text) t.push_back(static_cast<unsigned char>(c));
  return t;
}

std::string decode(const std::vector<int>& tokens) {
  std::string s;
  s.reserve(tokens.size());
  for (int t : tokens) s.push_back(static_cast<char>(t & 0xff));
  return s;
}

void TokenSpan::release_pages() const {
  if (mapped_bytes_ > 0) ::madvise(const_cast<unsigned char*>(storage_.get()), mapped_bytes_, MADV_DONTNEED);
}

namespace {

// Row `row` of a batch: the T tokens from `start` as inputs, the T after them as targets.
void copy_window(int* inputs, int* targets, const TokenFile& data, size_t start, int T, int row) {
  for (int t = 0; t <= T; ++t) {
    const int id = data.tokens[start + static_cast<size_t>(t)];
    if (id < 0 || id >= data.vocab_size) {
      throw ConfigError(data.describe() + " holds the token " + std::to_string(id) + " at " +
                        std::to_string(start + static_cast<size_t>(t)) + ", outside its vocabulary of " +
                        std::to_string(data.vocab_size) + "; the file is damaged, tokenize the text again");
    }
    if (t < T) inputs[row * T + t] = id;
    if (t > 0) targets[row * T + t - 1] = id;
  }
  data.tokens.release_pages();  // the window is copied: keep no pages of the corpus mapped
}

}  // namespace

void sample_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, uint32_t seed, uint64_t step) {
  const uint64_t n_starts = data.tokens.size() - static_cast<uint64_t>(T);  // starts 0 .. n - T - 1
  for (int b = 0; b < B; ++b) {
    auto r = core::philox(core::data_key(seed), step * static_cast<uint64_t>(B) + static_cast<uint64_t>(b));
    const uint64_t draw = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
    copy_window(inputs, targets, data, static_cast<size_t>(draw % n_starts), T, b);
  }
}

void eval_batch(int* inputs, int* targets, const TokenFile& data, int B, int T, int k) {
  for (int b = 0; b < B; ++b) {
    copy_window(inputs, targets, data, (static_cast<size_t>(k) * B + b) * static_cast<size_t>(T), T, b);
  }
}

void require_vocabulary_holds(const TokenFile& data, int vocab_size, const std::string& model) {
  if (data.vocab_size <= vocab_size) return;
  throw ConfigError(data.describe() + " holds ids up to " + std::to_string(data.vocab_size - 1) + " (a vocabulary of " +
                    std::to_string(data.vocab_size) + "), past the vocabulary of " + std::to_string(vocab_size) +
                    " of " + model + "; tokenize the data for this model or use another checkpoint");
}

void require_tokens_for_training(const TokenFile& data, int T) {
  if (data.tokens.size() < static_cast<size_t>(T) + 1) {
    throw ConfigError(data.describe() + " has " + std::to_string(data.tokens.size()) +
                      (data.tokenized ? " tokens" : " bytes") + ", too short for one training window of " +
                      std::to_string(T + 1) + "; use a longer file or a smaller --seq");
  }
}

void require_tokens_for_eval(const TokenFile& data, int B, int T, int eval_batches) {
  const size_t need = static_cast<size_t>(eval_batches) * B * T + 1;
  if (data.tokens.size() < need) {
    const std::string batches = eval_batches == 1 ? "one batch" : std::to_string(eval_batches) + " batches";
    throw ConfigError(data.describe() + " has " + std::to_string(data.tokens.size()) +
                      (data.tokenized ? " tokens" : " bytes") + ", but evaluating " + batches + " of " +
                      std::to_string(B) + "x" + std::to_string(T) + " tokens needs " + std::to_string(need) +
                      "; use a longer file, a smaller --batch or --seq" +
                      (eval_batches == 1 ? "" : ", or fewer batches"));
  }
}

}  // namespace optimus::train
