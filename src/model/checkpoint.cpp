// config.json <-> GPTConfig, and the canonical tensors <-> model.safetensors, with the checks that
// turn a checkpoint that does not fit into one sentence.
#include "model/checkpoint.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/json_text.h"
#include "model/params.h"

namespace optimus::model {

using core::ConfigError;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// The double whose shortest decimal form is the float's, so config.json says 0.1, not
// 0.10000000149011612; reading it back and rounding to float gives the same float.
double as_written(float x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  double d = 0.0;
  std::from_chars(buf, r.ptr, d);
  return d;
}

// A value for a message: integers as they are, floats in their shortest form (1e-05, not 0.000010).
std::string text(int v) {
  return std::to_string(v);
}
std::string text(float v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// A name taken from a file, quoted, escaped and cut (a tensor's name is under 80 characters).
std::string quote_name(const std::string& s) {
  return io::json_excerpt(s, 80);
}

std::string show(const json& v) {
  return io::json_excerpt(v);
}

int required_int(const json& cfg, const char* key, const std::string& where) {
  if (!cfg.contains(key)) {
    throw ConfigError(where + " has no \"" + key + "\"; add it or re-save the checkpoint");
  }
  const json& v = cfg[key];
  if (!v.is_number_integer()) {
    throw ConfigError(where + " has \"" + key + "\": " + show(v) + ", which is not an integer; write it as a number");
  }
  if (v.is_number_unsigned() ? v.get<uint64_t>() > std::numeric_limits<int>::max()
                             : v.get<int64_t>() < std::numeric_limits<int>::min()) {
    throw ConfigError(where + " has \"" + key + "\": " + show(v) + ", which is out of range (at most " +
                      std::to_string(std::numeric_limits<int>::max()) + "); fix it");
  }
  return v.get<int>();
}

float optional_float(const json& cfg, const char* key, float fallback, const std::string& where) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const json& v = cfg[key];
  if (!v.is_number()) {
    throw ConfigError(where + " has \"" + key + "\": " + show(v) + ", which is not a number; write it as a number");
  }
  return static_cast<float>(v.get<double>());
}

// transformers saved the causal mask as buffers named h.{l}.attn.bias and h.{l}.attn.masked_bias
// (before 4.31); they are not parameters, and we rebuild the mask ourselves.
bool is_attention_mask_buffer(const std::string& name) {
  static const std::regex pattern(R"(transformer\.h\.\d+\.attn\.(masked_)?bias)");
  return std::regex_match(name, pattern);
}

}  // namespace

std::string config_to_json(const GPTConfig& c) {
  const double dropout = as_written(c.dropout);
  json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", c.vocab_size},
      {"n_positions", c.n_positions},
      {"n_ctx", c.n_positions},
      {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"activation_function", "gelu_new"},  // GELU, tanh approximation
      {"layer_norm_epsilon", as_written(c.layer_norm_epsilon)},
      {"resid_pdrop", dropout},
      {"embd_pdrop", dropout},
      {"attn_pdrop", dropout},
      {"initializer_range", 0.02},
      {"tie_word_embeddings", true},
      {"bos_token_id", c.vocab_size - 1},
      {"eos_token_id", c.vocab_size - 1},
      {"torch_dtype", "float32"},
  };
  return j.dump(2) + "\n";
}

