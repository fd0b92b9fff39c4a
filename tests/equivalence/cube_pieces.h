// Helpers of the 3D tests: each rank's piece of a full operand of tp3d::product_3d (X, W or Y, in
// either orientation), the full operand gathered back from the pieces, a 1-D parameter's block and
// its gradient's shares summed, and one call's communication on one line of the cube against its
// formula.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_ledger.h"
#include "comm/grid.h"
#include "compare.h"
#include "tp3d/product.h"

namespace equivalence {

enum class Operand { X, W, Y };

/// Which row piece (of q²) and column block (of q) of an operand rank (i, j, k) holds: product.h's
/// table, with j and k exchanged in the exchanged orientation.
inline std::pair<int, int> piece_position(Operand op, optimus::tp3d::Orientation o, int q, int i, int j, int k) {
  if (o == optimus::tp3d::Orientation::exchanged) std::swap(j, k);
  switch (op) {
    case Operand::X:
      return {i * q + k, j};
    case Operand::W:
      return {j * q + i, k};
    case Operand::Y:
      return {i * q + j, k};
  }
  return {};
}

/// Rank (i, j, k)'s piece (rows/q², cols/q) of a full (rows, cols) operand.
inline std::vector<float> piece_of(const std::vector<float>& full, int rows, int cols, Operand op,
                                   const optimus::comm::Grid3D& cube,
                                   optimus::tp3d::Orientation o = optimus::tp3d::Orientation::standard) {
  const int q = cube.q(), pr = rows / (q * q), pc = cols / q;
  const auto [rb, cb] = piece_position(op, o, q, cube.i(), cube.j(), cube.k());
  std::vector<float> piece(static_cast<size_t>(pr) * pc);
  for (int a = 0; a < pr; ++a) {
    const float* src = full.data() + static_cast<size_t>(rb * pr + a) * cols + cb * pc;
    std::copy(src, src + pc, piece.data() + static_cast<size_t>(a) * pc);
  }
  return piece;
}

/// The full (rows, cols) operand whose pieces the ranks of the cube hold — the inverse of piece_of —
/// on every rank (one all-gather over the cube's world).
inline std::vector<float> gather_pieces(const optimus::comm::Grid3D& cube, const std::vector<float>& piece, int rows,
                                        int cols, Operand op,
                                        optimus::tp3d::Orientation o = optimus::tp3d::Orientation::standard) {
  const int q = cube.q(), pr = rows / (q * q), pc = cols / q;
  const int64_t n = int64_t{pr} * pc;
  std::vector<float> all(static_cast<size_t>(n) * q * q * q), full(static_cast<size_t>(rows) * cols);
  cube.world().all_gather(all.data(), piece.data(), n);
  for (int r = 0; r < q * q * q; ++r) {
    const auto [rb, cb] = piece_position(op, o, q, r / (q * q), r / q % q, r % q);
    for (int a = 0; a < pr; ++a) {
      const float* src = all.data() + r * n + int64_t{a} * pc;
      std::copy(src, src + pc, full.data() + static_cast<size_t>(rb * pr + a) * cols + cb * pc);
    }
  }
  return full;
}

/// Part `index` of `parts` equal parts of a vector (a 1-D parameter's block, or a row piece's statistics).
inline std::vector<float> part(const std::vector<float>& full, int parts, int index) {
  const size_t n = full.size() / static_cast<size_t>(parts);
  return std::vector<float>(full.begin() + static_cast<std::ptrdiff_t>(index * n),
                            full.begin() + static_cast<std::ptrdiff_t>((index + 1) * n));
}

/// A 1-D parameter gradient's shares summed over the q² ranks that hold the same block: those that
/// differ along lines a and b (the model's once-per-step sum).
inline std::vector<float> summed_over(optimus::comm::Communicator& a, optimus::comm::Communicator& b,
                                      std::vector<float> share) {
  a.all_reduce(share.data(), static_cast<int64_t>(share.size()));
  b.all_reduce(share.data(), static_cast<int64_t>(share.size()));
  return share;
}

/// One call's calls and bytes of `op` on the communicator named `comm_name` against the formula;
/// prints both (rank 0). True when both match.
inline bool sent_as_said(const optimus::comm::CommLedger& sent, const std::string& comm_name, optimus::comm::CommOp op,
                         int64_t calls, int64_t bytes, const std::string& what) {
  report_count(what + " " + comm_name + " calls", sent.calls(comm_name, op), calls);
  report_count(what + " " + comm_name + " bytes", sent.bytes(comm_name, op), bytes);
  return sent.calls(comm_name, op) == calls && sent.bytes(comm_name, op) == bytes;
}

}  // namespace equivalence
