// The model's own matrix products, built from a stage's shapes (each layout's row of the layout
// table picks its sizes) and timed on the bench's device: the reference that `optimus bench`
// divides the model's FLOP rate by.
#include "train/gemm_reference.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "train/timing.h"

namespace optimus::train {

namespace {

using core::Trans;

Trans flipped(Trans t) {
  return t == Trans::no ? Trans::yes : Trans::no;
}

// The two products core::matmul_backward runs for c = op(a)·op(b) of (M, N, K), each adding into
// its gradient: da's, then db's (a gradient is stored like its operand, so a transposed operand's
// gradient is the transposed product). SUMMA's backward (tp2d/summa.cpp) is the same algebra.
std::array<GemmProduct, 2> backward_of(const GemmProduct& p, int64_t count) {
  const auto [M, N, K] = std::tuple{p.M, p.N, p.K};
  GemmProduct da = p.ta == Trans::no ? GemmProduct{M, K, N, Trans::no, flipped(p.tb)}  // dc · op(b)ᵀ
                                     : GemmProduct{K, M, N, p.tb, Trans::yes};         // op(b) · dcᵀ
  GemmProduct db = p.tb == Trans::no ? GemmProduct{K, N, M, flipped(p.ta), Trans::no}  // op(a)ᵀ · dc
                                     : GemmProduct{N, K, M, Trans::yes, p.ta};         // dcᵀ · op(a)
  for (GemmProduct* g : {&da, &db}) g->accumulates = true, g->count = count;
  return {da, db};
}

// A product run `forward` times in the forward pass and `backward` times differentiated.
void add_product(std::vector<GemmProduct>& out, GemmProduct p, int64_t forward, int64_t backward) {
  p.count = forward;
  out.push_back(p);
  for (const GemmProduct& g : backward_of(p, backward)) out.push_back(g);
}

// The same product, the same way (its transposes and whether it adds into C).
bool same_shape(const GemmProduct& a, const GemmProduct& b) {
  return std::tie(a.M, a.N, a.K, a.ta, a.tb, a.accumulates) == std::tie(b.M, b.N, b.K, b.ta, b.tb, b.accumulates);
}

// Each distinct product once, its count the sum of its entries'.
std::vector<GemmProduct> distinct(const std::vector<GemmProduct>& products) {
  std::vector<GemmProduct> out;
  for (const GemmProduct& p : products) {
    auto it = std::find_if(out.begin(), out.end(), [&](const GemmProduct& d) { return same_shape(d, p); });
    if (it == out.end()) {
      out.push_back(p);
    } else {
      it->count += p.count;
    }
  }
  return out;
}

// `calls` calls of the product, in ms, from a synchronised device to a synchronised device.
double time_calls(const core::Context& ctx, const GemmProduct& p, const float* a, const float* b, float* c, int calls) {
  core::synchronize(ctx);
  const auto t0 = Clock::now();
  for (int k = 0; k < calls; ++k) {
    core::matmul(ctx, c, a, b, p.M, p.N, p.K, p.ta, p.tb, 1.0f, p.accumulates ? 1.0f : 0.0f);
  }
  core::synchronize(ctx);
  return ms_since(t0);
}

// The median ms of one call of `p`: one warm-up call, then `repeats` timings of enough calls to
// last a few milliseconds: longer than a launch or the clock's tick, and than the scheduler's slice
// when more ranks than cores share the machine (a shorter timing could fall in one rank's slice
// and see a core of its own).
double median_call_ms(const core::Context& ctx, const GemmProduct& p, int repeats) {
  constexpr double kTimingMs = 5.0;
  constexpr int kMaxCalls = 64;
  // a (M, K) or (K, M), b (K, N) or (N, K), c (M, N)
  core::Buffer a(*ctx.ledger, core::MemoryCategory::workspace, {p.M, p.K}, ctx.device),
      b(*ctx.ledger, core::MemoryCategory::workspace, {p.K, p.N}, ctx.device),
      c(*ctx.ledger, core::MemoryCategory::workspace, {p.M, p.N}, ctx.device);
  std::vector<float> host(static_cast<size_t>(std::max(a.numel(), b.numel())));
  for (size_t k = 0; k < host.size(); ++k) host[k] = 1.0f / static_cast<float>(1 + k % 7);
  core::copy_to_device(ctx, a.data(), host.data(), a.numel());
  core::copy_to_device(ctx, b.data(), host.data(), b.numel());
  core::zero(ctx, c.data(), c.numel());
  const double warm_ms = time_calls(ctx, p, a.data(), b.data(), c.data(), 1);
  const int calls = std::clamp(static_cast<int>(kTimingMs / std::max(warm_ms, 1e-6)), 1, kMaxCalls);
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) ms.push_back(time_calls(ctx, p, a.data(), b.data(), c.data(), calls) / calls);
  return median(ms);
}

}  // namespace

