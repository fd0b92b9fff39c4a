// Model checkpoints in the Hugging Face GPT-2 layout: a directory holding config.json
// (GPTConfig under GPT2Config's keys) and model.safetensors (the canonical tensors under their HF
// names), which transformers.GPT2LMHeadModel.from_pretrained loads as it is. Every stage gathers its
// shards into canonical tensors to save (model/shard.h) and scatters the loaded ones back, a tensor
// at a time: the file is written as the tensors are gathered and read from its mapping.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace optimus::model {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";

/// The tokenizer whose ids a checkpoint's model reads, an entry of model.safetensors' metadata
/// (beside the weights whose rows it names; transformers ignores it): "bytes" (the byte tokenizer:
/// a text file's bytes), the 16 hexadecimal digits of a BPE tokenizer's fingerprint (the one its
/// token files record, text/tokenizer_folder.h), or "none" (an untrained model: any tokenizer whose
/// ids fit its vocabulary). A checkpoint without the entry (an older one, or one saved by another
/// program) is told by its tokenizer files when it has them, and is otherwise not known.
inline constexpr const char* kTokenizerKey = "tokenizer_fingerprint";
inline constexpr const char* kByteTokenizer = "bytes";
inline constexpr const char* kNoTokenizer = "none";

/// The model's tensors in canonical order, canonical_parameters(config): params[k] holds parameter
/// k's elements, row-major in its canonical shape.
using CanonicalParams = std::vector<std::vector<float>>;

struct LoadedModel {
  GPTConfig config;
  CanonicalParams params;
  Metadata metadata;  // model.safetensors' "__metadata__"
};

/// config.json's text: GPT-2's keys (model_type gpt2, gelu_new, tied embeddings, float32), with
/// resid/embd/attn_pdrop = dropout and bos/eos = vocab_size - 1 so both are valid token ids.
std::string config_to_json(const GPTConfig& config);

/// The configuration in config.json's text; `path` names the file in messages. Needs model_type
/// "gpt2" and integer n_embd, n_layer, n_head, n_positions, vocab_size; layer_norm_epsilon defaults
/// to 1e-5 and dropout is attn_pdrop or 0. A missing or mistyped key, a model we cannot run (another
/// model_type or activation, an untied head, n_inner ≠ 4·n_embd, scale_attn_weights false,
/// scale_attn_by_inverse_layer_idx true) or a config that fails validate() is a core::ConfigError
/// naming the file.
GPTConfig config_from_json(const std::string& text, const std::string& path);
GPTConfig read_config(const std::string& path);

/// Creates `dir` if needed and writes model.safetensors, then config.json, each atomically. `params`
/// must be the canonical tensors of `config` (std::invalid_argument otherwise). The file's metadata
/// is `metadata` plus "format": "pt", which transformers requires.
void save_model(const std::string& dir, const GPTConfig& config, const CanonicalParams& params,
                const Metadata& metadata = {});

/// Parameter k's canonical elements (row-major in its canonical shape), asked for in canonical
/// order; the pointer stays valid until the next call.
using CanonicalSource = std::function<const float*(size_t k)>;
/// The same, one tensor at a time (model/safetensors.h): `param` may gather tensor k just then, so
/// the model is written without a canonical copy of it whole.
void save_model(const std::string& dir, const GPTConfig& config, const CanonicalSource& param,
                const Metadata& metadata = {});

/// Throws core::ConfigError unless `dir` is a directory (the first check of every checkpoint read).
void require_checkpoint_directory(const std::string& dir);

/// A checkpoint's model as it lies in its mapped model.safetensors: the config, and for each canonical
/// parameter its tensor in the mapping, checked to be there, F32 and of its canonical shape. Its
/// values are read only when a caller takes them (and checks them finite, require_finite).
struct MappedModel {
  GPTConfig config;
  MappedSafeTensors file;
  std::vector<const MappedTensor*> params;  // canonical order, into file
};

/// Maps a checkpoint directory. Every canonical tensor must be present, F32, with its canonical
/// shape. Also accepted: names without the "transformer." prefix (a GPT2Model save), an
/// lm_head.weight equal to wte (tied; ignored), and old transformers' attn.bias / attn.masked_bias
/// mask buffers (ignored). Anything else, a missing tensor, a wrong shape or an untied LM head is a
/// core::ConfigError naming the tensor and the file.
MappedModel map_model(const std::string& dir);

/// map_model, then a copy of every tensor, each checked finite (a core::ConfigError naming the
/// tensor, the file and the element otherwise).
LoadedModel load_model(const std::string& dir);

/// Throws core::ConfigError naming the first key on which a checkpoint's configuration (`found`, in
/// `dir`) differs from the one a run expects, with both values. Dropout is a training setting, not
/// part of the model, so it may differ.
void check_same_model(const GPTConfig& expected, const GPTConfig& found, const std::string& dir);

/// Throws core::ConfigError naming the tensor and the file unless every value is finite: a NaN or
/// infinite weight would silently give a NaN loss.
void require_finite(const std::vector<float>& values, const std::string& tensor, const std::string& file);
void require_finite(const float* values, int64_t n, const std::string& tensor, const std::string& file);

/// load_model, then check_same_model against `expected`: the parameters for a run whose model is fixed.
CanonicalParams load_model_matching(const std::string& dir, const GPTConfig& expected);

}  // namespace optimus::model
