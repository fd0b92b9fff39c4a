// The bench's matrix-product reference (`optimus bench`'s matmul_gflops): the rate at which this
// device runs the model's own GEMMs, the products one rank computes in a training pass of a layout.
// Every linear layer's forward product and its two backward products (d_in = d_out·Wᵀ,
// dW = inᵀ·d_out), and the tied LM head's three, with the shapes and transposes the stages pass to
// core::matmul; attention's per-head products are attention's, not here. Serial runs the full
// shapes, Megatron 1D its column- and row-parallel local shapes and its vocabulary part of the LM
// head, Optimus 2D the q block products of each SUMMA product (chapter 3), 3D one block product of
// each (chapter 7).
#pragma once

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "train/layout.h"

namespace optimus::train {

/// One product C (M, N) = op(A) (M, K) · op(B) (K, N), stored as core::matmul takes it, and how
/// many times one rank runs it in a pass.
struct GemmProduct {
  int M = 0, N = 0, K = 0;
  core::Trans ta = core::Trans::no, tb = core::Trans::no;
  bool accumulates = false;  // beta = 1: it adds into C (the backward products into the gradients)
  int64_t count = 0;         // calls in one forward and backward pass
  /// 2·M·N·K a call (core/op_ledger.h's convention).
  int64_t flops() const { return 2 * int64_t{M} * N * K; }
};

/// The products of a pass as a stage calls them, in the sizes it passes, `forward` counting
/// recomputation: on p ranks, c_attn and c_fc split by columns, the two projections by rows, and the
/// tied LM head over `vocab` rows of wte (serial: p = 1 and the whole vocabulary).
std::vector<GemmProduct> stage_products(const model::GPTConfig& config, int p, int rows, int vocab,
                                        model::Recompute recompute);
/// The same products as SUMMA runs them on a q×q grid: q block products of (M/q, N/q, K/q) each.
std::vector<GemmProduct> summa_blocks(const std::vector<GemmProduct>& full, int q);

/// The same products as the 3D product runs them on a q×q×q cube: one block product of (M/q, N/q,
/// K/q) each, into a partial result that a reduce-scatter then sums.
std::vector<GemmProduct> cube_blocks(const std::vector<GemmProduct>& full, int q);

/// The matrix products one rank of `layout` on `ranks` ranks (a 2D grid: q² of them) runs in one
/// forward and backward pass of `rows` token rows (B·T of the pass: a micro-batch of one model
/// copy), each forward product twice with block recomputation. One entry per call site and shape;
/// entries may repeat a shape. A step of K micro-batches runs the list K times, which leaves its
/// rate the same. The layout's row of the table says which (train/layout.h).
std::vector<GemmProduct> pass_products(const model::GPTConfig& config, Layout layout, int ranks, int rows,
                                       model::Recompute recompute);

/// Σ flops() · count over `products`.
int64_t total_flops(const std::vector<GemmProduct>& products);

/// The rate of `products` on the context's device in GFLOP/s, weighted as a pass runs them:
/// Σ FLOPs ÷ Σ count · (the median time of one call). Identical shapes are timed once; each shape
/// is warmed up, then timed `repeats` times (the median), each timing a few milliseconds long
/// (several calls of a small product), between two synchronisations of the device. One product's
/// operands at a time, on a ledger of their own: the model's memory does not see them.
double measure_products_gflops(const core::Context& ctx, const std::vector<GemmProduct>& products, int repeats = 5);

}  // namespace optimus::train
