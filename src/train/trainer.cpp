// The training loop.
#include "train/trainer.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "comm/scalar.h"
#include "core/errors.h"
#include "io/json_text.h"
#include "io/staged_files.h"
#include "serial/gpt.h"
#include "text/tokenizer_folder.h"
#include "train/checkpointing.h"
#include "train/data_parallel.h"
#include "train/layout.h"
#include "train/memory_check.h"
#include "train/sample.h"
#include "train/step.h"
#include "train/stop_signals.h"
#include "train/tokenizer_check.h"

namespace optimus::train {

std::string checkpoint_dir(const std::string& out, int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%06d", step);
  return (std::filesystem::path(out) / name).string();
}

double evaluate(model::Model& gpt, const TokenFile& data, int B, int T, int batches) {
  std::vector<int> inputs(static_cast<size_t>(B) * T), targets(inputs.size());
  double sum = 0.0;
  for (int k = 0; k < batches; ++k) {
    eval_batch(inputs.data(), targets.data(), data, B, T, k);
    sum += gpt.forward(inputs.data(), targets.data(), B, T, 0, /*train=*/false);
  }
  return sum / batches;
}

namespace {

// The settings that decide what a run does after any step, as "key=value" pairs. A resumed run must
// have the same ones to continue exactly (the layout may differ: checkpoints are canonical).
std::string continuation_flags(const TrainOptions& o) {
  auto f = [](float x) {  // the shortest text that reads back as the same float
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
  };
  return "batch=" + std::to_string(o.batch) + " seq=" + std::to_string(sequence_length(o)) +
         " steps=" + std::to_string(o.steps) + " warmup=" + std::to_string(o.warmup) + " lr=" + f(o.lr) +
         " min-lr=" + f(o.min_lr) + " weight-decay=" + f(o.adamw.weight_decay) + " beta1=" + f(o.adamw.beta1) +
         " beta2=" + f(o.adamw.beta2) + " grad-clip=" + f(o.grad_clip) + " dropout=" + f(o.model.dropout) +
         (o.grad_accum > 1 ? " grad-accum=" + std::to_string(o.grad_accum) : "");
}

// The settings of a flags string by key; a setting written only when it is not its default (grad-accum)
// reads as that default when absent.
std::map<std::string, std::string> settings_of(const std::string& flags) {
  std::map<std::string, std::string> settings{{"grad-accum", "1"}};
  std::istringstream in(flags);
  std::string pair;
  while (in >> pair) {
    const auto eq = pair.find('=');
    settings[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
  }
  return settings;
}

// The first setting of `saved` that `now` differs in, as "--key value (this run has other)"; "" when
// they agree. A key of one only (an older or newer writer) reads as "(none)" on the other side.
std::string first_difference(const std::string& saved, const std::string& now) {
  const auto a = settings_of(saved), b = settings_of(now);
  auto value = [](const std::map<std::string, std::string>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string("(none)") : it->second;
  };
  std::istringstream order(saved + " " + now);  // the flags' own order, for the first difference
  std::string pair;
  while (order >> pair) {
    const std::string key = pair.substr(0, pair.find('='));
    if (value(a, key) != value(b, key)) {  // a file's values cut, as in every message
      auto cut = [](const std::string& s) { return s.size() > 40 ? s.substr(0, 40) + "..." : s; };
      return "--" + cut(key) + " " + cut(value(a, key)) + " (this run has " + cut(value(b, key)) + ")";
    }
  }
  return "";
}

// The step number of a folder named step_NNNNNN, or -1 for any other name.
int step_of_folder(const std::string& name) {
  int step = -1;
  if (name.size() <= 5 || name.rfind("step_", 0) != 0) return -1;
  const auto r = std::from_chars(name.data() + 5, name.data() + name.size(), step);
  return r.ec == std::errc() && r.ptr == name.data() + name.size() ? step : -1;
}

// Removes the step folders numbered below `saved` except the newest keep − 1 of them, so that with
// `saved` itself `keep` remain. A folder numbered above `saved` is never touched: it is not older.
void prune_step_folders(const std::string& out, int saved, int keep) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int, fs::path>> older;
  for (const auto& e : fs::directory_iterator(out)) {
    const int step = step_of_folder(e.path().filename().string());
    if (e.is_directory() && step >= 0 && step < saved) older.emplace_back(step, e.path());
  }
  std::sort(older.begin(), older.end());
  for (size_t k = 0; k + static_cast<size_t>(keep - 1) < older.size(); ++k) fs::remove_all(older[k].second);
}

// Rank 0 writes the run's tokenizer (its files as read and checked when the run started, so a file
// changed or removed since does not matter) into a checkpoint folder; every rank learns whether it could.
void save_tokenizer(const std::string& dir, const text::TokenizerFiles& tokenizer, comm::World& world) {
  std::string error;
  if (world.rank() == 0) {
    try {
      io::StagedFiles files(dir);
      text::write_tokenizer_files(files, tokenizer);
      files.commit();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!world.all_agree(error.empty())) {
    throw core::ConfigError(world.rank() == 0 ? error : "rank 0 could not write the tokenizer into the checkpoint");
  }
}

// Writes the checkpoint into a temporary folder and renames it into place, so a crash never leaves
// a half checkpoint under a step's name (a failed write removes the temporary folder; one left by a
// killed run is removed when the next run claims the folder); then prunes to the newest `keep`.
std::string save_step_checkpoint(const TrainOptions& o, const model::Model& gpt, const AdamW& opt, int step,
                                 comm::World& world, const DataParallel& dp, const text::TokenizerFiles& tokenizer) {
  namespace fs = std::filesystem;
  const fs::path final_dir = checkpoint_dir(o.out, step);
  const fs::path tmp_dir = fs::path(o.out) / (".tmp_" + final_dir.filename().string());
  try {
    if (world.rank() == 0) fs::remove_all(tmp_dir);
    save_checkpoint(tmp_dir.string(), o.model, gpt.params(), gpt.spec_of(), world, &opt,
                    TrainState{step, o.seed, to_string(o.layout), continuation_flags(o), dp.replicas, o.data_tokenizer},
                    dp.model);
    if (o.save_gradients) save_gradients(tmp_dir.string(), gpt.params(), gpt.spec_of(), world, dp.model);
    // transformers' AutoTokenizer loads the folder as it is
    if (!o.tokenizer.empty()) save_tokenizer(tmp_dir.string(), tokenizer, world);
  } catch (...) {
    std::error_code ignored;
    if (world.rank() == 0) fs::remove_all(tmp_dir, ignored);
    throw;
  }
  if (world.rank() != 0) return final_dir.string();
  fs::remove_all(final_dir);
  fs::rename(tmp_dir, final_dir);
  if (o.keep > 0) prune_step_folders(o.out, step, o.keep);
  return final_dir.string();
}

// Appends one JSON object per line to the run's metrics file (read by the notebooks). The file is
// opened at the first line (after the first step, or the starting validation of an --init-from
// run): a fresh run then starts it anew, a resumed run appends. An empty path (the ranks other than 0)
// writes nothing. Every rank calls write at the same points, so `before_first_line` (the output
// folder's claim, when it is not yet made) may be collective.
class MetricsFile {
 public:
  MetricsFile(std::string path, bool append, std::function<void()> before_first_line)
      : path_(std::move(path)), append_(append), before_first_line_(std::move(before_first_line)) {}
  void write(const std::string& json_line) {
    if (before_first_line_) std::exchange(before_first_line_, nullptr)();
    if (path_.empty()) return;
    if (!out_.is_open()) out_.open(path_, append_ ? std::ios::app : std::ios::trunc);
    out_ << json_line << '\n';
    out_.flush();
  }

 private:
  std::string path_;
  bool append_;
  std::function<void()> before_first_line_;
  std::ofstream out_;
};

// What a run prints as it goes (rank 0). Live: one line — step, loss, tokens/s, ETA — rewritten in
// place on a terminal, with validation and checkpoint lines printed above it. Lines: the plain log
// line every --log-interval steps (for logs, pipes and mpirun's forwarded output).
class Progress {
 public:
  Progress(const TrainOptions& o, comm::World& world) : world_(world), steps_(o.steps), every_(o.log_interval) {
    // Under mpiexec every rank's stdout is a pseudo-terminal, whether or not mpiexec's own output goes
    // to one, so "auto" can only trust isatty for a single process; a launcher that knows asks for live.
    live_ = o.progress == "live" || (o.progress == "auto" && world.size() == 1 && isatty(STDOUT_FILENO));
  }
  /// After a step: the live line, or the log line when one is due. `done` counts this run's steps.
  void step(int step, float loss, float norm, float lr, double ms, double tok_s, int done, double elapsed_s) {
    if (live_) {
      const int eta = static_cast<int>(elapsed_s / done * (steps_ - step - 1) + 0.5);
      world_.print0("\r\033[Kstep %5d/%d | loss %.4f | %.0f tok/s | ETA %dm%02ds", step + 1, steps_, loss, tok_s,
                    eta / 60, eta % 60);
      if (step + 1 == steps_) world_.print0("\n");
    } else if (every_ > 0 && (step % every_ == 0 || step + 1 == steps_)) {
      world_.print0("step %5d/%d | loss %.4f | grad norm %.3f | lr %.2e | %.1f ms | %.0f tok/s\n", step + 1, steps_,
                    loss, norm, lr, ms, tok_s);
    }
  }
  /// A line that stays (validation, checkpoint), printed above the live line.
  void note(const std::string& line) { world_.print0("%s%s\n", live_ ? "\r\033[K" : "", line.c_str()); }
  /// An error that ends the run: "error: <sentence>" on rank 0's stderr, like World::fail's.
  void error(const std::string& sentence) {
    if (world_.rank() != 0) return;
    if (live_) world_.print0("\r\033[K");
    std::fprintf(stderr, "error: %s\n", sentence.c_str());
    std::fflush(stderr);
  }

 private:
  comm::World& world_;
  int steps_, every_;
  bool live_ = false;
};

// The training settings no run can use, refused before any work with the flag and its value named
// (the model's own are checked by GPTConfig::validate).
void require_usable_settings(const TrainOptions& o) {
  auto check = [](bool ok, const std::string& flag, const std::string& must, const std::string& value) {
    if (!ok) throw core::ConfigError(flag + " must be " + must + ", but is " + value);
  };
  auto f = [](float x) {
    if (std::isinf(x)) return std::string("inf (past a float's largest value, 3.4e38)");
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
  };
  check(std::isfinite(o.lr) && o.lr > 0, "the learning rate (--lr)", "positive", f(o.lr));
  check(std::isfinite(o.min_lr) && o.min_lr >= 0, "the final learning rate (--min-lr)", "0 or more", f(o.min_lr));
  if (o.min_lr > o.lr) {  // the cosine would rise from --lr to --min-lr
    throw core::ConfigError("the final learning rate (--min-lr) must be at most the peak learning rate (--lr " +
                            f(o.lr) + "), but is " + f(o.min_lr) + "; the cosine decays from --lr to --min-lr");
  }
  check(std::isfinite(o.adamw.weight_decay) && o.adamw.weight_decay >= 0, "--weight-decay", "0 or more",
        f(o.adamw.weight_decay));
  check(o.adamw.beta1 >= 0 && o.adamw.beta1 < 1, "--beta1", "in [0, 1)", f(o.adamw.beta1));
  check(o.adamw.beta2 >= 0 && o.adamw.beta2 < 1, "--beta2", "in [0, 1)", f(o.adamw.beta2));
  check(!std::isnan(o.grad_clip), "--grad-clip", "a number (0 or less: no clipping)", f(o.grad_clip));
  check(o.eval_batches > 0, "--eval-batches", "positive", std::to_string(o.eval_batches));
  const std::pair<const char*, int> counts[] = {{"--warmup", o.warmup},
                                                {"--log-interval", o.log_interval},
                                                {"--eval-interval", o.eval_interval},
                                                {"--keep", o.keep},
                                                {"--checkpoint-interval", o.checkpoint_interval},
                                                {"--sample", o.sample_tokens},
                                                {"--inject-nan-at-step", o.inject_nan_at_step}};
  for (const auto& [flag, v] : counts) check(v >= 0, flag, "0 or more", std::to_string(v));
  check(o.inject_nan_into == "loss" || o.inject_nan_into == "gradient", "--inject-nan-into", "loss or gradient",
        "'" + o.inject_nan_into.substr(0, 40) + "'");
}

// Whether rank 0 could make and write the output folder, and whether it holds an earlier run that
// this one would mix with, decided before anything is written: a refused run leaves the disk as it
// was. Every rank learns the verdict.
void check_out_folder(const TrainOptions& o, comm::World& world) {
  namespace fs = std::filesystem;
  world.agree_on([&] {
    if (world.rank() != 0) return;
    std::error_code ec;
    (void)fs::status(o.out, ec);  // a name past the filesystem's length, a loop of links: nothing can be made there
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      throw core::ConfigError("cannot write the output folder " + o.out + " (" + ec.message() +
                              "); choose --out a folder you can write");
    }
    fs::path existing = fs::absolute(o.out, ec);  // the folder, or the nearest parent that exists
    while (!fs::exists(existing, ec) && existing.has_relative_path()) existing = existing.parent_path();
    if (!fs::is_directory(existing, ec) || ::access(existing.c_str(), W_OK | X_OK) != 0) {
      throw core::ConfigError("cannot write the output folder " + o.out + " (" + existing.string() +
                              (fs::is_directory(existing, ec) ? " is not writable" : " is not a folder") +
                              "); choose --out a folder you can write");
    }
    if (!fs::is_directory(o.out, ec) || !o.resume.empty() || o.overwrite) return;
    std::string earlier;
    for (const auto& e : fs::directory_iterator(o.out, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "metrics.jsonl" || step_of_folder(name) >= 0) earlier = name;
      if (step_of_folder(name) >= 0) break;
    }
    if (!earlier.empty()) {
      throw core::ConfigError("--out " + o.out + " holds an earlier run (" + earlier +
                              "); resume it with --resume, pass --overwrite to replace it, or choose another --out");
    }
  });
}

// Holds the output folder for one run: an exclusive lock on the folder itself (flock, released
// when the process ends however it ends), so two runs never write into one folder at once.
class OutFolderLock {
 public:
  OutFolderLock() = default;
  OutFolderLock(const OutFolderLock&) = delete;
  OutFolderLock& operator=(const OutFolderLock&) = delete;
  ~OutFolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool take(const std::string& folder) {
    fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    return fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }

