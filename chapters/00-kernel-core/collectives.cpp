// Chapter 0's second example: the five collectives of src/comm, through the project's own
// Communicator, on small integer-valued data. Each collective shows what every rank holds before
// and after it (rank 0 prints; the other ranks' buffers reach it by an all-gather of its own), then
// the adjoint identities are checked numerically, both sides printed:
//   ⟨broadcast(x), y⟩ = ⟨x, reduce(y)⟩      ⟨all_gather(x), y⟩ = ⟨x, reduce_scatter(y)⟩
//   ⟨all_reduce(x), y⟩ = ⟨x, all_reduce(y)⟩
// Usage: mpirun -np 4 build/chapters/collectives   (any number of ranks; exit 1 if an identity fails)
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/world.h"

using namespace optimus;
using Ints = std::vector<int32_t>;

namespace {

// Rank 0 prints one line per rank: that rank's n values of buf. Collective (an all-gather).
void show(comm::World& world, const std::string& title, const Ints& buf) {
  const int64_t n = static_cast<int64_t>(buf.size());
  Ints all(world.size() * n);
  world.comm().all_gather(all.data(), buf.data(), n);
  world.print0("%s\n", title.c_str());
  for (int r = 0; r < world.size(); ++r) {
    world.print0("  rank %d:", r);
    for (int64_t k = 0; k < n; ++k) world.print0(" %d", all[r * n + k]);
    world.print0("\n");
  }
}

// ⟨a, b⟩ on this rank, in double (exact for these small integers).
double dot(const Ints& a, const Ints& b) {
  double s = 0.0;
  for (size_t k = 0; k < a.size(); ++k) s += static_cast<double>(a[k]) * b[k];
  return s;
}

// The sum of a per-rank number over all ranks: an inner product over the whole group.
double sum_over_ranks(comm::Communicator& c, double x) {
  c.all_reduce(&x, 1);
  return x;
}

// Prints both sides of an identity; true if they are equal (exactly: the data are integers).
bool report(comm::World& world, const char* identity, double lhs, double rhs) {
  world.print0("  %-44s %8.0f = %-8.0f %s\n", identity, lhs, rhs, lhs == rhs ? "ok" : "DIFFERENT");
  return lhs == rhs;
}

}  // namespace

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [](comm::World& world) {
    comm::Communicator& c = world.comm();
    const int p = c.size(), r = c.rank();
    const int n = 2;                          // elements per rank (per block, for all-gather and reduce-scatter)
    const Ints x = {10 * r + 1, 10 * r + 2};  // rank r's two numbers: r1 r2
    world.print0("p = %d ranks; rank r starts with x_r = (10r + 1, 10r + 2)\n\n", p);

    // Broadcast from rank 0: every rank's buffer becomes rank 0's.
    Ints b = x;
    show(world, "before broadcast(root 0)", b);
    c.broadcast(b.data(), n, /*root=*/0);
    show(world, "after: every rank holds rank 0's (1 2)", b);

    // Reduce to rank 0: rank 0's buffer becomes the element-wise sum; the others' are only read.
    Ints s = x;
    c.reduce(s.data(), n, /*root=*/0);
    show(world, "\nafter reduce(root 0): rank 0 holds the sum, the others are unchanged", s);

    // All-reduce: every rank gets the sum.
    Ints a = x;
    c.all_reduce(a.data(), n);
    show(world, "\nafter all_reduce: every rank holds the sum", a);

    // All-gather: every rank gets every rank's block, in rank order.
    Ints g(p * n);
    c.all_gather(g.data(), x.data(), n);
    show(world, "\nafter all_gather: every rank holds (x_0, x_1, ...)", g);

    // Reduce-scatter: rank r's send (p·n) is y_r[k] = (r + 1)(k + 1); the element-wise sum over
    // ranks is cut in p blocks of n, and rank r keeps block r.
    Ints y(p * n);
    for (int k = 0; k < p * n; ++k) y[k] = (r + 1) * (k + 1);
    show(world, "\nbefore reduce_scatter: y_r[k] = (r + 1)(k + 1)", y);
    Ints rs(n);
    c.reduce_scatter(rs.data(), y.data(), n);
    show(world, "after: rank r holds block r of the sum over ranks", rs);

    // The adjoint identities. Each side is an inner product over the whole group: a sum over ranks
    // of the local inner products. z is a second, arbitrary integer vector per rank.
    world.print0("\nadjoint pairs, <a, b> summed over all ranks:       left   right\n");
    Ints z(p * n);
    for (int k = 0; k < p * n; ++k) z[k] = (3 * r + 5 * k) % 7 - 3;
    const Ints z_n(z.begin(), z.begin() + n);

    // Broadcast B takes x on the root to p copies; its adjoint is the sum of p vectors onto the
    // root: ⟨B x, z⟩ = Σ_r ⟨x_0, z_r⟩ = ⟨x_0, Σ_r z_r⟩.
    Ints bx = x;
    c.broadcast(bx.data(), n, 0);
    const double bcast_lhs = sum_over_ranks(c, dot(bx, z_n));
    Ints rz = z_n;
    c.reduce(rz.data(), n, 0);
    const double bcast_rhs = sum_over_ranks(c, r == 0 ? dot(x, rz) : 0.0);
    bool ok = report(world, "<broadcast(x), z> = <x, reduce(z)> on root 0", bcast_lhs, bcast_rhs);

    // All-gather G stacks the p blocks on every rank; its adjoint sums the p copies and hands rank
    // r block r: ⟨G x, z⟩ = Σ_s Σ_r ⟨x_r, z_s[block r]⟩ = Σ_r ⟨x_r, RS(z)_r⟩.
    Ints gx(p * n);
    c.all_gather(gx.data(), x.data(), n);
    const double ag_lhs = sum_over_ranks(c, dot(gx, z));
    Ints rsz(n);
    c.reduce_scatter(rsz.data(), z.data(), n);
    const double ag_rhs = sum_over_ranks(c, dot(x, rsz));
    ok &= report(world, "<all_gather(x), z> = <x, reduce_scatter(z)>", ag_lhs, ag_rhs);

    // All-reduce A = (copy to all)·(sum over ranks) is its own adjoint: ⟨A x, z⟩ = ⟨x, A z⟩.
    Ints ax = x, az = z_n;
    c.all_reduce(ax.data(), n);
    c.all_reduce(az.data(), n);
    const double ar_lhs = sum_over_ranks(c, dot(ax, z_n)), ar_rhs = sum_over_ranks(c, dot(x, az));
    ok &= report(world, "<all_reduce(x), z> = <x, all_reduce(z)>", ar_lhs, ar_rhs);
    return ok ? 0 : 1;  // the same verdict on every rank: both sides are sums over all ranks
  });
}
