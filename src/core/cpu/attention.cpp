// Causal self-attention on the CPU: per (sequence, head) pair of a rank's block,
// scores = q·kᵀ/√HS, causal softmax, Philox dropout on the probabilities, out = att·v. The pairs
// are independent: one OpenMP loop runs them, each with single-threaded sgemms reading q, k, v in
// place from qkv (row stride 3C), and dropout_forward on the pair's (1, 1, T*T) piece of the
// canonical block (its own loop runs on one thread there), so every layout drops the same
// probabilities. Backward recomputes the mask rather than storing the dropped probabilities.
// The products skip what the causal mask zeroes: they run in blocks of kCausalBlock query rows
// (or key columns), each over the keys (or queries) that block can see, about 5/8 of the dense
// work at T = 256. The probabilities are still stored as the whole (T, T) square, zeros above the
// diagonal, and the cost recorded is the dense one (the convention every layout's ledger uses).
// Each op records its whole cost (a GPU runs it as one call) and runs its products and dropout
// unrecorded. A meta context records the CPU's scratch too, so its memory ledger is a CPU run's,
// for the threads it plans for (core::scratch_threads).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/cpu/causal_softmax.h"
#include "core/cpu/single_threaded_blas.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::core {

namespace {

void check_dropout_block(const DropoutSpec& drop, int B, int NH, int T, const char* op) {
  if (drop.p == 0.0f) return;
  const GlobalBlock& g = drop.block;
  if (g.dim[0] != B || g.dim[1] != NH || g.dim[2] != static_cast<int64_t>(T) * T || g.global_dim[2] != g.dim[2]) {
    std::ostringstream msg;
    msg << op << ": drop.block is (" << g.dim[0] << ", " << g.dim[1] << ", " << g.dim[2]
        << ") but must be (B, NH, T*T) = (" << B << ", " << NH << ", " << static_cast<int64_t>(T) * T
        << ") inside a canonical (B_total, NH_total, T*T)";
    throw std::invalid_argument(msg.str());
  }
}

// The (1, 1, T*T) piece of the (B, NH, T*T) dropout block that belongs to pair (b, h).
DropoutSpec pair_dropout(const DropoutSpec& drop, int b, int h) {
  DropoutSpec spec = drop;
  spec.block.dim[0] = 1;
  spec.block.dim[1] = 1;
  spec.block.offset[0] += b;
  spec.block.offset[1] += h;
  return spec;
}

// Rows (or columns) of the (T, T) scores one blocked product covers. A multiple of the sgemm
// kernels' tile, small enough that the skipped triangle is most of what lies above the diagonal.
constexpr int kCausalBlock = 64;

// Query rows [t0, t0 + rows) see keys [0, t0 + rows): body(t0, rows, t0 + rows) for each block.
template <typename Body>
void for_each_query_block(int T, const Body& body) {
  for (int t0 = 0; t0 < T; t0 += kCausalBlock) {
    const int rows = std::min(kCausalBlock, T - t0);
    body(t0, rows, t0 + rows);
  }
}

// Key columns [s0, s0 + cols) are seen by queries [s0, T): body(s0, cols, T - s0) for each block.
template <typename Body>
void for_each_key_block(int T, const Body& body) {
  for (int s0 = 0; s0 < T; s0 += kCausalBlock) body(s0, std::min(kCausalBlock, T - s0), T - s0);
}

// The sizes both passes work in: a head's width HS, qkv's row stride 3C, a (T, T) slot TT, and
// the scores' scale 1/√HS.
struct HeadSizes {
  int HS, C3;
  int64_t TT;
  float score_scale;
};

HeadSizes head_sizes(int T, int C, int NH) {
  const int HS = C / NH;
  return {HS, 3 * C, static_cast<int64_t>(T) * T, 1.0f / std::sqrt(static_cast<float>(HS))};
}

// `slots` (T, T) slots per thread the op plans for, for what dropout needs; none without it.
// Recorded in the context's ledger on every device (a meta ledger is a CPU run's).
Buffer dropout_slots(const Context& ctx, const DropoutSpec& drop, int slots, int64_t TT) {
  return Buffer(*ctx.ledger, MemoryCategory::workspace, {drop.p > 0.0f ? scratch_threads(ctx) : 0, slots, TT},
                ctx.device);  // (threads, slots, T*T)
}

// Runs body(pieces, b, h) for each of the B·NH (sequence, head) pairs: one OpenMP loop over the
// pairs, single-threaded BLAS inside. `pieces` is the context unrecorded (the op has recorded its
// whole cost) for the products and the dropout of a pair. A meta context runs none: it only records.
template <typename Body>
void for_each_head(const Context& ctx, int B, int NH, const Body& body) {
  if (ctx.device == Device::meta) return;
  const Context pieces = unrecorded(ctx);
  SingleThreadedBlas one_blas_thread;
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) body(pieces, bh / NH, bh % NH);
}