 private:
  int fd_ = -1;
};

// Once the run is known to be valid: rank 0 makes the folder, takes its lock, removes what a killed
// run left (temporary checkpoint folders) and, with --overwrite, the earlier run's checkpoints and
// metrics. Every rank learns the verdict.
void claim_out_folder(const TrainOptions& o, comm::World& world, OutFolderLock& lock) {
  namespace fs = std::filesystem;
  world.agree_on([&] {
    if (world.rank() != 0) return;
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) throw core::ConfigError("cannot make the output folder " + o.out + " (" + ec.message() + ")");
    if (!lock.take(o.out)) {
      throw core::ConfigError("another optimus train is writing into --out " + o.out +
                              "; wait for it to finish or choose another --out");
    }
    for (const auto& e : fs::directory_iterator(o.out)) {
      const std::string name = e.path().filename().string();
      const bool earlier = o.overwrite && (name == "metrics.jsonl" || step_of_folder(name) >= 0);
      if (name.rfind(".tmp_step_", 0) == 0 || earlier) fs::remove_all(e.path());
    }
  });
}

// The output folder is claimed at once when it exists (its lock; what a killed run left; --overwrite's
// removals), or else made and claimed at the run's first write: the returned action, which
// MetricsFile runs before its first line (on every rank: it is collective). A run that ends before it
// writes anything (refused, killed, a NaN at step 1) leaves no folder behind.
std::function<void()> claim_now_or_at_first_write(const TrainOptions& o, comm::World& world, OutFolderLock& lock) {
  std::error_code ec;
  const bool absent = world.all_agree(world.rank() != 0 || !std::filesystem::exists(o.out, ec));
  if (!absent) {
    claim_out_folder(o, world, lock);
    return nullptr;
  }
  return [&o, &world, &lock] { claim_out_folder(o, world, lock); };
}

// Loads --resume's weights and training state into this run and returns the state (its step: the
// steps it had done); a checkpoint that another seed or other settings wrote, or one past --steps,
// is a ConfigError.
TrainState resume_from(const TrainOptions& o, model::Model& gpt, AdamW& opt) {
  load_weights(o.resume, o.model, gpt.params());
  const TrainState state = load_train_state(o.resume, gpt.params(), opt);
  if (state.seed != o.seed) {
    throw core::ConfigError("the checkpoint " + o.resume + " was trained with --seed " + std::to_string(state.seed) +
                            ", but this run has --seed " + std::to_string(o.seed) + "; resume with --seed " +
                            std::to_string(state.seed));
  }
  if (const std::string differs = state.flags.empty() ? "" : first_difference(state.flags, continuation_flags(o));
      !differs.empty()) {
    throw core::ConfigError("the checkpoint " + o.resume + " was trained with " + differs +
                            "; resume with the flags of the run that wrote it");
  }
  if (state.step < 0 || state.step >= o.steps) {
    throw core::ConfigError("the checkpoint " + o.resume + " says it is at step " + std::to_string(state.step) +
                            ", but a run of --steps " + std::to_string(o.steps) + " resumes from a step in [0, " +
                            std::to_string(o.steps) +
                            "); resume from an earlier checkpoint, or start a new run from this one's weights "
                            "with --init-from " +
                            o.resume);
  }
  return state;
}

// Bits per byte: the loss in bits per token over the bytes of text a token stands for, comparable
// across tokenizations (for bytes it is the loss in bits).
double bits_per_byte(double loss, const TokenFile& data) {
  return loss / std::log(2.0) / data.bytes_per_token;
}

// The validation line of the log (bits per byte too for a token file; for text it is loss / ln 2),
// and of metrics.jsonl (the loss to 9 digits, enough to compare with another program's to 1e-8).
std::string validation_note(int step, int steps, double loss, const TokenFile& data) {
  char note[160];
  std::snprintf(note, sizeof note, "step %5d/%d | validation loss %.4f", step, steps, loss);
  std::string line = note;
  if (data.tokenized) {
    std::snprintf(note, sizeof note, " | %.4f bits per byte", bits_per_byte(loss, data));
    line += note;
  }
  return line;
}
std::string validation_metrics(int step, double loss, const TokenFile& data) {
  return io::one_line(
      nlohmann::ordered_json{{"step", step}, {"val_loss", loss}, {"val_bpb", bits_per_byte(loss, data)}});
}

// Where the run starts: --resume's step, with its weights and optimizer state, --init-from's weights
// at step 0, or fresh weights at step 0.
int start_of_run(const TrainOptions& o, comm::World& world, const DataParallel& dp, model::Model& gpt, AdamW& opt) {
  if (!o.resume.empty()) {
    TrainState state;
    world.agree_on([&] { state = resume_from(o, gpt, opt); });
    world.print0("resumed from %s at step %d\n", o.resume.c_str(), state.step);
    if (state.data_parallel > 0 && state.data_parallel != dp.replicas) {
      world.print0(
          "note: %s was trained with --data-parallel %d and this run has %d; the run continues, but its "
          "gradients are summed in another order, so it is close to, not bitwise equal to, the run that "
          "wrote the checkpoint\n",
          o.resume.c_str(), state.data_parallel, dp.replicas);
    }
    return state.step;
  }
  if (!o.init_from.empty()) {
    world.agree_on([&] { load_weights(o.init_from, o.model, gpt.params()); });
    world.print0("starting from the weights of %s (a new run: step 0, fresh optimizer)\n", o.init_from.c_str());
  }
  return 0;
}

// The trainer's checks between a step's phases: a loss or a gradient norm that is not finite ends
// the run before the update, so nothing after the last checkpoint is written. Every rank has the
// same loss and norm, so every rank stops at the same point. The robustness tests inject a NaN here.
StepChecks finite_checks(const TrainOptions& o, comm::World& world, model::Model& gpt, Progress& progress, int step,
                         const std::function<std::string()>& kept) {
  const bool inject = step + 1 == o.inject_nan_at_step;  // test-only
  auto loss_ok = [&o, &world, &gpt, &progress, &kept, step, inject](float& loss) {
    if (inject && o.inject_nan_into == "loss") loss = std::numeric_limits<float>::quiet_NaN();
    if (!std::isfinite(loss)) {
      progress.error("the loss became " + std::to_string(loss) + " at step " + std::to_string(step + 1) +
                     "; stopping (" + kept() + ")");
      return false;
    }
    if (inject && o.inject_nan_into == "gradient" && world.rank() == 0) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      core::copy_to_device(gpt.context(), gpt.params().tensors.back().grad.data(), &nan, 1);
    }
    return true;
  };
  auto norm_ok = [&progress, &kept, step](float norm) {
    if (std::isfinite(norm)) return true;
    progress.error("the gradient norm became " + std::to_string(norm) + " at step " + std::to_string(step + 1) +
                   " (the loss was finite); stopping before the update (" + kept() + ")");
    return false;
  };
  return {loss_ok, norm_ok};
}

