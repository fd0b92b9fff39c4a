// A tokenizer folder: read and checked, recorded in token files, written into a folder.
#include "text/tokenizer_folder.h"

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <utility>

#include "core/errors.h"
#include "io/file_io.h"

namespace optimus::text {

namespace {

constexpr size_t kMaxTokenizerFileBytes = size_t{64} << 20;

// The merges of merges.txt, counted as Tokenizer::load reads them.
int count_merges(std::string_view text) {
  int merges = 0, line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    ++line_number;
    if (!line.empty() && !(line_number == 1 && line.rfind("#version", 0) == 0)) ++merges;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return merges;
}

// FNV-1a, 64 bits, over both files (their lengths first, so no two splits of one text agree).
uint64_t fingerprint(const std::string& vocab, const std::string& merges) {
  uint64_t h = 14695981039346656037ull;
  auto add = [&](std::string_view bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  };
  for (const std::string* s : {&vocab, &merges}) {
    const std::string length = std::to_string(s->size()) + ":";
    add(length);
    add(*s);
  }
  return h == 0 ? 1 : h;
}

}  // namespace

TokenizerFiles read_tokenizer_files(const std::string& dir, Tokenizer* loaded) {
  namespace fs = std::filesystem;
  Tokenizer tokenizer = Tokenizer::load(dir);  // a missing file is its ConfigError
  TokenizerFiles t;
  t.dir = dir;
  t.vocab_json = io::read_whole_file((fs::path(dir) / "vocab.json").string(), "the tokenizer's vocabulary",
                                     kMaxTokenizerFileBytes);
  t.merges_txt =
      io::read_whole_file((fs::path(dir) / "merges.txt").string(), "the tokenizer's merges", kMaxTokenizerFileBytes);
  t.vocab_size = tokenizer.vocab_size();
  t.merges = count_merges(t.merges_txt);
  t.fingerprint = fingerprint(t.vocab_json, t.merges_txt);
  if (loaded != nullptr) *loaded = std::move(tokenizer);
  return t;
}

std::string fingerprint_text(uint64_t fingerprint) {
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(fingerprint));
  return digits;
}

void stamp(TokenFileHeader& h, const TokenizerFiles& t) {
  h.vocab_size = static_cast<uint32_t>(t.vocab_size);
  h.merges = static_cast<uint32_t>(t.merges);
  h.tokenizer_fingerprint = t.fingerprint;
}

void require_written_with(const TokenFileHeader& h, const std::string& token_path, const TokenizerFiles& t) {
  auto refuse = [&](const std::string& mismatch) {
    throw core::ConfigError("the token file '" + token_path + "' " + mismatch +
                            "; the files do not belong together — tokenize the text again with that tokenizer "
                            "(optimus tokenize --tokenizer " +
                            t.dir + " --input FILE --out FOLDER)");
  };
  if (h.vocab_size != static_cast<uint32_t>(t.vocab_size)) {
    refuse("holds ids of a vocabulary of " + std::to_string(h.vocab_size) + " tokens, but the tokenizer in " + t.dir +
           " has " + std::to_string(t.vocab_size));
  }
  if (h.merges != 0 && h.merges != static_cast<uint32_t>(t.merges)) {
    refuse("was written with a tokenizer of " + std::to_string(h.merges) + " merges, but " + t.dir +
           "/merges.txt has " + std::to_string(t.merges));
  }
  if (h.tokenizer_fingerprint != 0 && h.tokenizer_fingerprint != t.fingerprint) {
    refuse("was written with another vocab.json or merges.txt (tokenizer " + fingerprint_text(h.tokenizer_fingerprint) +
           ") than those in " + t.dir + " (tokenizer " + fingerprint_text(t.fingerprint) + ")");
  }
}

void write_tokenizer_files(io::StagedFiles& out, const TokenizerFiles& t) {
  for (const auto& [name, bytes] : {std::pair{"vocab.json", &t.vocab_json}, std::pair{"merges.txt", &t.merges_txt}}) {
    const std::string path = out.path_of(name);
    out.write(name, [&](std::FILE* f) { io::write_bytes(f, bytes->data(), bytes->size(), path); });
  }
}

}  // namespace optimus::text
