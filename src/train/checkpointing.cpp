// Checkpoints of a training run: canonical tensors in, canonical tensors out, one tensor at a time.
// Saving gathers each tensor from the ranks' shards and rank 0 writes it at once; loading maps the
// file and every rank copies each tensor's elements of its shard straight from the mapping. Shards
// on a GPU travel through host memory (model/gather.h); the gathers use the World's MPI.
#include "train/checkpointing.h"

#include <charconv>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

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

namespace {

// Whether a spec is the whole canonical tensor, in order: its shard is the canonical tensor itself.
bool is_whole(const model::ShardSpec& spec) {
  for (int d = 0; d < spec.canonical.rank(); ++d) {
    const auto& segs = spec.dims[static_cast<size_t>(d)];
    if (segs.size() != 1 || segs[0].start != 0 || segs[0].length != spec.canonical[d]) return false;
  }
  return true;
}

// The canonical tensors of a checkpoint, gathered one at a time in the order every rank follows
// (each gather is collective over the model group): the parameters' values (gather k < n), then,
// with an optimizer, each parameter's two moments (n + 2i: m of parameter i, n + 2i + 1: its v).
// Rank 0 writes each as it comes. A rank whose writing failed still takes part in the remaining
// gathers (finish), so no rank is left waiting in one.
class CheckpointGathers {
 public:
  CheckpointGathers(const model::ParamSet& params, const AdamW* opt, const model::SpecOfRank& spec_of,
                    comm::Communicator& group)
      : params_(params), opt_(opt), spec_of_(spec_of), group_(group) {}

  size_t count() const { return params_.tensors.size() * (opt_ != nullptr ? 3 : 1); }

  // Gather k, which must be the next one: its canonical elements on the group's rank 0 (nullptr
  // elsewhere), valid until the next call. A whole tensor on one CPU rank is its own canonical
  // tensor: nothing is copied.
  const float* gather(size_t k) {
    if (k != next_) throw std::logic_error("CheckpointGathers: gather " + std::to_string(k) + " out of order");
    ++next_;
    const size_t n = params_.tensors.size();
    const model::ParamTensor& t = params_.tensors[k < n ? k : (k - n) / 2];
    const float* data =
        k < n ? t.value.data() : ((k - n) % 2 == 0 ? opt_->m((k - n) / 2) : opt_->v((k - n) / 2)).data();
    if (group_.size() == 1 && params_.ctx.device == core::Device::cpu && is_whole(t.spec)) return data;
    full_ = std::vector<float>();  // the last tensor's memory goes before the next one's is taken
    full_ = model::gather_canonical_on(0, params_.ctx, t, data, group_, spec_of_);  // the group's rank 0 writes
    return full_.data();
  }

  // Takes part in every gather not done yet, dropping what they give.
  void finish() {
    while (next_ < count()) gather(next_);
  }