// A float as the double its shortest text reads as, so JSON writes 0.001 for the float 0.001f.
double shortest(float x) {
  char buf[32];
  return std::strtod(std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr).c_str(), nullptr);
}

// A step's line of metrics.jsonl.
std::string step_metrics(int step, const StepOutcome& s, float lr, double ms, double tok_s,
                         const core::MemoryLedger& ledger) {
  auto mib = [](size_t bytes) { return std::round(static_cast<double>(bytes) / (1 << 20) * 1e3) / 1e3; };
  return io::one_line(
      nlohmann::ordered_json{{"step", step},
                             {"train_loss", shortest(s.loss)},
                             {"grad_norm", shortest(s.norm)},
                             {"lr", shortest(lr)},
                             {"ms", std::round(ms * 1e3) / 1e3},
                             {"tokens_per_s", std::round(tok_s * 10) / 10},
                             {"peak_mib", mib(ledger.peak_total())},
                             {"peak_activations_mib", mib(ledger.peak(core::MemoryCategory::activations))}});
}

// Sampling needs the whole vocabulary's logits: rank 0 loads the run's last checkpoint into a
// serial model and prints a sample of --sample tokens as they are made. The run has finished, so a
// stop signal (during the sample, or during the last step, which the loop no longer heeds) only cuts
// the sample short, with a line that says so: the exit code stays 0, since a run stopped with 75
// would be resumed, and a finished run has no step left to resume.
void print_sample(const TrainOptions& o, comm::World& world, const std::string& last_dir, const StopSignals& stop) {
  if (o.sample_tokens <= 0 || world.rank() != 0 || last_dir.empty()) return;
  serial::GPT sampler(o.model, core::cpu_context(), o.seed, {.values = model::InitialValues::loaded});
  load_weights(last_dir, o.model, sampler.params());
  SampleOptions so;
  so.tokens = o.sample_tokens;
  so.seed = o.seed;
  const auto tokenizer = tokenizer_in(last_dir);
  world.print0("sample:\n");
  const Sample sample = sample_text(sampler, "\n", so, tokenizer.get(), {.on_text = print_text, .stop = &stop});
  world.print0("\n");
  if (sample.stopped_by == 0) return;
  world.print0(
      "sample cut short by %s after %d of %d tokens; the run had finished, its checkpoint is %s (exit code 0)\n",
      StopSignals::name(sample.stopped_by), sample.tokens, so.tokens, last_dir.c_str());
}

