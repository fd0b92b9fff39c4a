// `optimus tokenize`: a corpus of text files becomes token files for train and eval.
#pragma once

#include <string>
#include <vector>

namespace optimus::text {

struct TokenizeOptions {
  std::string tokenizer;                // folder with vocab.json and merges.txt
  std::vector<std::string> inputs;      // text files, in order; <|endoftext|> between them when the vocabulary has it
  std::string out;                      // folder for train.tok, val.tok and a copy of the tokenizer's files
  std::vector<std::string> val_inputs;  // text files for val.tok; empty: the last val_fraction of the inputs
  double val_fraction = 0.1;            // the last fraction of the tokens goes to val.tok
};

/// Encodes the inputs and writes out/train.tok, out/val.tok (from val_inputs, or the last
/// val_fraction of the inputs when that leaves it tokens) and the tokenizer's files; returns a
/// one-line report, ending with the seconds loading the tokenizer and encoding took. The files are
/// written under temporary names and renamed together at the end, so a failure (a full disk) leaves
/// out's earlier files as they were. Bad input is a ConfigError.
std::string tokenize_corpus(const TokenizeOptions& o);

}  // namespace optimus::text