// The products of a pass as the stage calls them, in the sizes it passes: serial's full widths,
// 1D's local ones (qkv and fc split by columns over p ranks, the two projections by rows, the LM
// head over a vocabulary part of `vocab` rows), 2D's full ones (SUMMA cuts them into blocks).
// Each linear is in (rows, c_in) · W (c_in, c_out); the tied LM head lnf (rows, C) · wte (vocab, C)ᵀ.
std::vector<GemmProduct> stage_products(const model::GPTConfig& config, int p, int rows, int vocab,
                                        model::Recompute recompute) {
  const int C = config.n_embd, F = config.ffn();
  const int64_t L = config.n_layer, forward = recompute == model::Recompute::block ? 2 * L : L;
  // (c_in, c_out) of c_attn, the attention's c_proj, c_fc and the MLP's c_proj
  const int linears[4][2] = {{C, 3 * C / p}, {C / p, C}, {C, F / p}, {F / p, C}};
  std::vector<GemmProduct> out;
  for (const auto& [c_in, c_out] : linears) {
    add_product(out, {rows, c_out, c_in, Trans::no, Trans::no}, forward, L);  // (rows, c_out) = in · W
  }
  add_product(out, {rows, vocab, C, Trans::no, Trans::yes}, 1, 1);  // logits (rows, vocab) = lnf · wteᵀ
  return out;
}

// SUMMA on a q×q grid runs a product of (M, N, K) as q block products of (M/q, N/q, K/q), one a
// step, with the product's transposes. C = A·B adds every step's block into C; A·Bᵀ and Aᵀ·B write
// all but one of theirs into a fresh partial for the reduction.
std::vector<GemmProduct> summa_blocks(const std::vector<GemmProduct>& full, int q) {
  std::vector<GemmProduct> out;
  for (GemmProduct p : full) {
    p.M /= q, p.N /= q, p.K /= q, p.count *= q;
    p.accumulates = p.ta == Trans::no && p.tb == Trans::no;
    out.push_back(p);
  }
  return out;
}

std::vector<GemmProduct> cube_blocks(const std::vector<GemmProduct>& full, int q) {
  std::vector<GemmProduct> out;
  for (GemmProduct p : full) {
    p.M /= q, p.N /= q, p.K /= q;
    p.accumulates = false;
    out.push_back(p);
  }
  return out;
}

std::vector<GemmProduct> pass_products(const model::GPTConfig& config, Layout layout, int ranks, int rows,
                                       model::Recompute recompute) {
  return definition(layout).products(config, ranks, rows, recompute);
}

int64_t total_flops(const std::vector<GemmProduct>& products) {
  int64_t sum = 0;
  for (const GemmProduct& p : products) sum += p.flops() * p.count;
  return sum;
}

double measure_products_gflops(const core::Context& device, const std::vector<GemmProduct>& products, int repeats) {
  core::MemoryLedger ledger;  // the products' buffers are not the model's
  core::Context ctx = device;
  ctx.ledger = &ledger, ctx.ops = nullptr, ctx.clock = nullptr;  // nor their ops
  double flops = 0.0, ms = 0.0;
  for (const GemmProduct& p : distinct(products)) {
    flops += static_cast<double>(p.flops()) * static_cast<double>(p.count);
    ms += static_cast<double>(p.count) * median_call_ms(ctx, p, repeats);
  }
  return flops / (ms * 1e6);
}

}  // namespace optimus::train
