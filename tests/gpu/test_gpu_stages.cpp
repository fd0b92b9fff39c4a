// Each stage on a GPU against the same stage on the CPU (label gpu): serial on 1 rank,
// Megatron 1D on 2 ranks and Optimus 2D on 4 ranks sharing one GPU through the host-staged
// communicator. Same seed, same batches, same dropout masks (Philox on global indices, on both
// devices), so the two runs differ only in the order of float32 sums inside the ops:
//   - initial parameters, gathered from the GPU, bitwise equal to the CPU's (copies only);
//   - after one step with dropout: loss, logits (each rank's tile) and every gradient ≤ 1e-5
//     relative, and the device ledger holds exactly the CPU ledger's parameters, gradients and
//     activations;
//   - over five AdamW steps with clipping: the loss trajectory and the weights ≤ 1e-4 relative
//     (L5: AdamW divides by √v, which magnifies the last bits of small gradients).
// c_attn.bias's key third is compared separately (equivalence/compare.h: its gradient is 0 in exact
// arithmetic, so its relative error is meaningless). Each test's stage calls run inside
// mpi_test::or_abort: a device error on one rank ends the job at once instead of leaving the other
// ranks in a collective until the test's timeout.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "gpu_test.h"
#include "serial/gpt.h"
#include "stage_test.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "train/optimizer.h"

using namespace optimus;
using equivalence::comparable_part;
using equivalence::rel_error;
using equivalence::report;

namespace {

model::GPTConfig small_config() {
  model::GPTConfig c;
  c.n_layer = 2, c.n_embd = 64, c.n_head = 4, c.n_positions = 16, c.vocab_size = 256, c.dropout = 0.1f;
  return c;
}

// A batch (B, T) of token ids, the same on every rank (a pure function of the index).
void make_batch(std::vector<int>& inputs, std::vector<int>& targets, int B, int T, int salt) {
  inputs.resize(static_cast<size_t>(B) * T), targets.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    inputs[k] = static_cast<int>((k * 37 + 11 * salt) % 256);
    targets[k] = static_cast<int>((k * 53 + 7 + salt) % 256);
  }
}

std::string tag(const std::string& layout, const std::string& what) {
  return "gpu " + layout + " p=" + std::to_string(mpi_test::world().size()) + ": " + what;
}

// This rank's copy of a buffer in the memory of ctx, on the host.
std::vector<float> host_copy(const core::Context& ctx, const core::Buffer& b) {
  std::vector<float> x(static_cast<size_t>(b.numel()));
  core::copy_to_host(ctx, x.data(), b.data(), b.numel());
  return x;
}

// The worst relative error over all parameters, canonical tensors gathered over the world's MPI
// from each model's own memory; `which` picks the value or the gradient. Prints the worst.
template <typename Model, typename Which>
double worst_param_error(const Model& gpu, const Model& cpu, Which which, const std::string& what) {
  equivalence::WorstError worst;
  comm::Communicator& host = mpi_test::world().comm();
  for (size_t i = 0; i < gpu.params().tensors.size(); ++i) {
    const auto& g = gpu.params().tensors[i];
    const auto& c = cpu.params().tensors[i];
    const auto full_g = model::gather_canonical(gpu.context(), g, which(g), host, gpu.spec_of());
    const auto full_c = model::gather_canonical(cpu.context(), c, which(c), host, cpu.spec_of());
    worst.add(rel_error(comparable_part(g.info, full_g), comparable_part(c.info, full_c)),
              equivalence::compared_name(g.info));
  }
  report(what + " (worst: " + worst.name + ")", worst.value);
  return worst.value;
}

// The initial parameters, gathered from the GPU, equal the CPU's bit for bit.
template <typename Model>
bool initial_parameters_equal(const Model& gpu, const Model& cpu) {
  comm::Communicator& host = mpi_test::world().comm();
  bool same = true;
  for (size_t i = 0; i < gpu.params().tensors.size(); ++i) {
    const auto& g = gpu.params().tensors[i];
    const auto& c = cpu.params().tensors[i];
    same = same && model::gather_canonical(gpu.context(), g, g.value.data(), host, gpu.spec_of()) ==
                       model::gather_canonical(cpu.context(), c, c.value.data(), host, cpu.spec_of());
  }
  return same;
}