GPTConfig config_from_json(const std::string& text, const std::string& path) {
  const std::string where = "checkpoint config " + path;
  const json cfg = io::parse_json(text, where, "fix it or re-save the checkpoint");
  if (!cfg.is_object())
    throw ConfigError(where + " is a JSON " + cfg.type_name() + ", not an object; re-save the checkpoint");
  if (!cfg.contains("model_type")) {
    throw ConfigError(where + " has no \"model_type\"; a GPT-2 checkpoint's config.json says \"model_type\": \"gpt2\"");
  }
  if (cfg["model_type"] != "gpt2") {
    throw ConfigError(where + " has \"model_type\": " + show(cfg["model_type"]) +
                      ", but this project runs only GPT-2 models (\"gpt2\"); use a GPT-2 checkpoint");
  }
  // gelu_pytorch_tanh is the same function as gelu_new (GELU with the tanh approximation).
  if (cfg.contains("activation_function") && cfg["activation_function"] != "gelu_new" &&
      cfg["activation_function"] != "gelu_pytorch_tanh") {
    throw ConfigError(where + " has \"activation_function\": " + show(cfg["activation_function"]) +
                      ", but this project's GPT-2 uses gelu_new (GELU, tanh approximation); use a checkpoint with it");
  }
  if (cfg.contains("tie_word_embeddings") && cfg["tie_word_embeddings"] == false) {
    throw ConfigError(where +
                      " has \"tie_word_embeddings\": false, but an untied LM head is not supported; use a "
                      "checkpoint whose LM head is tied to wte");
  }
  // GPT2Config's two switches that change the attention scores (transformers writes both, with
  // their defaults true and false): this project always divides by √HS and by nothing else.
  if (cfg.contains("scale_attn_weights") && cfg["scale_attn_weights"] == false) {
    throw ConfigError(where + " has \"scale_attn_weights\": false, but this project's attention always scales " +
                      "the scores by 1/sqrt(head size); use a checkpoint with it true");
  }
  if (cfg.contains("scale_attn_by_inverse_layer_idx") && cfg["scale_attn_by_inverse_layer_idx"] == true) {
    throw ConfigError(where + " has \"scale_attn_by_inverse_layer_idx\": true, but this project's attention " +
                      "does not scale the scores by 1/(layer index + 1); use a checkpoint with it false");
  }
  GPTConfig c;
  c.n_embd = required_int(cfg, "n_embd", where);
  c.n_layer = required_int(cfg, "n_layer", where);
  c.n_head = required_int(cfg, "n_head", where);
  c.n_positions = required_int(cfg, "n_positions", where);
  c.vocab_size = required_int(cfg, "vocab_size", where);
  c.layer_norm_epsilon = optional_float(cfg, "layer_norm_epsilon", 1e-5f, where);
  c.dropout = optional_float(cfg, "attn_pdrop", 0.0f, where);
  if (cfg.contains("n_inner") && !cfg["n_inner"].is_null() && cfg["n_inner"] != 4 * c.n_embd) {
    throw ConfigError(where + " has \"n_inner\": " + show(cfg["n_inner"]) + ", but this project's MLP is 4·n_embd = " +
                      std::to_string(4 * c.n_embd) + " wide; remove n_inner or use a checkpoint with the usual width");
  }
  try {
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(where + " does not describe a valid model: " + e.what());
  }
  return c;
}

GPTConfig read_config(const std::string& path) {
  return config_from_json(io::read_whole_file(path, "checkpoint config", io::kMaxJsonFileBytes), path);
}

void save_model(const std::string& dir, const GPTConfig& config, const CanonicalParams& params,
                const Metadata& metadata) {
  config.validate();
  const std::vector<ParamInfo> infos = canonical_parameters(config);
  if (params.size() != infos.size()) {
    throw std::invalid_argument("save_model: " + std::to_string(params.size()) + " tensors given, the model has " +
                                std::to_string(infos.size()));
  }
  for (size_t k = 0; k < infos.size(); ++k) {
    if (static_cast<int64_t>(params[k].size()) != infos[k].shape.numel()) {
      throw std::invalid_argument("save_model: " + infos[k].name + " has " + std::to_string(params[k].size()) +
                                  " elements, its shape " + infos[k].shape.str() + " needs " +
                                  std::to_string(infos[k].shape.numel()));
    }
  }
  save_model(
      dir, config, [&](size_t k) { return params[k].data(); }, metadata);
}

void save_model(const std::string& dir, const GPTConfig& config, const CanonicalSource& param,
                const Metadata& metadata) {
  config.validate();
  std::vector<TensorHeader> tensors;
  for (const ParamInfo& info : canonical_parameters(config)) tensors.push_back({info.name, DType::f32, info.shape});
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw ConfigError("cannot create checkpoint directory " + dir + ": " + ec.message() + "; choose another directory");
  }
  Metadata m = metadata;
  m["format"] = "pt";  // transformers refuses a safetensors file whose metadata lacks a known format
  const auto bytes_of = [&](size_t k) { return static_cast<const void*>(param(k)); };
  write_safetensors((fs::path(dir) / kWeightsFile).string(), tensors, bytes_of, m);
  // config.json last: in a fresh directory, its presence means the weights are complete.
  const std::string config_path = (fs::path(dir) / kConfigFile).string();
  const std::string text = config_to_json(config);
  io::write_atomically(config_path, [&](std::FILE* f) { io::write_bytes(f, text.data(), text.size(), config_path); });
}

void require_checkpoint_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError("checkpoint directory " + dir + " does not exist or is not a directory; a checkpoint is a " +
                      "directory holding config.json and model.safetensors — check the path");
  }
}

