// The serial GPT's op ledger against the model's FLOP count written from its shapes, and the same
// model on the meta device: the memory and op ledgers of a CPU run without computing anything, a
// NaN where a value would be, and a GPT-2 124M step at batch 64 measured in a blink.
#include <catch2/catch.hpp>

#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/context.h"
#include "core/memory_ledger.h"
#include "core/op_ledger.h"
#include "serial/gpt.h"
#include "unit/check.h"

namespace {

using namespace optimus;
using core::OpKind;

/// FLOPs by kind of one forward and backward pass of the serial GPT, from the ops' formulas
/// (core/op_ledger.h's conventions) and the model's shapes; `dropout`: p > 0 in training.
struct StepFlops {
  int64_t by_kind[core::kOpKindCount] = {};
  int64_t& operator[](OpKind k) { return by_kind[static_cast<int>(k)]; }
};

StepFlops expected_step_flops(const model::GPTConfig& cfg, int64_t B, int64_t T, bool dropout) {
  const int64_t N = B * T, C = cfg.n_embd, F = cfg.ffn(), V = cfg.vocab_size, NH = cfg.n_head, HS = C / NH,
                L = cfg.n_layer, TT = T * T;
  const int64_t P = dropout ? 1 : 0;
  StepFlops f;
  // The four linears of a block, 2·N·in·out forward and twice that backward (dinp and dweight),
  // and the tied LM head (N, C)·(C, V), forward and backward alike.
  const int64_t block_linears = 2 * N * C * 3 * C + 2 * N * C * C + 2 * N * C * F + 2 * N * F * C;
  f[OpKind::matmul] = L * 3 * block_linears + 3 * 2 * N * C * V;
  // Per (sequence, head) pair: forward 4·T²·HS + 5·T² (+ T² dropout), backward 8·T²·HS + 4·T²
  // (+ 3·T² dropout).
  f[OpKind::attention] = L * B * NH * ((4 * TT * HS + 5 * TT + P * TT) + (8 * TT * HS + 4 * TT + P * 3 * TT));
  // 2L + 1 LayerNorms: forward N·C + N·(3C + 1) + N·(4C + 5), backward 6·N·C + N·(8C + 2) + 4·N·C + N·C.
  f[OpKind::layernorm] = (2 * L + 1) * (N * (8 * C + 6) + N * (19 * C + 2));
  // Forward max N·V, sum of exponentials 3·N·V, losses 3·N; backward N·(6V + 1).
  f[OpKind::crossentropy] = 4 * N * V + 3 * N + N * (6 * V + 1);
  // Forward: the embedding's dropout; per block the four bias adds, two dropouts, two residual
  // adds, GELU (9 per element). Backward: a dropout's backward is 2 per element with p > 0, else
  // 1 (the add); per block two of them and GELU's backward (21 per element).
  const int64_t dropout_bwd = (P ? 2 : 1) * N * C;
  f[OpKind::elementwise] = P * N * C +
                           L * ((3 * N * C + N * C + N * F + N * C) + P * 2 * N * C + 2 * N * C + 9 * N * F) +
                           dropout_bwd + L * (2 * dropout_bwd + 21 * N * F);
  // The loss's sum (N adds); per block the four bias gradients (one add per element of dout).
  f[OpKind::reduction] = N + L * (3 * N * C + N * C + N * F + N * C);
  // The position add forward, the token scatter-add and the position sum backward: N·C adds each.
  f[OpKind::embedding] = 3 * N * C;
  return f;
}

model::GPTConfig small_config() {
  model::GPTConfig cfg;
  cfg.n_layer = 2, cfg.n_embd = 32, cfg.n_head = 4, cfg.n_positions = 16, cfg.vocab_size = 96;
  cfg.dropout = 0.1f;
  return cfg;
}

/// Forward and backward of `gpt` on a fixed batch (B, T) in training mode; returns the loss.
float run_step(serial::GPT& gpt, int B, int T) {
  const auto inputs = testing::random_ints(int64_t{B} * T, gpt.config().vocab_size, 1);
  const auto targets = testing::random_ints(int64_t{B} * T, gpt.config().vocab_size, 2);
  const float loss = gpt.forward(inputs.data(), targets.data(), B, T, /*step=*/1, /*train=*/true);
  gpt.backward();
  return loss;
}

void require_same_memory(const core::MemoryLedger& meta, const core::MemoryLedger& cpu) {
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    CAPTURE(core::memory_category_name(category));
    CHECK(meta.current(category) == cpu.current(category));
    CHECK(meta.peak(category) == cpu.peak(category));
  }
  CHECK(meta.peak_total() == cpu.peak_total());
}

void require_same_ops(const core::OpLedger& meta, const core::OpLedger& cpu) {
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    CAPTURE(core::op_kind_name(kind));
    CHECK(meta.of(kind).calls == cpu.of(kind).calls);
    CHECK(meta.of(kind).flops == cpu.of(kind).flops);
    CHECK(meta.of(kind).bytes_read == cpu.of(kind).bytes_read);
    CHECK(meta.of(kind).bytes_written == cpu.of(kind).bytes_written);
  }
  CHECK(meta == cpu);
}

}  // namespace