// One training step with dropout on both models, compared (the assertions of the file's header).
template <typename Model>
void check_one_step(Model& gpu, Model& cpu, const core::MemoryLedger& gpu_ledger, const core::MemoryLedger& cpu_ledger,
                    int B, int T, const std::string& layout) {
  MPI_REQUIRE(initial_parameters_equal(gpu, cpu));
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 1);
  gpu.params().zero_grads(), cpu.params().zero_grads();
  const float lg = gpu.forward(in.data(), tg.data(), B, T, 3), lc = cpu.forward(in.data(), tg.data(), B, T, 3);
  gpu.backward(), cpu.backward();

  const double loss_err = std::abs(static_cast<double>(lg) - lc) / std::abs(static_cast<double>(lc));
  report(tag(layout, "loss relative error, GPU vs CPU"), loss_err);
  const double logit_err =
      rel_error(host_copy(gpu.context(), gpu.activations().logits), host_copy(cpu.context(), cpu.activations().logits));
  report(tag(layout, "logits relative error (each rank's tile; rank 0's shown)"), logit_err);
  const double grad_err = worst_param_error(
      gpu, cpu, [](const model::ParamTensor& t) { return t.grad.data(); }, tag(layout, "gradient relative error"));
  const float norm_g = gpu.clip_gradients(0.0f), norm_c = cpu.clip_gradients(0.0f);
  const double norm_err = std::abs(static_cast<double>(norm_g) - norm_c) / norm_c;
  report(tag(layout, "gradient norm relative error"), norm_err);
  bool same_memory = true;
  for (auto cat :
       {core::MemoryCategory::parameters, core::MemoryCategory::gradients, core::MemoryCategory::activations}) {
    same_memory = same_memory && gpu_ledger.peak(cat) == cpu_ledger.peak(cat);
  }
  MPI_CHECK(loss_err <= 1e-5);
  MPI_CHECK(logit_err <= 1e-5);
  MPI_CHECK(grad_err <= 1e-5);
  MPI_CHECK(norm_err <= 1e-5);
  MPI_CHECK(same_memory);
}

// Five AdamW steps with dropout and clipping on both models: losses and weights.
template <typename Model>
void check_five_steps(Model& gpu, Model& cpu, int B, int T, const std::string& layout) {
  train::AdamWOptions ao;
  train::AdamW opt_g(gpu.params(), gpu.context(), ao), opt_c(cpu.params(), cpu.context(), ao);
  double worst_loss = 0.0;
  std::vector<int> in, tg;
  for (int step = 0; step < 5; ++step) {
    make_batch(in, tg, B, T, step);
    gpu.params().zero_grads(), cpu.params().zero_grads();
    const float lg = gpu.forward(in.data(), tg.data(), B, T, static_cast<uint32_t>(step));
    const float lc = cpu.forward(in.data(), tg.data(), B, T, static_cast<uint32_t>(step));
    worst_loss =
        equivalence::worse(worst_loss, std::abs(static_cast<double>(lg) - lc) / std::abs(static_cast<double>(lc)));
    gpu.backward(), cpu.backward();
    gpu.clip_gradients(0.5f), cpu.clip_gradients(0.5f);
    opt_g.update(gpu.params(), 3e-3f), opt_c.update(cpu.params(), 3e-3f);
  }
  report(tag(layout, "worst loss relative error over 5 AdamW steps"), worst_loss);
  const double w_err = worst_param_error(
      gpu, cpu, [](const model::ParamTensor& t) { return t.value.data(); },
      tag(layout, "weight relative error after 5 steps"));
  MPI_CHECK(worst_loss <= 1e-4);
  MPI_CHECK(w_err <= 1e-4);
}

// A CUDA context like the test main's (its stream, its GPU) recording into `ledger`.
core::Context cuda_with(core::MemoryLedger& ledger) {
  core::Context ctx = gpu_test::cuda();
  ctx.ledger = &ledger;
  return ctx;
}

}  // namespace