// What a run holds besides the model while it trains: the data, the output folder, the log.
struct Run {
  const TrainOptions& o;
  comm::World& world;
  const DataParallel& dp;
  const TokenFile& train_data;
  const TokenFile& val_data;
  int eval_B = 0, eval_passes = 0;  // validation: passes of one micro-batch (a copy's pass)
  const text::TokenizerFiles& tokenizer;
  MetricsFile& metrics;
  Progress& progress;
  std::string last_dir;  // the newest checkpoint written
};

// The validation loss at `step`, in the log and in metrics.jsonl.
void validate(Run& run, model::Model& gpt, int step) {
  const double val = evaluate(gpt, run.val_data, run.eval_B, sequence_length(run.o), run.eval_passes);
  run.progress.note(validation_note(step, run.o.steps, val, run.val_data));
  run.metrics.write(validation_metrics(step, val, run.val_data));
}

// After step `step` (counted from 1): validation and a checkpoint when due, and a stop when asked
// (pre-emption: this step's checkpoint, then a distinct exit). Returns the exit code, or -1 to go on.
int after_step(Run& run, model::Model& gpt, const AdamW& opt, int step, const StopSignals& stop) {
  const TrainOptions& o = run.o;
  const bool last = step == o.steps;
  if ((o.eval_interval > 0 && step % o.eval_interval == 0) || last) validate(run, gpt, step);
  const bool saves = (o.checkpoint_interval > 0 && step % o.checkpoint_interval == 0) || last;
  if (saves) {
    run.last_dir = save_step_checkpoint(o, gpt, opt, step, run.world, run.dp, run.tokenizer);
    char note[256];
    std::snprintf(note, sizeof note, "step %5d/%d | checkpoint saved to %s", step, o.steps, run.last_dir.c_str());
    run.progress.note(note);
  }
  const int signal = stop.agreed(run.world);
  if (signal == 0 || last) return -1;
  if (!saves) run.last_dir = save_step_checkpoint(o, gpt, opt, step, run.world, run.dp, run.tokenizer);
  run.progress.note(std::string("stopped by ") + StopSignals::name(signal) + " after step " + std::to_string(step) +
                    "; its checkpoint is " + run.last_dir + ", continue with --resume " + run.last_dir +
                    " and the same flags (exit code " + std::to_string(kExitStopped) + ")");
  return kExitStopped;
}

