// The 3D attention sub-layer against the serial one (L2), on a q×q×q world: LayerNorm, c_attn
// (standard, its columns grouped by heads: tp3d::qkv_spec_3d), attention on each rank's own
// (sequences, head group), c_proj (exchanged) and the residual add, forward and backward, with and
// without dropout on the attention probabilities. Every rank computes the serial result on the
// full tensors and compares its own pieces; 1-D parameter gradients are summed over the q² ranks
// holding the same block first. Attention itself must call no collective.
// Shapes: B = 2q² sequences of T = 4, NH = 2q heads of 3, so C = 6q, a multiple of q² for q = 2, 3.
#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "core/errors.h"
#include "core/ops.h"
#include "cube_pieces.h"
#include "model/shard.h"
#include "serial_layers.h"
#include "tp3d/attention.h"
#include "tp3d/layers.h"

using namespace optimus;
using equivalence::AttentionParams;
using equivalence::AttentionResult;
using equivalence::Operand;
using equivalence::part;
using equivalence::piece_of;
using equivalence::summed_over;
using tp3d::Orientation;

namespace {

constexpr Orientation kStandard = Orientation::standard, kExchanged = Orientation::exchanged;

std::vector<float> normal(int64_t n, float scale, int salt) {  // the same full tensor on every rank
  return equivalence::normal_data(n, scale, {9u, 0x3a00u + static_cast<uint32_t>(salt)});
}

struct Sizes {
  int q, B, T, NH, C, N;
  float eps = 1e-5f;
  explicit Sizes(int q_) : q(q_), B(2 * q_ * q_), T(4), NH(2 * q_), C(6 * q_), N(B * T) {}
};

// The dropout of the attention probabilities of the pairs `mine` in the canonical (B, NH, T·T).
core::DropoutSpec attention_dropout(float p, const Sizes& s, const tp3d::AttentionPairs& mine) {
  core::DropoutSpec d;
  d.p = p, d.key = core::dropout_key(13, 0, core::DropoutSite::attention_probs), d.step = 3;
  const int64_t dims[3] = {mine.Bl, mine.NHl, int64_t{s.T} * s.T}, offsets[3] = {mine.b0, mine.h0, 0},
                global[3] = {s.B, s.NH, int64_t{s.T} * s.T};
  for (int a = 0; a < 3; ++a)
    d.block.dim[a] = dims[a], d.block.offset[a] = offsets[a], d.block.global_dim[a] = global[a];
  return d;
}

std::vector<float> shard(const std::vector<float>& full, const model::ShardSpec& spec) {
  std::vector<float> local(static_cast<size_t>(spec.local_numel()));
  model::scatter_from_canonical(local.data(), full.data(), spec);
  return local;
}

// My pieces of the sub-layer's parameters (or of their gradients): ln_1's weight and bias, the
// block j of a standard X's columns; c_attn's by qkv_spec_3d; c_proj's weight, an exchanged W
// piece, and bias, the block j of an exchanged Y's columns.
AttentionParams pieces_of(const comm::Grid3D& cube, const AttentionParams& full, int C) {
  const int q = cube.q(), i = cube.i(), j = cube.j(), k = cube.k();
  return {part(full.ln_w, q, j),
          part(full.ln_b, q, j),
          shard(full.w_attn, tp3d::qkv_spec_3d({C, 3 * C}, q, i, j, k)),
          shard(full.b_attn, tp3d::qkv_spec_3d({3 * C}, q, i, j, k)),
          piece_of(full.w_proj, C, C, Operand::W, cube, kExchanged),
          part(full.b_proj, q, j)};
}

// The sub-layer on my pieces: x and dy standard X pieces, w my parameter pieces. Returns my pieces
// of out and of every gradient (the 1-D ones my rows' shares); `attention_calls` the collectives
// attention's forward and backward called.
AttentionResult sublayer_3d(const comm::Grid3D& cube, const Sizes& s, const std::vector<float>& x,
                            const AttentionParams& w, const std::vector<float>& dy, const core::DropoutSpec& drop,
                            int64_t& attention_calls) {
  const auto ctx = core::cpu_context();
  const int q = s.q, N = s.N, C = s.C, Nr = N / (q * q);
  const auto mine = tp3d::attention_pairs_3d(cube, s.B, s.NH);
  const size_t piece = x.size();  // (N/q², C/q)
  std::vector<float> ln(piece), mean(Nr), rstd(Nr), qkv(3 * piece), atty(piece);
  std::vector<float> att(static_cast<size_t>(mine.Bl) * mine.NHl * s.T * s.T);  // (B/q², NH/q, T, T)
  // dinp starts as dy: the residual carries it to x whole.
  AttentionResult r{std::vector<float>(piece), dy, equivalence::zeros_like(w)};
  auto& ledger = cube.world().ledger();
  tp3d::layernorm_3d_forward(ctx, cube, ln.data(), mean.data(), rstd.data(), x.data(), w.ln_w.data(), w.ln_b.data(), N,
                             C, s.eps, kStandard);
  tp3d::linear_3d_forward(ctx, cube, qkv.data(), ln.data(), w.w_attn.data(), w.b_attn.data(), N, C, 3 * C, kStandard);
  auto before = ledger.snapshot();
  tp3d::attention_3d_forward(ctx, cube, atty.data(), att.data(), qkv.data(), s.B, s.T, C, s.NH, drop);
  attention_calls = ledger.since(before).calls();
  tp3d::linear_3d_forward(ctx, cube, r.out.data(), atty.data(), w.w_proj.data(), w.b_proj.data(), N, C, C, kExchanged);
  core::residual_forward(ctx, r.out.data(), r.out.data(), x.data(), static_cast<int64_t>(piece));  // same layout

  std::vector<float> d_atty(piece, 0.0f), d_qkv(3 * piece, 0.0f), d_att(att.size()), d_ln(piece, 0.0f);
  AttentionParams& g = r.grads;
  tp3d::linear_3d_backward(ctx, cube, {.dinp = d_atty.data(), .dweight = g.w_proj.data(), .dbias = g.b_proj.data()},
                           dy.data(), atty.data(), w.w_proj.data(), N, C, C, kExchanged);
  before = ledger.snapshot();
  tp3d::attention_3d_backward(ctx, cube, d_qkv.data(), d_att.data(), d_atty.data(), qkv.data(), att.data(), s.B, s.T, C,
                              s.NH, drop);
  attention_calls += ledger.since(before).calls();
  tp3d::linear_3d_backward(ctx, cube, {.dinp = d_ln.data(), .dweight = g.w_attn.data(), .dbias = g.b_attn.data()},
                           d_qkv.data(), ln.data(), w.w_attn.data(), N, C, 3 * C, kStandard);
  tp3d::layernorm_3d_backward(ctx, cube, {.dinp = r.dinp.data(), .dweight = g.ln_w.data(), .dbias = g.ln_b.data()},
                              d_ln.data(), x.data(), w.ln_w.data(), mean.data(), rstd.data(), N, C, kStandard);
  return r;
}

// Reports one comparison under "3D attention sub-layer <what> p=<p> q=<q>" and returns this rank's error.
double check(const comm::Grid3D& cube, float p, const std::string& what, const std::vector<float>& got,
             const std::vector<float>& want) {
  const double e = equivalence::rel_error(got, want);
  std::ostringstream tag;
  tag << "L2 3D attention sub-layer " << what << " p=" << p << " q=" << cube.q();
  equivalence::report(tag.str(), equivalence::worst_over_ranks(e));
  return e;
}

// The 3D sub-layer against serial with dropout p on the attention probabilities; true when every
// piece agrees within 1e-5 and attention called no collective.
bool sublayer_as_serial(const comm::Grid3D& cube, float p) {
  const Sizes s(cube.q());
  const int N = s.N, C = s.C;
  const auto x = normal(int64_t{N} * C, 1.0f, 1), dy = normal(int64_t{N} * C, 1.0f, 2);
  const AttentionParams w{normal(C, 0.5f, 3),
                          normal(C, 0.5f, 4),
                          normal(int64_t{C} * 3 * C, 0.4f, 5),
                          normal(3 * C, 0.2f, 6),
                          normal(int64_t{C} * C, 0.4f, 7),
                          normal(C, 0.2f, 8)};
  const auto serial =
      equivalence::serial_attention(x, w, dy, s.B, s.T, C, s.NH, s.eps, attention_dropout(p, s, {0, s.B, 0, s.NH}));

  int64_t attention_calls = -1;
  const auto got = sublayer_3d(cube, s, piece_of(x, N, C, Operand::X, cube), pieces_of(cube, w, C),
                               piece_of(dy, N, C, Operand::X, cube),
                               attention_dropout(p, s, tp3d::attention_pairs_3d(cube, s.B, s.NH)), attention_calls);
  const AttentionParams want = pieces_of(cube, serial.grads, C);
  // A 1-D parameter's block is held along the two lines other than the one whose index picks it:
  // ln_1's (j, a standard X's columns) along `out` and `rows` of the standard lines, c_attn's bias
  // (k) along their `in` and `rows`, c_proj's bias (j, an exchanged Y's columns) along the
  // exchanged lines' `in` and `rows`.
  const auto standard = tp3d::lines(cube, kStandard), exchanged = tp3d::lines(cube, kExchanged);
  const double e = equivalence::worst_of(
      {check(cube, p, "out", got.out, piece_of(serial.out, N, C, Operand::X, cube)),
       check(cube, p, "dinp", got.dinp, piece_of(serial.dinp, N, C, Operand::X, cube)),
       check(cube, p, "d ln_1.weight (summed)", summed_over(standard.out, standard.rows, got.grads.ln_w), want.ln_w),
       check(cube, p, "d ln_1.bias (summed)", summed_over(standard.out, standard.rows, got.grads.ln_b), want.ln_b),
       check(cube, p, "d c_attn.weight", got.grads.w_attn, want.w_attn),
       check(cube, p, "d c_attn.bias (summed)", summed_over(standard.in, standard.rows, got.grads.b_attn), want.b_attn),
       check(cube, p, "d c_proj.weight", got.grads.w_proj, want.w_proj),
       check(cube, p, "d c_proj.bias (summed)", summed_over(exchanged.in, exchanged.rows, got.grads.b_proj),
             want.b_proj)});
  equivalence::report_count("3D attention's collectives, forward and backward, q=" + std::to_string(s.q),
                            attention_calls, 0);
  return e <= 1e-5 && attention_calls == 0;
}

}  // namespace