TEST_CASE("serial GPT on the GPU equals serial on the CPU: one step with dropout, five AdamW steps", "[serial]") {
  const auto cfg = small_config();
  mpi_test::or_abort([&] {
    core::MemoryLedger lg, lc;
    serial::GPT gpu(cfg, cuda_with(lg), 7), cpu(cfg, core::cpu_context(lc), 7);
    check_one_step(gpu, cpu, lg, lc, 4, 16, "serial");
  });
  mpi_test::or_abort([&] {
    serial::GPT gpu(cfg, gpu_test::cuda(), 5), cpu(cfg, gpu_test::cpu(), 5);
    check_five_steps(gpu, cpu, 4, 16, "serial");
  });
}

TEST_CASE("Megatron 1D on the GPU (staged communicator) equals 1D on the CPU", "[tp1d]") {
  auto& world = mpi_test::world();
  const auto cfg = small_config();
  comm::Grid1D grid_cpu(world.comm()), grid_gpu(stage_test::device_world());
  // Chapter 2's 1D, and chapter 5's with sequence parallelism and recomputation.
  const bool chapter5 = GENERATE(false, true);
  const model::StageOptions memory{.recompute = chapter5 ? model::Recompute::block : model::Recompute::none,
                                   .sequence_parallel = chapter5};
  const std::string name = chapter5 ? "1d+sp+recompute" : "1d";
  mpi_test::or_abort([&] {
    core::MemoryLedger lg, lc;
    tp1d::GPT gpu(cfg, cuda_with(lg), 7, grid_gpu, memory), cpu(cfg, core::cpu_context(lc), 7, grid_cpu, memory);
    check_one_step(gpu, cpu, lg, lc, 4, 16, name);
  });
  mpi_test::or_abort([&] {
    tp1d::GPT gpu(cfg, gpu_test::cuda(), 5, grid_gpu, memory), cpu(cfg, gpu_test::cpu(), 5, grid_cpu, memory);
    check_five_steps(gpu, cpu, 4, 16, name);
  });
}

TEST_CASE("Optimus 2D on the GPU equals 2D on the CPU, with and without SUMMA's overlap", "[tp2d]") {
  auto& world = mpi_test::world();
  const auto cfg = small_config();
  // Chapters 5 and 6: with recomputation, and SUMMA overlapped. Over the staged communicator (ranks
  // sharing a GPU) a started collective completes as it starts; over NCCL (one rank per GPU: on one
  // GPU, the 1x1 grid) it runs on the communication stream, ordered by events.
  const bool later = GENERATE(false, true);
  comm::Grid2D grid_cpu(world.comm(), /*overlap=*/later), grid_gpu(stage_test::device_world(), /*overlap=*/later);
  const int B = 2 * grid_cpu.q();
  const model::StageOptions memory{.recompute = later ? model::Recompute::block : model::Recompute::none,
                                   .overlap = later};
  const std::string name = later ? "2d+recompute+overlap" : "2d";
  mpi_test::or_abort([&] {
    core::MemoryLedger lg, lc;
    tp2d::GPT gpu(cfg, cuda_with(lg), 7, grid_gpu, memory), cpu(cfg, core::cpu_context(lc), 7, grid_cpu, memory);
    check_one_step(gpu, cpu, lg, lc, B, 16, name);
  });
  mpi_test::or_abort([&] {
    tp2d::GPT gpu(cfg, gpu_test::cuda(), 5, grid_gpu, memory), cpu(cfg, gpu_test::cpu(), 5, grid_cpu, memory);
    check_five_steps(gpu, cpu, B, 16, name);
  });
}

// Hidden (run by tests/gpu/run_fault.sh): rank 1 alone passes a batch its stage refuses, inside the
// forward pass, while the other ranks go on into the pass's collectives. The test must end every
// rank within seconds with one message, not hang until its timeout.
TEST_CASE("a rank that throws inside a stage call ends every rank", "[.][fault]") {
  auto& world = mpi_test::world();
  comm::Grid2D grid(stage_test::device_world());
  tp2d::GPT model(small_config(), gpu_test::cuda(), 5, grid);
  const int B = 2 * grid.q(), T = 16;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 0);
  const int mine = world.rank() == 1 ? B - 1 : B;  // B − 1 sequences do not split over the grid's rows
  const float loss = mpi_test::or_abort([&] { return model.forward(in.data(), tg.data(), mine, T, 0); });
  MPI_CHECK(std::isfinite(loss));  // reached only if no rank threw
}
