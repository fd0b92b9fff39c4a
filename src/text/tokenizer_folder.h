// A tokenizer folder as optimus reads and writes it (tokenize, train's checkpoints): vocab.json and
// merges.txt, checked against each other when read (Tokenizer::load), and against the token files
// written with them, whose headers record the tokenizer's size, its merges and a fingerprint of the
// two files — so a folder whose files do not belong together is refused, not trained on.
#pragma once

#include <cstdint>
#include <string>

#include "io/staged_files.h"
#include "text/bpe.h"
#include "text/token_file.h"

namespace optimus::text {

struct TokenizerFiles {
  std::string dir;                     // the folder they were read from
  std::string vocab_json, merges_txt;  // the files' bytes, as read
  int vocab_size = 0;                  // entries of vocab.json
  int merges = 0;                      // merges of merges.txt (its lines but a first "#version" and empty ones)
  uint64_t fingerprint = 0;            // FNV-1a of both files' bytes; never 0
};

/// Reads dir's vocab.json and merges.txt and checks them against each other: Tokenizer::load's
/// checks (ids 0 to V-1 each once, the 256 byte characters, each merge's two tokens and their join
/// in the vocabulary). A missing or bad file is a ConfigError naming it. When `loaded` is given,
/// the tokenizer is moved into it.
TokenizerFiles read_tokenizer_files(const std::string& dir, Tokenizer* loaded = nullptr);

/// A fingerprint as checkpoints record it and messages show it: 16 lowercase hexadecimal digits.
std::string fingerprint_text(uint64_t fingerprint);

/// Records `t` in a header of a token file written with it.
void stamp(TokenFileHeader& h, const TokenizerFiles& t);

/// Throws ConfigError unless the token file at `token_path` (header `h`) was written with `t`: the
/// same vocabulary size and, where the header records them, the same merges and fingerprint.
void require_written_with(const TokenFileHeader& h, const std::string& token_path, const TokenizerFiles& t);

/// Writes t's two files into `out` (committed by the caller with the rest of its set).
void write_tokenizer_files(io::StagedFiles& out, const TokenizerFiles& t);

}  // namespace optimus::text
