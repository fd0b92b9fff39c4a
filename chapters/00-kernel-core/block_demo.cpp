// Chapter 0's example: one transformer block (pre-LayerNorm attention and MLP, GPT-2 style),
// forward and backward on random data, built only from the kernel core's ops, with each op's time.
// It is what scripts/run shows until the model of chapter 1 exists. Usage:
//   block_demo [B T C NH] [repeats] [--json]   (defaults 8 128 256 4, 5 repeats: the "tiny" block)
// With --json it prints one JSON object {"op": median ms, ...} instead of the table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "core/tensor.h"

using namespace optimus::core;

namespace {

// Times each named op over the repeats and prints medians in the order the ops first ran.
struct OpTimer {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> ms;

  template <typename F>
  void run(const std::string& name, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    if (!ms.count(name)) order.push_back(name);
    ms[name].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  void print_json() const {
    std::printf("{");
    for (size_t k = 0; k < order.size(); ++k) {
      std::printf("%s\"%s\": %.4f", k ? ", " : "", order[k].c_str(), median(ms.at(order[k])));
    }
    std::printf("}\n");
  }
  void print() const {
    double total = 0.0;
    for (const auto& n : order) total += median(ms.at(n));
    std::printf("%-28s %10s %7s\n", "op", "median ms", "share");
    for (const auto& n : order) {
      const double m = median(ms.at(n));
      std::printf("%-28s %10.3f %6.1f%%\n", n.c_str(), m, 100.0 * m / total);
    }
    std::printf("%-28s %10.3f\n", "total (sum of medians)", total);
  }
};

Buffer filled(MemoryLedger& ledger, MemoryCategory cat, Shape shape, uint32_t stream, float std) {
  Buffer b(ledger, cat, std::move(shape));
  for (int64_t k = 0; k < b.numel(); ++k) b.data()[k] = std * philox_normal({7u, stream}, static_cast<uint64_t>(k));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int B = 8, T = 128, C = 256, NH = 4, repeats = 5;
  const bool json = argc > 1 && std::string(argv[argc - 1]) == "--json";
  if (json) --argc;
  if (argc >= 5) {
    B = std::atoi(argv[1]), T = std::atoi(argv[2]), C = std::atoi(argv[3]), NH = std::atoi(argv[4]);
  }
  if (argc >= 6) repeats = std::atoi(argv[5]);
  if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || repeats <= 0) {
    std::fprintf(stderr, "error: need positive B T C NH with C divisible by NH (got %d %d %d %d)\n", B, T, C, NH);
    return 1;
  }
  const int N = B * T, F = 4 * C;
  const float eps = 1e-5f;  // GPT-2's layer_norm_epsilon
  MemoryLedger ledger;
  Context ctx = cpu_context(ledger);
  using MC = MemoryCategory;

  // Parameters of one block, GPT-2 layout ([in, out] weights).
  Buffer ln1w = filled(ledger, MC::parameters, {C}, 1, 0.0f), ln1b(ledger, MC::parameters, {C});
  Buffer ln2w = filled(ledger, MC::parameters, {C}, 2, 0.0f), ln2b(ledger, MC::parameters, {C});
  for (int c = 0; c < C; ++c) ln1w.data()[c] = ln2w.data()[c] = 1.0f;
  Buffer wqkv = filled(ledger, MC::parameters, {C, 3 * C}, 3, 0.02f), bqkv(ledger, MC::parameters, {3 * C});
  Buffer wproj = filled(ledger, MC::parameters, {C, C}, 4, 0.02f), bproj(ledger, MC::parameters, {C});
  Buffer wfc = filled(ledger, MC::parameters, {C, F}, 5, 0.02f), bfc(ledger, MC::parameters, {F});
  Buffer wfcp = filled(ledger, MC::parameters, {F, C}, 6, 0.02f), bfcp(ledger, MC::parameters, {C});
  // Their gradients.
  Buffer dln1w(ledger, MC::gradients, {C}), dln1b(ledger, MC::gradients, {C});
  Buffer dln2w(ledger, MC::gradients, {C}), dln2b(ledger, MC::gradients, {C});
  Buffer dwqkv(ledger, MC::gradients, {C, 3 * C}), dbqkv(ledger, MC::gradients, {3 * C});
  Buffer dwproj(ledger, MC::gradients, {C, C}), dbproj(ledger, MC::gradients, {C});
  Buffer dwfc(ledger, MC::gradients, {C, F}), dbfc(ledger, MC::gradients, {F});
  Buffer dwfcp(ledger, MC::gradients, {F, C}), dbfcp(ledger, MC::gradients, {C});

