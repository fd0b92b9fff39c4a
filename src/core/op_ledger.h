// The op ledger: what the ops of a run cost, by kind of op — calls, floating-point operations, and
// bytes read and written. Every op in core/cpu/ states its cost once, from its arguments' sizes,
// and records it (core/dispatch.h) on every device: CPU, CUDA and meta. A meta run therefore
// records exactly what a real run of the same shapes does, and chapter 4's time model reads it.
//
// The conventions, which every op's formula follows:
//   - FLOPs: an add, subtract, multiply, divide, compare (max), exp, log, sqrt or tanh is one; a
//     multiply-add is two. A matrix product (M, K)·(K, N) is 2·M·N·K whatever alpha and beta.
//     Attention is counted dense, on all T×T scores of a (sequence, head) pair. Moving numbers
//     (a lookup, a copy, zeroing) is no FLOP. Philox's integer work for a dropout mask is none.
//   - Bytes: each input read once and each output written once, at 4 bytes a number; an output
//     that the op adds into (+=, beta = 1) is also read. An op that looks rows up (an embedding,
//     a target logit) reads the rows it looks up, not the whole table.
//   - Sizes only, never values: a token outside a vocab block counts as if it were inside, so a
//     run on data and a meta run of the same shapes record the same numbers.
//   - One level records: a composite op (matmul_backward, linear_*, layernorm_forward,
//     crossentropy_forward) records nothing itself, its pieces do; an op whose CPU code calls other
//     ops (attention, layernorm_backward) records its whole cost and runs those calls unrecorded.
// Copies between the host and a device are not ops and are not recorded.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace optimus::core {

enum class OpKind {
  matmul,        // matrix products (the linears, the LM head)
  attention,     // causal self-attention: scores, softmax, dropout, mixing of v
  layernorm,     // LayerNorm's statistics, normalisation and backward
  crossentropy,  // the softmax cross-entropy's pieces
  elementwise,   // GELU, bias add, residual add, dropout, scale, zero
  reduction,     // sums over many elements: a bias gradient, sum, sum of squares
  embedding,     // token lookup and scatter-add, position add
  optimizer,     // AdamW
};
inline constexpr int kOpKindCount = 8;

const char* op_kind_name(OpKind k);

/// The bytes of n float32 (or int32) numbers.
constexpr int64_t floats(int64_t n) {
  return 4 * n;
}
constexpr int64_t ints(int64_t n) {
  return 4 * n;
}

/// What one call of an op costs. A product (a matmul, attention's per-head products) also says
/// its smallest dimension, which decides how fast a machine runs it (chapter 4's shape classes).
struct OpCost {
  OpKind kind = OpKind::elementwise;
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t min_dim = 0;  // min(M, N, K) of a product (M, K)·(K, N); 0 for an op that is no product
};

/// The cost of two pieces run one after the other (of the first's kind and smallest dimension).
OpCost operator+(const OpCost& a, const OpCost& b);

/// Totals per kind of op. Not thread-safe: ops record from the thread that calls them.
class OpLedger {
 public:
  struct Totals {
    int64_t calls = 0;
    int64_t flops = 0;
    int64_t bytes_read = 0;
    int64_t bytes_written = 0;
    std::map<int64_t, int64_t> flops_by_min_dim;  // products only: FLOPs per smallest dimension
  };

  void record(const OpCost& cost);

  const Totals& of(OpKind k) const { return by_kind_[static_cast<size_t>(k)]; }
  /// The sums over every kind.
  Totals total() const;
  /// Forgets everything recorded.
  void clear() { by_kind_ = {}; }
  /// What was recorded after `earlier` (a copy of this ledger made before): this minus earlier.
  OpLedger since(const OpLedger& earlier) const;

  /// One line per kind: "matmul  calls 12  GFLOP 1.23  read 4.00 MiB  written 1.00 MiB".
  std::string report() const;

  /// Equal when every kind's totals are (written out: the CUDA files are compiled as C++17).
  bool operator==(const OpLedger& other) const;

 private:
  std::array<Totals, kOpKindCount> by_kind_{};
};

/// Wall-clock seconds the CPU spent in each kind of op, summed over calls, when a context carries
/// one (core::Context::clock; dispatch.h starts and stops the clock around each op's CPU code).
/// `optimus bench --op-times` reports them; scripts/calibrate turns them into each kind's rate.
struct OpClock {
  std::array<double, kOpKindCount> seconds{};
  void clear() { seconds = {}; }
};

/// Times one op into a clock from its construction to the end of its scope; nothing without a clock.
class OpStopwatch {
 public:
  OpStopwatch(OpClock* clock, OpKind kind);
  ~OpStopwatch();
  OpStopwatch(const OpStopwatch&) = delete;
  OpStopwatch& operator=(const OpStopwatch&) = delete;

 private:
  OpClock* clock_;
  OpKind kind_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace optimus::core