namespace {

// The file's tensor for each canonical parameter (nullptr where it has none) and its lm_head.weight;
// a tensor that is not the model's, or one that is there twice, is a ConfigError.
std::vector<const MappedTensor*> match_names(const MappedSafeTensors& file, const std::vector<ParamInfo>& infos,
                                             const MappedTensor*& lm_head) {
  std::map<std::string, size_t> position;
  for (size_t k = 0; k < infos.size(); ++k) position[infos[k].name] = k;
  std::vector<const MappedTensor*> found(infos.size(), nullptr);
  for (const MappedTensor& t : file.tensors()) {
    if (t.name == "lm_head.weight") {
      lm_head = &t;
      continue;
    }
    // A GPT2Model (no LM head) saves its tensors without the "transformer." prefix.
    const std::string name = t.name.starts_with("transformer.") ? t.name : "transformer." + t.name;
    const auto it = position.find(name);
    if (it == position.end()) {
      if (is_attention_mask_buffer(name)) continue;
      throw ConfigError("checkpoint file " + file.path() + " has an unexpected tensor " + quote_name(t.name) + " " +
                        t.shape.str() + " that this GPT-2 model does not have; it was saved for another " +
                        "architecture — use a GPT-2 checkpoint");
    }
    if (found[it->second] != nullptr) {
      throw ConfigError("checkpoint file " + file.path() + " holds " + name + " twice (with and without the " +
                        "\"transformer.\" prefix); keep one of them");
    }
    found[it->second] = &t;
  }
  return found;
}

// A ConfigError unless `t` is there, F32, with the parameter's canonical shape.
void require_parameter(const MappedTensor* t, const ParamInfo& info, const std::string& weights) {
  if (t == nullptr) {
    throw ConfigError("checkpoint file " + weights + " is missing tensor " + info.name + " " + info.shape.str() +
                      ", which the model in config.json needs; the checkpoint is incomplete — use another one");
  }
  if (t->dtype != DType::f32) {
    throw ConfigError("tensor " + t->name + " in checkpoint file " + weights + " is " + dtype_name(t->dtype) +
                      " but F32 is expected; save the model in float32");
  }
  if (!(t->shape == info.shape)) {
    throw ConfigError("tensor " + t->name + " in checkpoint file " + weights + " has shape " + t->shape.str() +
                      " but config.json's model expects " + info.shape.str() +
                      "; the weights and config.json do not belong together — use a matching checkpoint");
  }
}

}  // namespace

MappedModel map_model(const std::string& dir) {
  require_checkpoint_directory(dir);
  const GPTConfig config = read_config((fs::path(dir) / kConfigFile).string());
  MappedModel out{config, MappedSafeTensors((fs::path(dir) / kWeightsFile).string()), {}};
  const std::string& weights = out.file.path();
  const std::vector<ParamInfo> infos = canonical_parameters(config);
  const MappedTensor* lm_head = nullptr;
  out.params = match_names(out.file, infos, lm_head);
  for (size_t k = 0; k < infos.size(); ++k) require_parameter(out.params[k], infos[k], weights);
  // An explicit LM head is fine only if it is the tied one: exactly wte (params[0]).
  if (lm_head != nullptr && (lm_head->dtype != DType::f32 || !(lm_head->shape == infos[0].shape) ||
                             std::memcmp(lm_head->data, out.params[0]->data, lm_head->bytes) != 0)) {
    throw ConfigError("checkpoint file " + weights + " has an lm_head.weight that differs from " + infos[0].name +
                      ": an untied LM head is not supported; use a checkpoint whose LM head is tied to wte");
  }
  if (lm_head != nullptr) out.file.release(*lm_head);
  return out;
}

LoadedModel load_model(const std::string& dir) {
  const MappedModel m = map_model(dir);
  LoadedModel out{m.config, {}, m.file.metadata()};
  const std::vector<ParamInfo> infos = canonical_parameters(m.config);
  for (size_t k = 0; k < infos.size(); ++k) {
    std::vector<float> copy;
    const float* values = floats_of(*m.params[k], copy);
    out.params.emplace_back(values, values + infos[k].shape.numel());
    require_finite(out.params.back(), infos[k].name, m.file.path());
  }
  return out;
}

void require_finite(const float* values, int64_t n, const std::string& tensor, const std::string& file) {
  int64_t first = n;  // the first element that is not finite; n when every one is
#pragma omp parallel for reduction(min : first) schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    if (!std::isfinite(values[k]) && k < first) first = k;
  }
  if (first < n) {
    throw ConfigError("tensor " + tensor + " in " + file + " holds " + text(values[first]) + " at element " +
                      std::to_string(first) + "; a checkpoint's values must be finite — use another checkpoint");
  }
}

void require_finite(const std::vector<float>& values, const std::string& tensor, const std::string& file) {
  require_finite(values.data(), static_cast<int64_t>(values.size()), tensor, file);
}

void check_same_model(const GPTConfig& expected, const GPTConfig& found, const std::string& dir) {
  auto same = [&](const char* key, auto want, auto got) {
    if (want == got) return;
    throw ConfigError("checkpoint " + dir + " has " + key + " = " + text(got) + " but this run expects " + text(want) +
                      "; run with the checkpoint's model settings or use another checkpoint");
  };
  same("n_layer", expected.n_layer, found.n_layer);
  same("n_embd", expected.n_embd, found.n_embd);
  same("n_head", expected.n_head, found.n_head);
  same("n_positions", expected.n_positions, found.n_positions);
  same("vocab_size", expected.vocab_size, found.vocab_size);
  same("layer_norm_epsilon", expected.layer_norm_epsilon, found.layer_norm_epsilon);
}

CanonicalParams load_model_matching(const std::string& dir, const GPTConfig& expected) {
  LoadedModel m = load_model(dir);
  check_same_model(expected, m.config, dir);
  return std::move(m.params);
}

}  // namespace optimus::model