// ---- costs (op_ledger.h's conventions), dense on the T×T scores of each of the B·NH pairs ------
// Forward: scores q·kᵀ 2·T²·HS; softmax five per score (max, subtract, exp, sum, scale by
// 1 / sum); dropout one per score when p > 0; att·v 2·T²·HS. Backward: dv and d(att) 2·T²·HS
// each; the softmax backward four per score (the dot's multiply-add, subtract, multiply); dq and
// dk 2·T²·HS each; with dropout, its mask recomputed (one) and its backward (two) per score.

OpCost attention_forward_cost(int64_t B, int64_t T, int64_t C, int64_t NH, float p) {
  const int64_t HS = C / NH, TT = T * T;
  return {.kind = OpKind::attention,
          .flops = B * NH * (4 * TT * HS + 5 * TT + (p > 0.0f ? TT : 0)),
          .bytes_read = floats(B * T * 3 * C),               // qkv
          .bytes_written = floats(B * T * C + B * NH * TT),  // out, att
          .min_dim = std::min(T, HS)};
}

OpCost attention_backward_cost(int64_t B, int64_t T, int64_t C, int64_t NH, float p) {
  const int64_t HS = C / NH, TT = T * T;
  return {.kind = OpKind::attention,
          .flops = B * NH * (8 * TT * HS + 4 * TT + (p > 0.0f ? 3 * TT : 0)),
          .bytes_read = floats(B * T * C + 2 * B * T * 3 * C + B * NH * TT),  // dout, qkv, dqkv, att
          .bytes_written = floats(B * T * 3 * C + B * NH * TT),               // dqkv, datt
          .min_dim = std::min(T, HS)};
}

}  // namespace

void attention_forward(const Context& ctx, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutSpec& drop) {
  check_dropout_block(drop, B, NH, T, __func__);  // before the dispatch: one check for both devices
  const OpStopwatch stopwatch = record_op(ctx, attention_forward_cost(B, T, C, NH, drop.p));
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::attention_forward(ctx, out, att, qkv, B, T, C, NH, drop));
  const auto [HS, C3, TT, score_scale] = head_sizes(T, C, NH);
  Buffer dropped = dropout_slots(ctx, drop, 1, TT);  // the dropped probabilities

  for_each_head(ctx, B, NH, [&](const Context& pieces, int b, int h) {
    const float* q = qkv + static_cast<int64_t>(b) * T * C3 + h * HS;  // (T, HS), row stride 3C
    const float* k = q + C;                                            // (T, HS), row stride 3C
    const float* v = q + 2 * C;                                        // (T, HS), row stride 3C
    float* a = att + (static_cast<int64_t>(b) * NH + h) * TT;          // (T, T)
    float* y = out + static_cast<int64_t>(b) * T * C + h * HS;         // (T, HS), row stride C

    // scores[t0 : t0 + rows, 0 : keys] = score_scale · q[t0 : t0 + rows] · k[0 : keys]ᵀ
    for_each_query_block(T, [&](int t0, int rows, int keys) {
      matmul_strided(pieces, a + int64_t{t0} * T, T, q + int64_t{t0} * C3, C3, k, C3, rows, keys, HS, Trans::no,
                     Trans::yes, score_scale, 0.0f);
    });
    causal_softmax(a, T);
    const float* a_used = a;  // what multiplies v: the probabilities after dropout
    if (drop.p > 0.0f) {
      float* slot = dropped.data() + omp_get_thread_num() * TT;  // (T, T)
      dropout_forward(pieces, slot, a, pair_dropout(drop, b, h));
      a_used = slot;
    }
    // y[t0 : t0 + rows] = a_used[t0 : t0 + rows, 0 : keys] · v[0 : keys]
    for_each_query_block(T, [&](int t0, int rows, int keys) {
      matmul_strided(pieces, y + int64_t{t0} * C, C, a_used + int64_t{t0} * T, T, v, C3, rows, HS, keys, Trans::no,
                     Trans::no, 1.0f, 0.0f);
    });
  });
}