// The loop itself, for the model of any layout.
int run_training(const TrainOptions& o, comm::World& world, const DataParallel& dp, model::Model& gpt,
                 const TokenFile& train_data, const TokenFile& val_data, int eval_batches,
                 const text::TokenizerFiles& tokenizer) {
  const int B = o.batch, T = sequence_length(o);
  AdamW opt(gpt.params(), gpt.context(), o.adamw);
  const int start = start_of_run(o, world, dp, gpt, opt);
  OutFolderLock lock;
  MetricsFile metrics(world.rank() == 0 ? o.out + "/metrics.jsonl" : "", !o.resume.empty(),
                      claim_now_or_at_first_write(o, world, lock));
  Progress progress(o, world);
  // Validation reads the same windows in passes of one micro-batch (a copy's pass), so it needs no
  // more activations than a training pass; every copy computes the same loss.
  const int eval_B = B / (dp.replicas * o.grad_accum);
  Run run{o, world, dp, train_data, val_data, eval_B, eval_batches * (B / eval_B), tokenizer, metrics, progress, ""};
  // With data parallelism each block's gradients are summed over the copies as the last micro-batch's
  // backward pass completes it (in flight while the pass goes on with --overlap).
  SumOverCopies sum_over_copies(gpt, dp, o.stage.overlap);
  const std::function<std::string()> kept = [&] {  // what a run that stops early leaves
    return run.last_dir.empty() && o.resume.empty() ? std::string("no checkpoint was written")
                                                    : "the last checkpoint in " + o.out + " is kept";
  };
  if (start == 0 && !o.init_from.empty()) validate(run, gpt, 0);  // the weights the run starts from
  std::vector<int> inputs(static_cast<size_t>(B) * T), targets(inputs.size());
  const auto run_start = std::chrono::steady_clock::now();
  const StopSignals stop;  // from here on SIGTERM and SIGUSR1 stop the run at the next step's end (or the sample)
  for (int step = start; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    sample_batch(inputs.data(), targets.data(), train_data, B, T, o.seed, static_cast<uint64_t>(step));
    const float lr = learning_rate(step, o.steps, o.warmup, o.lr, o.min_lr);
    const StepOutcome s =
        train_step(gpt, dp, opt, {inputs.data(), targets.data(), B, T, o.grad_accum, step, o.grad_clip, lr},
                   finite_checks(o, world, gpt, progress, step, kept));
    if (!s.updated) return 1;
    core::synchronize(gpt.context());  // a GPU's queued work is part of the step's time
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    progress.step(step, s.loss, s.norm, lr, ms, 1000.0 * B * T / ms, step - start + 1, elapsed);
    metrics.write(step_metrics(step + 1, s, lr, ms, 1000.0 * B * T / ms, *gpt.context().ledger));
    if (const int code = after_step(run, gpt, opt, step + 1, stop); code >= 0) return code;
  }
  print_sample(o, world, run.last_dir, stop);
  return 0;
}

