// Checkpoints of a training run: canonical tensors in, canonical tensors out. In this chapter the
// shards are whole tensors; the parallel stages gather to canonical form before these functions.
#include "train/checkpointing.h"

#include <filesystem>

#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace optimus::train {

namespace {

constexpr const char* kStateFile = "train_state.safetensors";

// The canonical tensor of a (whole) shard; the stages that shard gather before saving.
std::vector<float> canonical_copy(const model::ShardSpec& spec, const float* local) {
  std::vector<float> full(static_cast<size_t>(spec.canonical.numel()));
  model::place_in_canonical(full.data(), local, spec);
  return full;
}

}  // namespace

model::GPTConfig load_checkpoint_config(const std::string& dir) {
  return model::read_config((std::filesystem::path(dir) / model::kConfigFile).string());
}

void save_checkpoint(const std::string& dir, const model::GPTConfig& config, const model::ParamSet& params,
                     const AdamW* opt, const TrainState& state) {
  model::CanonicalParams canonical;
  for (const auto& t : params.tensors) canonical.push_back(canonical_copy(t.spec, t.value.data()));
  model::save_model(dir, config, canonical);
  if (opt == nullptr) return;
  std::vector<model::SafeTensor> tensors;
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const auto& t = params.tensors[i];
    tensors.push_back(model::SafeTensor::from_floats("adamw.m." + t.info.name, t.spec.canonical,
                                                     canonical_copy(t.spec, opt->m(i).data()).data()));
    tensors.push_back(model::SafeTensor::from_floats("adamw.v." + t.info.name, t.spec.canonical,
                                                     canonical_copy(t.spec, opt->v(i).data()).data()));
  }
  model::Metadata meta{{"step", std::to_string(state.step)},
                       {"adamw_step", std::to_string(opt->step())},
                       {"seed", std::to_string(state.seed)},
                       {"layout", state.layout}};
  model::write_safetensors((std::filesystem::path(dir) / kStateFile).string(), tensors, meta);
}

void load_weights(const std::string& dir, const model::GPTConfig& config, model::ParamSet& params) {
  model::CanonicalParams canonical = model::load_model_matching(dir, config);
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    auto& t = params.tensors[i];
    model::scatter_from_canonical(t.value.data(), canonical[i].data(), t.spec);
  }
}

static int metadata_int(const model::SafeTensorFile& f, const std::string& key) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end()) {
    throw core::ConfigError("the training state " + f.path + " has no '" + key +
                            "' entry; it was not written by optimus train — resume from another checkpoint");
  }
  try {
    return std::stoi(it->second);
  } catch (const std::exception&) {
    throw core::ConfigError("the training state " + f.path + " has a bad '" + key + "' entry '" + it->second + "'");
  }
}

TrainState load_train_state(const std::string& dir, const model::ParamSet& params, AdamW& opt) {
  const std::string path = (std::filesystem::path(dir) / kStateFile).string();
  if (!std::filesystem::exists(path)) {
    throw core::ConfigError("the checkpoint " + dir + " has no " + kStateFile +
                            ", so it cannot be resumed (it holds weights only); start a new run from it instead");
  }
  model::SafeTensorFile f = model::read_safetensors(path);
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const auto& t = params.tensors[i];
    const auto m = f.require("adamw.m." + t.info.name, model::DType::f32, t.spec.canonical).floats();
    const auto v = f.require("adamw.v." + t.info.name, model::DType::f32, t.spec.canonical).floats();
    model::scatter_from_canonical(opt.m(i).data(), m.data(), t.spec);
    model::scatter_from_canonical(opt.v(i).data(), v.data(), t.spec);
  }
  opt.set_step(metadata_int(f, "adamw_step"));
  TrainState s;
  s.step = metadata_int(f, "step");
  s.seed = static_cast<uint32_t>(std::stoul(f.metadata.count("seed") ? f.metadata.at("seed") : "0"));
  s.layout = f.metadata.count("layout") ? f.metadata.at("layout") : "";
  return s;
}

}  // namespace optimus::train
