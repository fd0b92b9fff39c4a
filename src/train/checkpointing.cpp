// Checkpoints of a training run: canonical tensors in, canonical tensors out. The parallel stages
// gather their shards to canonical form before these functions and scatter them back after.
// Shards on a GPU travel through host memory (model/gather.h); the gathers use the World's MPI.
#include "train/checkpointing.h"

#include <charconv>
#include <filesystem>
#include <limits>

#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace optimus::train {

namespace {

constexpr const char* kStateFile = "train_state.safetensors";

}  // namespace

model::GPTConfig load_checkpoint_config(const std::string& dir) {
  model::require_checkpoint_directory(dir);
  return model::read_config((std::filesystem::path(dir) / model::kConfigFile).string());
}

void save_checkpoint(const std::string& dir, const model::GPTConfig& config, const model::ParamSet& params,
                     const model::SpecOfRank& spec_of, comm::World& world, const AdamW* opt, const TrainState& state,
                     comm::Communicator* model_group) {
  // Every rank takes part in the gathers (each model copy its own); only rank 0 holds on to the
  // canonical tensors and writes.
  comm::Communicator& group = model_group != nullptr ? *model_group : world.comm();
  auto gather = [&](const model::ParamTensor& t, const float* data) {
    return model::gather_canonical(params.ctx, t, data, group, spec_of);
  };
  model::CanonicalParams canonical;
  std::vector<model::SafeTensor> moments;
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const auto& t = params.tensors[i];
    canonical.push_back(gather(t, t.value.data()));
    if (opt != nullptr) {
      moments.push_back(model::SafeTensor::from_floats("adamw.m." + t.info.name, t.spec.canonical,
                                                       gather(t, opt->m(i).data()).data()));
      moments.push_back(model::SafeTensor::from_floats("adamw.v." + t.info.name, t.spec.canonical,
                                                       gather(t, opt->v(i).data()).data()));
    }
  }
  std::string error;
  if (world.rank() == 0) {
    try {
      model::save_model(dir, config, canonical);
      if (opt != nullptr) {
        model::Metadata meta{{"step", std::to_string(state.step)},
                             {"adamw_step", std::to_string(opt->step())},
                             {"seed", std::to_string(state.seed)},
                             {"layout", state.layout},
                             {"flags", state.flags}};
        if (state.data_parallel > 0) meta["data_parallel"] = std::to_string(state.data_parallel);
        model::write_safetensors((std::filesystem::path(dir) / kStateFile).string(), moments, meta);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!world.all_agree(error.empty())) {
    throw core::ConfigError(world.rank() == 0 ? error : "rank 0 could not write the checkpoint");
  }
}

void load_weights(const std::string& dir, const model::GPTConfig& config, model::ParamSet& params) {
  model::CanonicalParams canonical = model::load_model_matching(dir, config);
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    auto& t = params.tensors[i];
    model::scatter_to_shard(params.ctx, t.value.data(), canonical[i].data(), t.spec);
  }
}

namespace {

// A whole number in [lo, hi] from the training state's metadata; ConfigError naming the entry otherwise.
int64_t metadata_int(const model::SafeTensorFile& f, const std::string& key, int64_t lo, int64_t hi) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end()) {
    throw core::ConfigError("the training state " + f.path + " has no '" + key +
                            "' entry; it was not written by optimus train — resume from another checkpoint");
  }
  const std::string& text = it->second;
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < lo || v > hi) {
    throw core::ConfigError("the training state " + f.path + " has a bad '" + key + "' entry '" + text.substr(0, 40) +
                            "' (a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                            " is expected); resume from another checkpoint");
  }
  return v;
}

}  // namespace

TrainState load_train_state(const std::string& dir, const model::ParamSet& params, AdamW& opt) {
  const std::string path = (std::filesystem::path(dir) / kStateFile).string();
  std::error_code ec;
  if (std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::not_found) {
    throw core::ConfigError("the checkpoint " + dir + " has no " + kStateFile +
                            ", so it cannot be resumed (it holds weights only); start a new run from its weights with "
                            "--init-from " +
                            dir);
  }
  model::SafeTensorFile f = model::read_safetensors(path);
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TrainState s;
  s.step = static_cast<int>(metadata_int(f, "step", 0, kIntMax));
  s.seed = static_cast<uint32_t>(metadata_int(f, "seed", 0, std::numeric_limits<uint32_t>::max()));
  const int adamw_step = static_cast<int>(metadata_int(f, "adamw_step", 0, kIntMax));
  s.layout = f.metadata.count("layout") ? f.metadata.at("layout") : "";
  s.flags = f.metadata.count("flags") ? f.metadata.at("flags") : "";
  if (f.metadata.count("data_parallel"))
    s.data_parallel = static_cast<int>(metadata_int(f, "data_parallel", 1, kIntMax));
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const auto& t = params.tensors[i];
    const auto m = f.require("adamw.m." + t.info.name, model::DType::f32, t.spec.canonical).floats();
    const auto v = f.require("adamw.v." + t.info.name, model::DType::f32, t.spec.canonical).floats();
    model::require_finite(m, "adamw.m." + t.info.name, path);
    model::require_finite(v, "adamw.v." + t.info.name, path);
    model::scatter_to_shard(params.ctx, opt.m(i).data(), m.data(), t.spec);
    model::scatter_to_shard(params.ctx, opt.v(i).data(), v.data(), t.spec);
  }
  opt.set_step(adamw_step);
  return s;
}

void save_gradients(const std::string& dir, const model::ParamSet& params, const model::SpecOfRank& spec_of,
                    comm::World& world, comm::Communicator* model_group) {
  comm::Communicator& group = model_group != nullptr ? *model_group : world.comm();
  std::vector<model::SafeTensor> grads;
  for (const auto& t : params.tensors) {
    const auto full = model::gather_canonical(params.ctx, t, t.grad.data(), group, spec_of);
    grads.push_back(model::SafeTensor::from_floats(t.info.name, t.spec.canonical, full.data()));
  }
  std::string error;
  if (world.rank() == 0) {
    try {
      model::write_safetensors((std::filesystem::path(dir) / "gradients.safetensors").string(), grads);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!world.all_agree(error.empty())) {
    throw core::ConfigError(world.rank() == 0 ? error : "rank 0 could not write the gradients");
  }
}

}  // namespace optimus::train
