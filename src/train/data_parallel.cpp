// Data parallelism: the copies' groups, the checks, the accumulation and the sums.
#include "train/data_parallel.h"

#include <cstdio>

#include "comm/scalar.h"
#include "core/errors.h"

namespace optimus::train {

DataParallel::DataParallel(comm::Communicator& world, int D) : replicas(D) {
  const int P = world.size() / D;
  replica = world.rank() / P;
  if (D == 1) {
    model = &world;
    return;
  }
  model_owned_ = world.split(replica, world.rank() % P, "model");
  data = world.split(world.rank() % P, replica, "data");
  model = model_owned_.get();
}

void require_data_parallel_fits(Layout layout, int processes, int D, int B, int grad_accum, int T,
                                const model::StageOptions& options, const std::string& device) {
  if (D < 1 || processes % D != 0) {
    throw core::ConfigError("--data-parallel " + std::to_string(D) + " must be 1 or more and divide the " +
                            std::to_string(processes) + " processes (each model copy runs on processes / " +
                            "data-parallel of them)");
  }
  const int P = processes / D;  // the ranks of one model copy
  require_fits(layout, P, options, D);
  if (D > 1 && device != "cpu") {
    throw core::ConfigError("--data-parallel runs on the CPU so far; use --device cpu or --data-parallel 1");
  }
  if (grad_accum < 1 || B % grad_accum != 0) {
    throw core::ConfigError("--grad-accum " + std::to_string(grad_accum) + " must be 1 or more and divide --batch " +
                            std::to_string(B) + " (each micro-batch is batch / grad-accum sequences)");
  }
  if (B % (D * grad_accum) != 0) {
    throw core::ConfigError("--batch " + std::to_string(B) + " must be a multiple of --data-parallel " +
                            std::to_string(D) + " x --grad-accum " + std::to_string(grad_accum) +
                            " (each model copy runs batch / data-parallel sequences, in grad-accum micro-batches)");
  }
  require_batch_fits(layout, B / D, P, T, options.sequence_parallel, grad_accum,
                     D == 1 ? ""
                            : "a copy's share (--batch " + std::to_string(B) + " / --data-parallel " +
                                  std::to_string(D) + " = " + std::to_string(B / D) + ")");
}

void note_unused_overlap(const comm::World& world, bool overlap, Layout layout, int D) {
  if (!overlap || definition(layout).summa || D > 1 || world.rank() != 0) return;
  std::fprintf(stderr,
               "note: --overlap changes nothing in this run (--layout %s, --data-parallel 1): it hides 2d's SUMMA "
               "communication and data parallelism's gradient sums, and the run has neither\n",
               to_string(layout));
  std::fflush(stderr);
}

double accumulate_gradients(model::Model& gpt, const DataParallel& dp, const int* inputs, const int* targets, int B,
                            int T, int grad_accum, int step) {
  const int share = B / dp.replicas, Bm = share / grad_accum;
  double loss = 0.0;
  for (int k = 0; k < grad_accum; ++k) {
    const int64_t b0 = int64_t{dp.replica} * share + int64_t{k} * Bm, row = b0 * T;
    loss += gpt.forward(inputs + row, targets + row, Bm, T, static_cast<uint32_t>(step), true,
                        model::BatchSlice{.global = B, .b0 = b0, .last = k + 1 == grad_accum});
    gpt.backward();
  }
  return loss;
}

SumOverCopies::SumOverCopies(model::Model& gpt, const DataParallel& dp, bool overlap) : gpt_(gpt) {
  if (dp.data == nullptr) return;
  sum_.emplace(gpt.params(), *dp.data, overlap);
  gpt.set_gradient_listener(&*sum_);
}

SumOverCopies::~SumOverCopies() {
  gpt_.set_gradient_listener(nullptr);
}

double loss_over_copies(const model::Model& gpt, const DataParallel& dp, double loss) {
  if (dp.data == nullptr) return loss;
  return comm::all_reduce_scalar(*dp.data, gpt.context(), loss);
}

}  // namespace optimus::train
