// Whose ids: the fingerprints of files and checkpoints, compared.
#include "train/tokenizer_check.h"

#include <cstdio>
#include <filesystem>

#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "text/tokenizer_folder.h"
#include "train/sample.h"

namespace optimus::train {

using core::ConfigError;

namespace {

// Whether a recorded fingerprint is one a checkpoint may hold.
bool is_fingerprint(const std::string& s) {
  if (s == model::kByteTokenizer || s == model::kNoTokenizer) return true;
  if (s.size() != 16) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Fingerprints that can be compared: both known, neither an untrained model's.
bool comparable(const std::string& a, const std::string& b) {
  return !a.empty() && !b.empty() && a != model::kNoTokenizer && b != model::kNoTokenizer;
}

// "tokenizer bytes (text)", "tokenizer 5e1d0c2a9b3f4e71".
std::string named(const std::string& fingerprint) {
  return "tokenizer " + fingerprint + (fingerprint == model::kByteTokenizer ? " (text)" : "");
}

// "--data x.txt is text (tokenizer bytes)", "--val b/val.tok holds ids of tokenizer 5e1d0c2a9b3f4e71".
std::string holding(const TokenFile& data, const std::string& flag) {
  return flag + " " + data.path +
         (data.tokenized ? " holds ids of tokenizer " + tokenizer_of(data) : " is text (tokenizer bytes)");
}

// How to give ids of `wanted` instead of those in `data`: the text itself for the byte tokenizer,
// else `optimus tokenize` with that tokenizer (its folder `dir` when known, the text file when `data` is one).
std::string retokenize(const std::string& wanted, const std::string& dir, const TokenFile& data) {
  if (wanted == model::kByteTokenizer) return "give the text itself (its bytes are the byte tokenizer's ids)";
  const std::string input = data.tokenized ? "FILE" : data.path;
  return "tokenize the text with " + (dir.empty() ? "the tokenizer of fingerprint " + wanted : "that tokenizer") +
         " (optimus tokenize --tokenizer " + (dir.empty() ? "DIR" : dir) + " --input " + input + " --out FOLDER)";
}

}  // namespace

std::string tokenizer_of(const TokenFile& data) {
  if (!data.tokenized) return model::kByteTokenizer;
  const uint64_t f = data.header.tokenizer_fingerprint;
  return f == 0 ? "" : text::fingerprint_text(f);
}

CheckpointTokenizer checkpoint_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  model::require_checkpoint_directory(dir);
  CheckpointTokenizer t{dir, "", has_tokenizer(dir)};
  const model::MappedSafeTensors weights((fs::path(dir) / model::kWeightsFile).string());
  const std::string files = t.has_files ? text::fingerprint_text(text::read_tokenizer_files(dir).fingerprint) : "";
  const auto it = weights.metadata().find(model::kTokenizerKey);
  if (it == weights.metadata().end()) {
    t.fingerprint = files;  // an older checkpoint, or another program's: its tokenizer files say, if any
    return t;
  }
  if (!is_fingerprint(it->second)) {
    throw ConfigError("checkpoint file " + weights.path() + " records " + model::kTokenizerKey + " '" +
                      it->second.substr(0, 40) + "', which is not bytes, none or 16 hexadecimal digits; " +
                      "use another checkpoint");
  }
  t.fingerprint = it->second;
  if (t.has_files && t.fingerprint != model::kNoTokenizer && t.fingerprint != files) {
    throw ConfigError("the checkpoint " + dir + " was trained on " + named(t.fingerprint) +
                      ", but its vocab.json and merges.txt are " + named(files) + "; " +
                      (t.fingerprint == model::kByteTokenizer
                           ? "remove them"
                           : "put back the files of the tokenizer it was trained on") +
                      ", or use another checkpoint");
  }
  return t;
}

void require_same_tokenizer(const TokenFile& data, const TokenFile& val, const std::string& tokenizer_dir) {
  const std::string want = tokenizer_of(data), got = tokenizer_of(val);
  if (!comparable(want, got) || want == got) return;
  throw ConfigError(holding(val, "--val") + ", but " + holding(data, "--data") +
                    "; give validation data of --data's tokenizer: " + retokenize(want, tokenizer_dir, val));
}

void require_checkpoint_reads(const CheckpointTokenizer& ckpt, const std::string& checkpoint, const TokenFile& data,
                              const std::string& flag) {
  const std::string got = tokenizer_of(data);
  if (!comparable(ckpt.fingerprint, got) || ckpt.fingerprint == got) return;
  throw ConfigError(holding(data, flag) + ", but " + checkpoint + " was trained on " + named(ckpt.fingerprint) + "; " +
                    retokenize(ckpt.fingerprint, ckpt.has_files ? ckpt.dir : "", data) +
                    ", or use a checkpoint trained on " + named(got));
}

void note_unknown_tokenizer(const comm::World& world, const CheckpointTokenizer& ckpt, const std::string& checkpoint) {
  if (!ckpt.fingerprint.empty() || world.rank() != 0) return;
  std::fprintf(stderr,
               "note: %s records no tokenizer fingerprint and holds no tokenizer (an older checkpoint, or one saved "
               "by another program), so only the vocabulary size of the data is checked against it\n",
               checkpoint.c_str());
  std::fflush(stderr);
}

}  // namespace optimus::train
