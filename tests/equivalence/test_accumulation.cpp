// Gradient accumulation (chapter 6): one optimizer step's gradients accumulated over K
// micro-batches equal the gradients of one pass over the whole batch, in every layout, with dropout
// on: the loss and the gradient (all tensors as one vector) within 1e-6 relative, and each tensor
// within 1e-5 (a tensor whose gradient is a sum that nearly cancels, ln_f.bias, shows the new order
// of the sums most). Each micro-batch is a part of
// the batch (model::BatchSlice): its dropout masks are the whole batch's and its loss is its share
// of the whole batch's mean, so only the order of the sums differs. As in chapters 2 and 3, the key
// third of c_attn.bias is left out: its gradient is zero in exact arithmetic, so what is computed
// is round-off, and round-off in another order (docs/equivalence.md, "Why these bars").
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "compare.h"
#include "layouts.h"

using namespace optimus;
using equivalence::make_batch;
using equivalence::report;

namespace {

std::string what_of(const equivalence::Layout& layout) {
  return layout.name() + " P=" + std::to_string(mpi_test::world().size()) + ", K=4";
}

// How far the gradients of `a` are from those of `b` (two models of one layout, canonical tensors:
// serial ones as they are, the others gathered): over all of them as one vector, and the worst
// single tensor, by name.
struct GradientError {
  double whole = 0.0, worst = 0.0;
  std::string worst_name;
};

template <typename A, typename B>
GradientError gradient_error(const equivalence::Layout& layout, const A& a, const B& b) {
  auto canonical = [&](const model::ParamTensor& t, const model::SpecOfRank& spec) {
    const auto full = layout.stage == "serial"
                          ? equivalence::copy(t.grad.data(), t.grad.numel())
                          : model::gather_canonical(t, t.grad.data(), mpi_test::world().comm(), spec);
    return equivalence::comparable_part(t.info, full);
  };
  GradientError e;
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t k = 0; k < a.params().tensors.size(); ++k) {
    const auto x = canonical(a.params().tensors[k], a.spec_of()), y = canonical(b.params().tensors[k], b.spec_of());
    for (size_t n = 0; n < x.size(); ++n) {
      diff2 += (static_cast<double>(x[n]) - y[n]) * (static_cast<double>(x[n]) - y[n]);
      ref2 += static_cast<double>(y[n]) * y[n];
    }
    const double one = equivalence::rel_error(x, y);
    if (one > e.worst) e.worst = one, e.worst_name = equivalence::compared_name(a.params().tensors[k].info);
  }
  e.whole = std::sqrt(diff2 / ref2);
  return e;
}

}  // namespace

TEST_CASE("gradients accumulated over micro-batches equal one pass over the whole batch, in every layout",
          "[accumulation]") {
  const int P = mpi_test::world().size(), K = 4;
  const auto cfg = equivalence::config_for(P);
  const int T = 16, Bm = equivalence::batch_for(P, T), B = K * Bm;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 8);
  for (const equivalence::Layout& layout : equivalence::layouts_of(P)) {
    core::MemoryLedger ledger_whole, ledger_parts;
    double loss_error = 0.0;
    GradientError grad;
    equivalence::with_layout(layout, cfg, model::Recompute::none, ledger_whole, [&](auto& whole) {
      equivalence::with_layout(layout, cfg, model::Recompute::none, ledger_parts, [&](auto& parts) {
        whole.params().zero_grads(), parts.params().zero_grads();
        const double loss = whole.forward(in.data(), tg.data(), B, T, 3);
        whole.backward();
        double summed = 0.0;
        for (int k = 0; k < K; ++k) {
          const int64_t b0 = int64_t{k} * Bm;
          summed += parts.forward(in.data() + b0 * T, tg.data() + b0 * T, Bm, T, 3, true,
                                  model::BatchSlice{.global = B, .b0 = b0, .last = k + 1 == K});
          parts.backward();
        }
        loss_error = std::abs(summed - loss) / std::abs(loss);
        grad = gradient_error(layout, parts, whole);
      });
    });
    grad.whole = equivalence::worst_over_ranks(grad.whole), grad.worst = equivalence::worst_over_ranks(grad.worst);
    report(what_of(layout) + ": accumulated loss relative error", loss_error);
    report(what_of(layout) + ": accumulated gradient relative error, all tensors as one", grad.whole);
    report(what_of(layout) + ": the worst tensor's (" + grad.worst_name + ")", grad.worst);
    MPI_REQUIRE(loss_error <= 1e-6);
    MPI_REQUIRE(grad.whole <= 1e-6);
    MPI_REQUIRE(grad.worst <= 1e-5);
  }
}