 private:
  const model::ParamSet& params_;
  const AdamW* opt_;
  const model::SpecOfRank& spec_of_;
  comm::Communicator& group_;
  std::vector<float> full_;
  size_t next_ = 0;
};

// Rank 0's part of save_checkpoint: the model's files, then (with an optimizer) the training state,
// each tensor written as it is gathered.
void write_checkpoint(const std::string& dir, const model::GPTConfig& config, const model::ParamSet& params,
                      const AdamW* opt, const TrainState& state, CheckpointGathers& gathers) {
  model::Metadata whose_ids;  // the tokenizer the model reads, beside its weights
  if (!state.tokenizer.empty()) whose_ids[model::kTokenizerKey] = state.tokenizer;
  const auto gathered = [&](size_t k) { return gathers.gather(k); };
  model::save_model(dir, config, gathered, whose_ids);
  if (opt == nullptr) return;
  std::vector<model::TensorHeader> moments;
  for (const auto& t : params.tensors) {
    moments.push_back({"adamw.m." + t.info.name, model::DType::f32, t.spec.canonical});
    moments.push_back({"adamw.v." + t.info.name, model::DType::f32, t.spec.canonical});
  }
  model::Metadata meta{{"step", std::to_string(state.step)},
                       {"adamw_step", std::to_string(opt->step())},
                       {"seed", std::to_string(state.seed)},
                       {"layout", state.layout},
                       {"flags", state.flags}};
  if (state.data_parallel > 0) meta["data_parallel"] = std::to_string(state.data_parallel);
  const size_t n = params.tensors.size();
  model::write_safetensors((std::filesystem::path(dir) / kStateFile).string(), moments,
                           [&](size_t k) { return static_cast<const void*>(gathers.gather(n + k)); }, meta);
}

// shard (the shard of `spec`, in the memory of ctx) = its elements of the mapped canonical tensor
// `t`, whose values are checked finite (`name` names it in the message); then t's pages leave this
// process's memory.
void scatter_mapped(const model::MappedSafeTensors& file, const model::MappedTensor& t, const std::string& name,
                    const core::Context& ctx, float* shard, const model::ShardSpec& spec) {
  std::vector<float> copy;  // only for a file whose data is not float-aligned
  const float* values = model::floats_of(t, copy);
  model::require_finite(values, t.shape.numel(), name, file.path());
  model::scatter_to_shard(ctx, shard, values, spec);
  file.release(t);
}

}  // namespace

void save_checkpoint(const std::string& dir, const model::GPTConfig& config, const model::ParamSet& params,
                     const model::SpecOfRank& spec_of, comm::World& world, const AdamW* opt, const TrainState& state,
                     comm::Communicator* model_group) {
  // Every rank takes part in the gathers (each model copy its own); only rank 0 writes.
  CheckpointGathers gathers(params, opt, spec_of, model_group != nullptr ? *model_group : world.comm());
  std::string error;
  if (world.rank() == 0) {
    try {
      write_checkpoint(dir, config, params, opt, state, gathers);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  gathers.finish();
  if (!world.all_agree(error.empty())) {
    throw core::ConfigError(world.rank() == 0 ? error : "rank 0 could not write the checkpoint");
  }
}

void load_weights(const std::string& dir, const model::GPTConfig& config, model::ParamSet& params) {
  const model::MappedModel m = model::map_model(dir);
  model::check_same_model(config, m.config, dir);
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    auto& t = params.tensors[i];
    scatter_mapped(m.file, *m.params[i], t.info.name, params.ctx, t.value.data(), t.spec);
  }
}

namespace {

// A whole number in [lo, hi] from the training state's metadata; ConfigError naming the entry otherwise.
int64_t metadata_int(const model::MappedSafeTensors& f, const std::string& key, int64_t lo, int64_t hi) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) {
    throw core::ConfigError("the training state " + f.path() + " has no '" + key +
                            "' entry; it was not written by optimus train — resume from another checkpoint");
  }
  const std::string& text = it->second;
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < lo || v > hi) {
    throw core::ConfigError("the training state " + f.path() + " has a bad '" + key + "' entry '" + text.substr(0, 40) +
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
  const model::MappedSafeTensors f(path);
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TrainState s;
  s.step = static_cast<int>(metadata_int(f, "step", 0, kIntMax));
  s.seed = static_cast<uint32_t>(metadata_int(f, "seed", 0, std::numeric_limits<uint32_t>::max()));
  const int adamw_step = static_cast<int>(metadata_int(f, "adamw_step", 0, kIntMax));
  const model::Metadata& meta = f.metadata();
  s.layout = meta.count("layout") ? meta.at("layout") : "";
  s.flags = meta.count("flags") ? meta.at("flags") : "";
  if (meta.count("data_parallel")) s.data_parallel = static_cast<int>(metadata_int(f, "data_parallel", 1, kIntMax));
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const auto& t = params.tensors[i];
    for (const bool first : {true, false}) {
      const std::string name = (first ? "adamw.m." : "adamw.v.") + t.info.name;
      const model::MappedTensor& moment = f.require(name, model::DType::f32, t.spec.canonical);
      scatter_mapped(f, moment, name, params.ctx, (first ? opt.m(i) : opt.v(i)).data(), t.spec);
    }
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