  // Activations kept for backward; shapes as in chapter 1.
  Buffer x = filled(ledger, MC::activations, {N, C}, 8, 1.0f);  // (B*T, C) block input
  Buffer ln1(ledger, MC::activations, {N, C}), m1(ledger, MC::activations, {N}), r1(ledger, MC::activations, {N});
  Buffer qkv(ledger, MC::activations, {N, 3 * C});     // (B*T, 3C)
  Buffer att(ledger, MC::activations, {B, NH, T, T});  // (B, NH, T, T)
  Buffer atty(ledger, MC::activations, {N, C}), res1(ledger, MC::activations, {N, C});
  Buffer ln2(ledger, MC::activations, {N, C}), m2(ledger, MC::activations, {N}), r2(ledger, MC::activations, {N});
  Buffer fc(ledger, MC::activations, {N, F}), gelu(ledger, MC::activations, {N, F});  // (B*T, 4C)
  Buffer out(ledger, MC::activations, {N, C});
  // A branch's output (c_proj's product and bias) until the residual add reads it: the backward
  // pass never reads it, so both branches share one scratch buffer instead of keeping it.
  Buffer branch(ledger, MC::workspace, {N, C});  // (B*T, C)
  // Gradients of activations (workspace: they live for one backward pass).
  Buffer dout = filled(ledger, MC::workspace, {N, C}, 9, 1.0f);
  // The residual stream's gradient: dL/d out, then (after layernorm_2's backward) dL/d res1, then
  // (after layernorm_1's) dL/d x. A residual add passes its gradient to both inputs unchanged, so
  // each branch reads it as its output's gradient and adds into it through its LayerNorm.
  Buffer dres(ledger, MC::workspace, {N, C});
  Buffer dgelu(ledger, MC::workspace, {N, F}), dfc(ledger, MC::workspace, {N, F});
  Buffer dln2(ledger, MC::workspace, {N, C}), datty(ledger, MC::workspace, {N, C});
  Buffer dqkv(ledger, MC::workspace, {N, 3 * C}), datt(ledger, MC::workspace, {B, NH, T, T});
  Buffer dln1(ledger, MC::workspace, {N, C});

  DropoutSpec no_dropout;
  no_dropout.block.dim[0] = B, no_dropout.block.dim[1] = NH, no_dropout.block.dim[2] = int64_t{T} * T;
  no_dropout.block.global_dim[0] = B, no_dropout.block.global_dim[1] = NH,
  no_dropout.block.global_dim[2] = int64_t{T} * T;