void attention_backward(const Context& ctx, float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, const DropoutSpec& drop) {
  check_dropout_block(drop, B, NH, T, __func__);  // before the dispatch, as in forward
  if (dqkv == nullptr) return;                    // nothing asked, nothing done or recorded (on every device)
  const OpStopwatch stopwatch = record_op(ctx, attention_backward_cost(B, T, C, NH, drop.p));
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::attention_backward(ctx, dqkv, datt, dout, qkv, att, B, T, C, NH, drop));
  const auto [HS, C3, TT, score_scale] = head_sizes(T, C, NH);
  Buffer scratch = dropout_slots(ctx, drop, 2, TT);  // the dropped probabilities and their gradient

  for_each_head(ctx, B, NH, [&](const Context& pieces, int b, int h) {
    const int64_t offset = static_cast<int64_t>(b) * T * C3 + h * HS;
    const float* q = qkv + offset;                                      // (T, HS), row stride 3C
    const float* k = q + C;                                             // (T, HS), row stride 3C
    const float* v = q + 2 * C;                                         // (T, HS), row stride 3C
    float* dq = dqkv + offset;                                          // (T, HS), row stride 3C
    float* dk = dq + C;                                                 // (T, HS), row stride 3C
    float* dv = dq + 2 * C;                                             // (T, HS), row stride 3C
    const float* dy = dout + static_cast<int64_t>(b) * T * C + h * HS;  // (T, HS), row stride C
    const float* a = att + (static_cast<int64_t>(b) * NH + h) * TT;     // (T, T)
    float* da = datt + (static_cast<int64_t>(b) * NH + h) * TT;         // (T, T)

    // out = a_used · v, where a_used = dropout(a): dv += a_usedᵀ · dy, d(a_used) = dy · vᵀ.
    const float* a_used = a;
    float* da_used = da;
    if (drop.p > 0.0f) {
      float* slots = scratch.data() + omp_get_thread_num() * 2 * TT;  // (2, T, T)
      dropout_forward(pieces, slots, a, pair_dropout(drop, b, h));
      a_used = slots;
      da_used = slots + TT;
    }
    // dv[s0 : s0 + cols] += a_used[s0 : T, s0 : s0 + cols]ᵀ · dy[s0 : T]
    for_each_key_block(T, [&](int s0, int cols, int queries) {
      matmul_strided(pieces, dv + int64_t{s0} * C3, C3, a_used + int64_t{s0} * T + s0, T, dy + int64_t{s0} * C, C, cols,
                     HS, queries, Trans::yes, Trans::no, 1.0f, 1.0f);
    });
    // d(a_used)[t0 : t0 + rows, 0 : keys] = dy[t0 : t0 + rows] · v[0 : keys]ᵀ. The rest of each row
    // is left as it was: the softmax backward reads only s <= t and zeroes the rest.
    for_each_query_block(T, [&](int t0, int rows, int keys) {
      matmul_strided(pieces, da_used + int64_t{t0} * T, T, dy + int64_t{t0} * C, C, v, C3, rows, keys, HS, Trans::no,
                     Trans::yes, 1.0f, 0.0f);
    });
    if (drop.p > 0.0f) {
      std::fill(da, da + TT, 0.0f);
      dropout_backward(pieces, da, da_used, pair_dropout(drop, b, h));
    }
    causal_softmax_backward(da, a, T);  // da: gradient of the probabilities -> of the scores
    // scores = score_scale · q · kᵀ: dq[t0 : t0 + rows] += score_scale · da[t0 : t0 + rows, 0 : keys] · k[0 : keys]
    for_each_query_block(T, [&](int t0, int rows, int keys) {
      matmul_strided(pieces, dq + int64_t{t0} * C3, C3, da + int64_t{t0} * T, T, k, C3, rows, HS, keys, Trans::no,
                     Trans::no, score_scale, 1.0f);
    });
    // dk[s0 : s0 + cols] += score_scale · da[s0 : T, s0 : s0 + cols]ᵀ · q[s0 : T]
    for_each_key_block(T, [&](int s0, int cols, int queries) {
      matmul_strided(pieces, dk + int64_t{s0} * C3, C3, da + int64_t{s0} * T + s0, T, q + int64_t{s0} * C3, C3, cols,
                     HS, queries, Trans::yes, Trans::no, score_scale, 1.0f);
    });
  });
}

}  // namespace optimus::core