// --data naming a folder written by optimus tokenize: its train.tok is the data, its val.tok the
// validation (unless --val is given), and its tokenizer (when it has either file of one) goes into
// every checkpoint.
void resolve_data_folder(TrainOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = o.data;
  if (!fs::is_directory(dir, ec) || !fs::exists(dir / "train.tok", ec)) return;
  o.data = (dir / "train.tok").string();
  if (o.val.empty() && fs::exists(dir / "val.tok", ec)) o.val = (dir / "val.tok").string();
  for (const char* file : text::Tokenizer::kFiles) {
    if (fs::exists(dir / file, ec)) o.tokenizer = dir.string();
  }
}

// The tokenizer of a --data folder, read whole and checked: its files against each other, and
// against the headers of the token files written with it.
text::TokenizerFiles read_data_tokenizer(const std::string& dir, const TokenFile& train_data,
                                         const TokenFile& val_data) {
  text::TokenizerFiles tokenizer = text::read_tokenizer_files(dir);
  for (const TokenFile* f : {&train_data, &val_data}) {
    if (f->tokenized) text::require_written_with(f->header, f->path, tokenizer);
  }
  return tokenizer;
}

// The data's tokenizer becomes the run's, recorded in every checkpoint (for token files that record
// none, the --data folder's, which rank 0 alone has read — it alone writes). The checkpoint a run
// starts from (--init-from, --resume) must have been trained on it: a tokenizer of its own (recorded,
// or its tokenizer files) is compared with the data's, and one not known gets a note.
void adopt_data_tokenizer(TrainOptions& o, comm::World& world, const TokenFile& train_data, const TokenFile& val_data,
                          const text::TokenizerFiles& tokenizer) {
  o.data_tokenizer = tokenizer_of(train_data).empty() ? tokenizer_of(val_data) : tokenizer_of(train_data);
  if (o.data_tokenizer.empty() && tokenizer.fingerprint != 0) {
    o.data_tokenizer = text::fingerprint_text(tokenizer.fingerprint);
  }
  const std::string dir = o.resume.empty() ? o.init_from : o.resume;
  if (dir.empty()) return;
  const std::string checkpoint = (o.resume.empty() ? "--init-from " : "--resume ") + dir;
  CheckpointTokenizer saved;
  world.agree_on([&] {
    saved = checkpoint_tokenizer(dir);
    require_checkpoint_reads(saved, checkpoint, train_data, "--data");
    require_checkpoint_reads(saved, checkpoint, val_data, "--val");
  });
  note_unknown_tokenizer(world, saved, checkpoint);
}