  OpTimer timer;
  for (int rep = 0; rep <= repeats; ++rep) {  // rep 0 warms up and is not recorded
    OpTimer warm;
    OpTimer& use = rep == 0 ? warm : timer;
    // forward
    use.run("fwd layernorm_1", [&] {
      layernorm_forward(ctx, ln1.data(), m1.data(), r1.data(), x.data(), ln1w.data(), ln1b.data(), N, C, eps);
    });
    use.run("fwd linear qkv",
            [&] { linear_forward(ctx, qkv.data(), ln1.data(), wqkv.data(), bqkv.data(), N, C, 3 * C); });
    use.run("fwd attention",
            [&] { attention_forward(ctx, atty.data(), att.data(), qkv.data(), B, T, C, NH, no_dropout); });
    use.run("fwd linear attn.c_proj",
            [&] { linear_forward(ctx, branch.data(), atty.data(), wproj.data(), bproj.data(), N, C, C); });
    use.run("fwd residual_1", [&] { residual_forward(ctx, res1.data(), x.data(), branch.data(), int64_t{N} * C); });
    use.run("fwd layernorm_2", [&] {
      layernorm_forward(ctx, ln2.data(), m2.data(), r2.data(), res1.data(), ln2w.data(), ln2b.data(), N, C, eps);
    });
    use.run("fwd linear mlp.c_fc",
            [&] { linear_forward(ctx, fc.data(), ln2.data(), wfc.data(), bfc.data(), N, C, F); });
    use.run("fwd gelu", [&] { gelu_forward(ctx, gelu.data(), fc.data(), int64_t{N} * F); });
    use.run("fwd linear mlp.c_proj",
            [&] { linear_forward(ctx, branch.data(), gelu.data(), wfcp.data(), bfcp.data(), N, F, C); });
    use.run("fwd residual_2", [&] { residual_forward(ctx, out.data(), res1.data(), branch.data(), int64_t{N} * C); });
    // backward (gradients accumulate, so clear the activation gradients first)
    for (Buffer* b : {&dgelu, &dfc, &dln2, &datty, &dqkv, &dln1}) std::fill(b->data(), b->data() + b->numel(), 0.0f);
    std::copy(dout.data(), dout.data() + dout.numel(), dres.data());
    use.run("bwd linear mlp.c_proj", [&] {
      linear_backward(ctx, {.dinp = dgelu.data(), .dweight = dwfcp.data(), .dbias = dbfcp.data()}, dres.data(),
                      gelu.data(), wfcp.data(), N, F, C);
    });
    use.run("bwd gelu", [&] { gelu_backward(ctx, dfc.data(), fc.data(), dgelu.data(), int64_t{N} * F); });
    use.run("bwd linear mlp.c_fc", [&] {
      linear_backward(ctx, {.dinp = dln2.data(), .dweight = dwfc.data(), .dbias = dbfc.data()}, dfc.data(), ln2.data(),
                      wfc.data(), N, C, F);
    });
    use.run("bwd layernorm_2", [&] {
      layernorm_backward(ctx, {.dinp = dres.data(), .dweight = dln2w.data(), .dbias = dln2b.data()}, dln2.data(),
                         res1.data(), ln2w.data(), m2.data(), r2.data(), N, C);
    });
    use.run("bwd linear attn.c_proj", [&] {
      linear_backward(ctx, {.dinp = datty.data(), .dweight = dwproj.data(), .dbias = dbproj.data()}, dres.data(),
                      atty.data(), wproj.data(), N, C, C);
    });
    use.run("bwd attention", [&] {
      attention_backward(ctx, dqkv.data(), datt.data(), datty.data(), qkv.data(), att.data(), B, T, C, NH, no_dropout);
    });
    use.run("bwd linear qkv", [&] {
      linear_backward(ctx, {.dinp = dln1.data(), .dweight = dwqkv.data(), .dbias = dbqkv.data()}, dqkv.data(),
                      ln1.data(), wqkv.data(), N, C, 3 * C);
    });
    use.run("bwd layernorm_1", [&] {
      layernorm_backward(ctx, {.dinp = dres.data(), .dweight = dln1w.data(), .dbias = dln1b.data()}, dln1.data(),
                         x.data(), ln1w.data(), m1.data(), r1.data(), N, C);
    });
  }

  if (json) {
    timer.print_json();
    return 0;
  }
  double sq = 0.0;
  sum_squares(ctx, &sq, dres.data(), int64_t{N} * C);
  std::printf("one transformer block, forward and backward: B=%d T=%d C=%d NH=%d (median of %d repeats)\n", B, T, C, NH,
              repeats);
  timer.print();
  std::printf("|d input|^2 = %.6e (a checksum)\n", sq);
  std::printf("memory of this process by category (the ledger):\n%s", ledger.report().c_str());
  return 0;
}
