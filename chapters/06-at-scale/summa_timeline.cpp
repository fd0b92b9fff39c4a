// Chapter 6's example: one SUMMA product C = A·B (M = N = K = S) on a q×q grid, without and with
// overlap, and the two pieces its timeline is made of, each timed alone: one step's broadcasts (A's
// block along the row, B's down the column) and one step's block product. Without overlap a product
// is q × (broadcasts + product); with it, step t + 1's broadcasts travel during step t's product, so
// it is broadcasts + (q − 1) × max(broadcasts, product) + product if the transfer moves while the
// rank computes. Every time is the slowest rank's, the median of R runs, the two modes alternated.
// Prints one JSON object. Usage: mpirun -np 4 build/chapters/summa_timeline [S [R]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "comm/grid.h"
#include "comm/world.h"
#include "core/ops.h"
#include "tp2d/summa.h"

using namespace optimus;

namespace {

// The slowest rank's time of f, in ms (a barrier first, so everybody starts together).
double timed(comm::Communicator& world, const std::function<void()>& f) {
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  world.all_reduce(&ms, 1, comm::ReduceOp::max);
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [&](comm::World& world) {
    const int S = argc > 1 ? std::atoi(argv[1]) : 768, R = argc > 2 ? std::atoi(argv[2]) : 7;
    const comm::Grid2D waits(world.comm()), overlaps(world.comm(), /*overlap=*/true);
    const int q = waits.q(), b = S / q;
    if (S <= 0 || S % q != 0 || R <= 0) {
      world.print0("usage: summa_timeline [S [R]] with S a positive multiple of q = %d and R > 0\n", q);
      return 2;
    }
    const auto ctx = core::cpu_context();
    std::vector<float> A(size_t(b) * b, 0.5f), B(A.size(), 0.25f), C(A.size()), a_recv(A.size()), b_recv(A.size());

    std::vector<double> off, on, sends, product;
    for (int r = 0; r < R; ++r) {
      off.push_back(timed(world.comm(), [&] { tp2d::summa_ab(ctx, waits, C.data(), A.data(), B.data(), S, S, S); }));
      on.push_back(timed(world.comm(), [&] { tp2d::summa_ab(ctx, overlaps, C.data(), A.data(), B.data(), S, S, S); }));
      sends.push_back(timed(world.comm(), [&] {  // step 0's two broadcasts, as summa_ab starts them
        float* a = waits.j() == 0 ? A.data() : a_recv.data();
        float* bb = waits.i() == 0 ? B.data() : b_recv.data();
        comm::Request ra = waits.row_comm().start_broadcast(a, int64_t{b} * b, 0);
        comm::Request rb = waits.col_comm().start_broadcast(bb, int64_t{b} * b, 0);
        ra.wait();
        rb.wait();
      }));
      product.push_back(timed(world.comm(), [&] {
        core::matmul(ctx, C.data(), A.data(), B.data(), b, b, b, core::Trans::no, core::Trans::no, 1.0f, 1.0f);
      }));
    }
    const double t_send = median(sends), t_mm = median(product);
    world.print0(
        "{\"what\": \"summa_ab timeline\", \"q\": %d, \"S\": %d, \"block\": %d, \"repeats\": %d, "
        "\"broadcasts_ms\": %.3f, \"block_product_ms\": %.3f, \"product_ms_without_overlap\": %.3f, "
        "\"product_ms_with_overlap\": %.3f, \"pieces_without_overlap_ms\": %.3f, \"pieces_with_overlap_ms\": %.3f}\n",
        q, S, b, R, t_send, t_mm, median(off), median(on), q * (t_send + t_mm),
        t_send + (q - 1) * std::max(t_send, t_mm) + t_mm);
    return 0;
  });
}