// A token file decides the vocabulary of a new model; a model that exists already (--init-from)
// must hold every token of the data. Text and token files are not mixed.
void adopt_data_vocabulary(TrainOptions& o, const TokenFile& train_data, const TokenFile& val_data) {
  if (train_data.tokenized != val_data.tokenized) {
    throw core::ConfigError("--data is " + std::string(train_data.tokenized ? "a token file" : "text") +
                            " but --val is " + (val_data.tokenized ? "a token file" : "text") +
                            "; give both from the same tokenizer");
  }
  if (o.init_from.empty()) o.model.vocab_size = std::max(train_data.vocab_size, val_data.vocab_size);
  for (const TokenFile* f : {&train_data, &val_data}) {
    require_vocabulary_holds(*f, o.model.vocab_size, "--init-from " + o.init_from);
  }
}

// Refuses, before anything is allocated, a run whose step this machine cannot hold: each rank's step
// measured by `step_peak` (on the meta device), and with --sample, rank 0's serial sampler beside it.
void require_memory_to_train(const TrainOptions& o, comm::World& world, const StepPeak& step_peak) {
  const RunShape shape{.layout = o.layout,
                       .world_size = world.size(),
                       .data_parallel = o.data_parallel,
                       .grad_accum = o.grad_accum,
                       .config = o.model,
                       .B = o.batch,
                       .T = sequence_length(o),
                       .stage = o.stage,
                       .threads = core::scratch_threads(core::cpu_context())};
  const StepPeak with_sample = [&](const RunShape& s) {
    const bool samples = o.sample_tokens > 0 && s.rank == 0;
    return step_peak(s) + (samples ? step_peak(sampling_shape(o.model)) : 0.0);
  };
  require_run_memory(world, shape, with_sample, "training this model at --batch " + std::to_string(o.batch),
                     "use a smaller --batch, --seq, --layers or --embd, or more processes");
}

}  // namespace

void adopt_checkpoint_model(TrainOptions& o, const model::GPTConfig& saved, const std::vector<std::string>& given) {
  auto was_given = [&](const char* flag) { return std::find(given.begin(), given.end(), flag) != given.end(); };
  auto require_same = [&](const char* flag, int value, const char* key, int saved_value) {
    if (!was_given(flag) || value == saved_value) return;
    throw core::ConfigError(std::string(flag) + " " + std::to_string(value) + " does not match " + key + " " +
                            std::to_string(saved_value) + " of --init-from " + o.init_from + "; give " +
                            std::to_string(saved_value) + " or omit it (the model is read from the checkpoint)");
  };
  require_same("--layers", o.model.n_layer, "n_layer", saved.n_layer);
  require_same("--embd", o.model.n_embd, "n_embd", saved.n_embd);
  require_same("--heads", o.model.n_head, "n_head", saved.n_head);
  if (was_given("--seq") && o.model.n_positions <= 0) {
    throw core::ConfigError("the sequence length (--seq) must be positive, but is " +
                            std::to_string(o.model.n_positions));
  }
  if (was_given("--seq") && o.model.n_positions > saved.n_positions) {
    throw core::ConfigError("--seq " + std::to_string(o.model.n_positions) + " exceeds n_positions " +
                            std::to_string(saved.n_positions) + " of --init-from " + o.init_from + "; use --seq " +
                            std::to_string(saved.n_positions) + " or less");
  }
  o.seq = was_given("--seq") ? o.model.n_positions : saved.n_positions;
  const float dropout = o.model.dropout;
  o.model = saved;
  if (was_given("--dropout")) o.model.dropout = dropout;
}

