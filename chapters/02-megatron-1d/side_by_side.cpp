// Chapter 2's example: the Megatron 1D GPT beside the serial one, under mpirun. Every rank builds
// both from the same seed, runs one step with dropout on the same batch, and rank 0 prints the two
// losses and, per parameter, the relative difference of the gathered 1D gradient from the serial
// one, with this rank's shard shape. Usage: mpirun -np 2 build/chapters/side_by_side
#include <cmath>
#include <cstdio>
#include <vector>

#include "comm/grid.h"
#include "comm/world.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"

using namespace optimus;

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [](comm::World& world) {
    model::GPTConfig config;
    config.n_layer = 2, config.n_embd = 64, config.n_head = 4, config.n_positions = 32, config.dropout = 0.1f;
    const int B = 4, T = 32;
    std::vector<int> inputs(B * T), targets(B * T);
    for (int k = 0; k < B * T; ++k) inputs[k] = (k * 31) % 256, targets[k] = (k * 17 + 5) % 256;

    comm::Grid1D grid(world.comm());
    tp1d::GPT par(config, core::cpu_context(), 7, grid);  // my shards only
    serial::GPT ser(config, core::cpu_context(), 7);      // the whole model
    par.params().zero_grads(), ser.params().zero_grads();
    const float loss_1d = par.forward(inputs.data(), targets.data(), B, T, /*step=*/0);
    const float loss_serial = ser.forward(inputs.data(), targets.data(), B, T, 0);
    par.backward(), ser.backward();

    world.print0("p = %d ranks; loss 1d %.7f, serial %.7f\n", world.size(), loss_1d, loss_serial);
    world.print0("%-36s %-12s %s\n", "parameter", "my shard", "gradient: |1d - serial| / |serial|");
    for (size_t i = 0; i < par.params().tensors.size(); ++i) {
      const auto& t = par.params().tensors[i];
      const std::vector<float> full = model::gather_canonical(t, t.grad.data(), world.comm(), par.spec_of());
      const float* ref = ser.params().tensors[i].grad.data();
      double num = 0.0, den = 0.0;
      for (size_t k = 0; k < full.size(); ++k) num += (full[k] - ref[k]) * (full[k] - ref[k]), den += ref[k] * ref[k];
      world.print0("%-36s %-12s %.2e\n", t.info.name.c_str(), t.spec.local_shape().str().c_str(),
                   den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    }
    return 0;
  });
}
