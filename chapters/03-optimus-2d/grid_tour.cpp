// Chapter 3's example: a tour of the q×q grid. Rank 0 prints what each rank holds — its batch rows,
// hidden columns, heads and vocabulary rows — then every rank runs one training step of the 2D GPT
// and of the serial GPT (same seed, same batch, dropout on), and rank 0 prints the two losses and
// the step's communication on its row, its column and the world, call by call as the ledger
// counted it. Usage: mpirun -np 4 build/chapters/grid_tour   (or -np 9)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "comm/world.h"
#include "serial/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"

using namespace optimus;

namespace {

// "[a, b)" for part k of n things cut in q equal parts.
std::string range(int n, int q, int k) {
  char s[32];
  std::snprintf(s, sizeof s, "[%d, %d)", k * n / q, (k + 1) * n / q);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [](comm::World& world) {
    model::GPTConfig config;  // NH = 6 and C = 96 split 2 and 3 ways; V = 256 is padded for q = 3
    config.n_layer = 2, config.n_embd = 96, config.n_head = 6, config.n_positions = 32, config.dropout = 0.1f;
    const int B = 6, T = 32, V = config.vocab_size;
    std::vector<int> inputs(B * T), targets(B * T);
    for (int k = 0; k < B * T; ++k) inputs[k] = (k * 31) % 256, targets[k] = (k * 17 + 5) % 256;

    comm::Grid2D grid(world.comm());
    const int q = grid.q(), Vb = tp2d::vocab_block(config, q);
    world.print0("a %d×%d grid; B = %d sequences of T = %d, C = %d, NH = %d heads, V = %d (%d rows per block)\n", q, q,
                 B, T, config.n_embd, config.n_head, V, Vb);
    world.print0("%-5s %-7s %-12s %-14s %-10s %s\n", "rank", "(i, j)", "sequences", "hidden cols", "heads",
                 "vocabulary rows of wte");
    for (int r = 0; r < world.size(); ++r) {
      const int i = r / q, j = r % q;
      const int v0 = i * Vb, v1 = std::min(V, (i + 1) * Vb);
      char padding[48] = "";
      if (v1 - v0 < Vb) std::snprintf(padding, sizeof padding, " + %d padding rows", Vb - (v1 - v0));
      world.print0("%-5d (%d, %d)  %-12s %-14s %-10s [%d, %d)%s\n", r, i, j, range(B, q, i).c_str(),
                   range(config.n_embd, q, j).c_str(), range(config.n_head, q, j).c_str(), v0, v1, padding);
    }

    tp2d::GPT par(config, core::cpu_context(), 7, grid);  // my blocks and tiles only
    serial::GPT ser(config, core::cpu_context(), 7);      // the whole model
    auto& ledger = world.comm().ledger();
    const auto before = ledger.snapshot();
    par.params().zero_grads();
    const float loss_2d = par.forward(inputs.data(), targets.data(), B, T, /*step=*/0);
    par.backward();
    par.clip_gradients(1.0f);
    const auto step = ledger.since(before);
    ser.params().zero_grads();
    const float loss_serial = ser.forward(inputs.data(), targets.data(), B, T, 0);

    world.print0("\none training step: loss 2d %.7f, serial %.7f\n", loss_2d, loss_serial);
    world.print0("its communication on rank 0 (bytes: the size of each call's result buffer):\n");
    const comm::CommOp ops[] = {comm::CommOp::broadcast, comm::CommOp::reduce, comm::CommOp::all_reduce,
                                comm::CommOp::reduce_scatter, comm::CommOp::all_gather};
    const char* names[] = {"broadcast", "reduce", "all-reduce", "reduce-scatter", "all-gather"};
    for (const std::string& c : step.communicators()) {
      for (int k = 0; k < 5; ++k) {
        if (step.calls(c, ops[k]) == 0) continue;
        world.print0("  %-6s %-15s %4lld calls %10lld bytes\n", c.c_str(), names[k],
                     static_cast<long long>(step.calls(c, ops[k])), static_cast<long long>(step.bytes(c, ops[k])));
      }
    }
    return 0;
  });
}