TEST_CASE(
    "3D attention sub-layer (LayerNorm, c_attn standard, local attention, c_proj exchanged, residual) equals "
    "serial, without and with dropout on the attention probabilities",
    "[tp3d_attention]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  MPI_REQUIRE(sublayer_as_serial(cube, 0.0f));
  MPI_REQUIRE(sublayer_as_serial(cube, 0.25f));  // each rank drops its own block of the canonical probabilities
}

TEST_CASE(
    "3D attention refuses a batch or head count that does not divide, and a misplaced dropout block, "
    "before communicating",
    "[tp3d_attention]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const int q = cube.q();
  if (q == 1) return;  // every size divides
  const auto ctx = core::cpu_context();
  std::vector<float> buffer(64);
  float* p = buffer.data();
  auto& ledger = cube.world().ledger();
  const auto before = ledger.snapshot();
  const core::DropoutSpec none{};
  std::string message;
  try {
    tp3d::attention_3d_forward(ctx, cube, p, p, p, q, 1, q, q, none);
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  MPI_REQUIRE(message == "3D attention needs B (the sequences) = " + std::to_string(q) +
                             " to be a positive multiple of q² = " + std::to_string(q * q) +
                             ", since each of qkv's q² row pieces must be whole sequences; pad the matrices or "
                             "choose another cube");
  MPI_REQUIRE_THROWS_AS(tp3d::attention_3d_backward(ctx, cube, p, p, p, p, p, q * q, 1, q + 1, q + 1, none),
                        core::ConfigError);
  const Sizes s(q);
  auto elsewhere = attention_dropout(0.1f, s, tp3d::attention_pairs_3d(cube, s.B, s.NH));
  elsewhere.block.offset[1] = (elsewhere.block.offset[1] + s.NH / q) % s.NH;  // the next head group's
  MPI_REQUIRE_THROWS_AS(tp3d::attention_3d_forward(ctx, cube, p, p, p, s.B, s.T, s.C, s.NH, elsewhere),
                        std::invalid_argument);
  MPI_REQUIRE(ledger.since(before).calls() == 0);
}