void require_one_way_to_start(const TrainOptions& o) {
  if (!o.resume.empty() && !o.init_from.empty()) {
    throw core::ConfigError(
        "--init-from starts a new run from a checkpoint's weights and --resume continues the run "
        "that wrote one; give one of them");
  }
  if (o.overwrite && !o.resume.empty()) {
    throw core::ConfigError("--overwrite starts a new run and --resume continues one; give one of them");
  }
}

int train(TrainOptions o, comm::World& world, const StepPeak& step_peak) {
  const int B = o.batch, T = sequence_length(o), D = o.data_parallel;
  if (B <= 0) throw core::ConfigError("the batch size (--batch) must be positive, but is " + std::to_string(B));
  if (o.steps <= 0)
    throw core::ConfigError("the number of steps (--steps) must be positive, but is " + std::to_string(o.steps));
  require_usable_settings(o);
  require_one_way_to_start(o);
  o.model.validate();
  require_data_parallel_fits(o.layout, world.size(), D, B, o.grad_accum, T, o.stage, o.device.device);
  note_unused_overlap(world, o.stage.overlap, o.layout, D);
  if (o.progress != "auto" && o.progress != "live" && o.progress != "lines") {
    throw core::ConfigError("--progress must be auto, live or lines, but is '" + o.progress.substr(0, 40) + "'");
  }

  // Every rank reads the data itself: one that cannot (a file missing on its node) fails them all.
  resolve_data_folder(o);
  TokenFile train_data, val_data;
  const uint64_t max_bytes = data_bytes_per_process(world);
  int eval_batches = 0;
  text::TokenizerFiles tokenizer;  // rank 0's, which writes the checkpoints
  world.agree_on([&] {
    train_data = TokenFile::load(o.data, world.size(), max_bytes);
    val_data = o.val.empty() ? train_data.split_tail(0.1) : TokenFile::load(o.val, world.size(), max_bytes);
    require_same_tokenizer(train_data, val_data, o.tokenizer);
    if (!o.tokenizer.empty() && world.rank() == 0) tokenizer = read_data_tokenizer(o.tokenizer, train_data, val_data);
  });
  adopt_data_tokenizer(o, world, train_data, val_data, tokenizer);
  adopt_data_vocabulary(o, train_data, val_data);  // a token file's vocabulary decides the model's size
  model::require_step_sizes(o.model, {.batch = B, .seq = T, .ranks = world.size() / D, .copies = D});
  if (o.device.device == "cpu") require_memory_to_train(o, world, step_peak);  // the model as the data made it
  world.agree_on([&] {
    require_tokens_for_training(train_data, T);
    const size_t windows = (val_data.tokens.size() - 1) / (static_cast<size_t>(B) * T);
    eval_batches = static_cast<int>(std::clamp<size_t>(windows, 1, static_cast<size_t>(o.eval_batches)));
    require_tokens_for_eval(val_data, B, T, eval_batches);
  });
  check_out_folder(o, world);

  const core::Context ctx = make_context(o.device, world);
  if (ctx.device == core::Device::cuda) world.print0("device: cuda, %s\n", core::cuda_device_report().c_str());
  DataParallel dp(world, D);
  // Said before the model is built: a large one takes a while to initialise.
  auto name = [](const TokenFile& f) {  // "x.txt (first 90%) (1000 bytes)", "train.tok (300 tokens)"
    return f.path + (f.part.empty() ? "" : " (" + f.part + ")") + " (" + std::to_string(f.tokens.size()) +
           (f.tokenized ? " tokens)" : " bytes)");
  };
  const std::string copies = D > 1 ? " (" + std::to_string(D) + " data-parallel copies of the model)" : "";
  world.print0("training %lld parameters, layout %s on %d rank%s%s, on %s, validating on %s; B=%d T=%d\n",
               o.model.num_parameters(), to_string(o.layout), world.size(), world.size() == 1 ? "" : "s",
               copies.c_str(), name(train_data).c_str(), name(val_data).c_str(), B, T);
  std::unique_ptr<comm::Communicator> device;  // outlives the model
  model::StageOptions stage = o.stage;
  if (!o.resume.empty() || !o.init_from.empty()) stage.values = model::InitialValues::loaded;  // start_of_run's
  const LayoutModel built =
      D == 1 ? build_model(o.layout, o.model, o.seed, world, ctx, o.device.device_comm(), stage, device)
             : build_model(o.layout, o.model, o.seed, *dp.model, ctx, stage);
  return run_training(o, world, dp, *built.model, train_data, val_data, eval_batches, tokenizer);
}

}  // namespace optimus::train