TEST_CASE("the serial GPT's forward and backward record the model's FLOP count, kind by kind", "[meta][ledger]") {
  const model::GPTConfig cfg = small_config();
  const int B = 3, T = 16;
  core::MemoryLedger memory;
  core::OpLedger ops;
  serial::GPT gpt(cfg, core::cpu_context(memory, &ops), 7);
  CHECK(ops.total().calls == 0);  // initialisation draws on the host and copies: no op
  const float loss = run_step(gpt, B, T);
  CHECK(std::isfinite(loss));

  StepFlops want = expected_step_flops(cfg, B, T, /*dropout=*/true);
  int64_t want_total = 0;
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    CAPTURE(core::op_kind_name(kind));
    CHECK(ops.of(kind).flops == want[kind]);
    want_total += want[kind];
  }
  CHECK(ops.total().flops == want_total);
  std::printf("serial GPT L%d C%d V%d, batch %dx%d, one forward and backward:\n%s", cfg.n_layer, cfg.n_embd,
              cfg.vocab_size, B, T, ops.report().c_str());
}

TEST_CASE("the serial GPT on a meta context keeps a CPU run's ledgers and says its loss is NaN", "[meta]") {
  const model::GPTConfig cfg = small_config();
  const int B = 3, T = 16;
  core::MemoryLedger cpu_memory, meta_memory;
  core::OpLedger cpu_ops, meta_ops;
  serial::GPT on_cpu(cfg, core::cpu_context(cpu_memory, &cpu_ops), 7);
  // Planned for this CPU's threads: attention's per-thread dropout scratch is then the CPU run's.
  serial::GPT on_meta(cfg, core::meta_context(meta_memory, &meta_ops, omp_get_max_threads()), 7);
  require_same_memory(meta_memory, cpu_memory);  // after construction: parameters and gradients

  const float cpu_loss = run_step(on_cpu, B, T);
  const float meta_loss = run_step(on_meta, B, T);
  require_same_memory(meta_memory, cpu_memory);
  require_same_ops(meta_ops, cpu_ops);
  CHECK(std::isfinite(cpu_loss));
  CHECK(std::isnan(meta_loss));  // the loss is data: meta has none

  // A gathered gradient and the gradient norm are data too.
  const model::ParamTensor& wte = on_meta.params().at("transformer.wte.weight");
  std::vector<float> host(static_cast<size_t>(wte.grad.numel()), 0.0f);
  core::copy_to_host(core::meta_context(meta_memory), host.data(), wte.grad.data(), wte.grad.numel());
  CHECK(std::isnan(host.front()));
  CHECK(std::isnan(on_meta.clip_gradients(1.0f)));
}

TEST_CASE("a meta step's memory is the same whatever the planning machine's OpenMP thread count", "[meta][ledger]") {
  const model::GPTConfig cfg = small_config();  // dropout > 0: attention holds per-thread scratch
  const int B = 3, T = 16;
  // The peaks of one meta step, planned for `planned` threads, on a machine running `here` threads.
  auto peaks = [&](int here, int planned) {
    omp_set_num_threads(here);
    core::MemoryLedger memory;
    serial::GPT gpt(cfg, core::meta_context(memory, nullptr, planned), 7);
    run_step(gpt, B, T);
    return memory.snapshot();
  };
  const int saved = omp_get_max_threads();
  const core::MemorySnapshot one = peaks(1, 1), two = peaks(2, 1), planned_two = peaks(1, 2);
  omp_set_num_threads(saved);
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    CAPTURE(core::memory_category_name(category));
    CHECK(one.peak(category) == two.peak(category));
  }
  CHECK(one.peak_total() == two.peak_total());
  // What the plan depends on instead: the threads it plans for (a (T, T) slot or two each).
  CHECK(planned_two.peak(core::MemoryCategory::workspace) > one.peak(core::MemoryCategory::workspace));
}

TEST_CASE("GPT-2 124M at batch 64 on meta builds and runs a step in well under a second, holding nothing", "[meta]") {
  const model::GPTConfig cfg = model::GPTConfig::named("gpt2");
  const int B = 64, T = 1024;
  core::MemoryLedger memory;
  core::OpLedger ops;
  const auto start = std::chrono::steady_clock::now();
  float loss = 0.0f;
  {
    serial::GPT gpt(cfg, core::meta_context(memory, &ops), 7);
    loss = run_step(gpt, B, T);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double resident_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
  const double ledger_gib = static_cast<double>(memory.peak_total()) / double(1 << 30);

  CHECK(std::isnan(loss));
  CHECK(seconds < 1.0);
  CHECK(ledger_gib > 100.0);           // activations alone: 12 layers of (64, 12, 1024, 1024) probabilities
  CHECK(resident_mib < 512.0);         // the process's peak, whatever the ledger says
  CHECK(memory.current_total() == 0);  // every buffer released with the model
  StepFlops want = expected_step_flops(cfg, B, T, /*dropout=*/false);  // "gpt2" has dropout 0
  int64_t want_total = 0;
  for (int64_t f : want.by_kind) want_total += f;
  CHECK(ops.total().flops == want_total);
  std::printf(
      "GPT-2 124M, batch %dx%d on meta: %.1f GiB at the ledger's peak, %.0f MiB peak resident, %.3g FLOPs "
      "forward and backward, %.3f s\n",
      B, T, ledger_gib, resident_mib, static_cast<double>(ops.total().flops), seconds);
}
