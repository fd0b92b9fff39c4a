// Whose ids a model reads and a file holds (chapter 1's bytes, or a BPE tokenizer's), told by
// fingerprints: a token file's header records its tokenizer's, a checkpoint's model.safetensors its
// data's (model/checkpoint.h, kTokenizerKey). train, eval and sample compare them before any work,
// so the ids of one tokenizer are never read as another's — same vocabulary size or not.
#pragma once

#include <string>

#include "comm/world.h"
#include "train/data.h"

namespace optimus::train {

/// The tokenizer whose ids `data` holds: "bytes" for text, a token file's recorded fingerprint
/// (text::fingerprint_text), or "" when its header records none.
std::string tokenizer_of(const TokenFile& data);

/// The tokenizer a checkpoint's model reads.
struct CheckpointTokenizer {
  std::string dir;
  std::string fingerprint;  // "bytes", 16 hexadecimal digits, "none" (untrained: any), or "" (not known)
  bool has_files = false;   // the folder holds a tokenizer (vocab.json and merges.txt)
};

/// The tokenizer of the checkpoint in `dir`: the one its model.safetensors records, which its
/// tokenizer files (when it holds them) must be; without a record, its files' fingerprint, or ""
/// when it has none. A record that is no fingerprint, or one its files contradict, is a ConfigError.
CheckpointTokenizer checkpoint_tokenizer(const std::string& dir);

/// Throws ConfigError, naming both fingerprints and how to tokenize again, unless `val` holds ids of
/// the tokenizer whose ids `data` holds (where both files record theirs). `tokenizer_dir`: the folder
/// of data's tokenizer, for the message ("" when not known).
void require_same_tokenizer(const TokenFile& data, const TokenFile& val, const std::string& tokenizer_dir);

/// Throws ConfigError, naming both fingerprints and how to tokenize again, unless `data` (given as
/// `flag`: "--data", "--val") holds ids of the tokenizer the checkpoint `ckpt` was trained on, where
/// both are known. `checkpoint` names the checkpoint: "--init-from DIR", "the checkpoint DIR".
void require_checkpoint_reads(const CheckpointTokenizer& ckpt, const std::string& checkpoint, const TokenFile& data,
                              const std::string& flag);

/// Rank 0 prints a one-line note to stderr when the checkpoint's tokenizer is not known (then only
/// the vocabulary sizes are compared).
void note_unknown_tokenizer(const comm::World& world, const CheckpointTokenizer& ckpt, const std::string& checkpoint);

}  // namespace optimus::train
