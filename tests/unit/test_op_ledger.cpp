// The op ledger: each family of ops records, on a CPU context, the FLOPs and bytes of the formula
// stated beside it (core/op_ledger.h's conventions), worked out here by hand from the sizes; a
// composite op records through its pieces and nothing is counted twice; and the meta device's
// buffers, copies and host values.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/ops.h"
#include "unit/check.h"

namespace {

using namespace optimus;
using core::OpKind;
using core::Trans;

// The one kind a test expects to have been recorded, and nothing else.
void require_only(const core::OpLedger& ops, OpKind kind) {
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto other = static_cast<OpKind>(k);
    if (other != kind) CHECK(ops.of(other).calls == 0);
  }
}

}  // namespace

TEST_CASE("matmul of (3, 4) x (4, 5) records 2*M*N*K = 120 FLOPs and its operands' bytes", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  std::vector<float> a(3 * 4, 1.0f), b(4 * 5, 1.0f), c(3 * 5);
  core::matmul(ctx, c.data(), a.data(), b.data(), 3, 5, 4, Trans::no, Trans::no);
  const auto& m = ops.of(OpKind::matmul);
  CHECK(m.calls == 1);
  CHECK(m.flops == 2 * 3 * 5 * 4);
  CHECK(m.bytes_read == 4 * (3 * 4 + 4 * 5));  // beta = 0: c is not read
  CHECK(m.bytes_written == 4 * 3 * 5);
  // beta = 1 adds into c, which is then read too.
  core::matmul(ctx, c.data(), a.data(), b.data(), 3, 5, 4, Trans::no, Trans::no, 1.0f, 1.0f);
  CHECK(m.bytes_read == 4 * (3 * 4 + 4 * 5) + 4 * (3 * 4 + 4 * 5 + 3 * 5));
  require_only(ops, OpKind::matmul);
}

TEST_CASE("a context without an op ledger records nothing and computes as before", "[ops][ledger]") {
  const auto ctx = core::cpu_context();
  CHECK(ctx.ops == nullptr);
  std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1}, c(4);
  core::matmul(ctx, c.data(), a.data(), b.data(), 2, 2, 2, Trans::no, Trans::no);
  CHECK(c == a);
}

TEST_CASE("linear forward and backward record their products and bias ops, once each", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  const int N = 6, C = 4, OC = 3;
  std::vector<float> x(N * C, 0.5f), w(C * OC, 0.5f), bias(OC, 0.1f), y(N * OC);
  core::linear_forward(ctx, y.data(), x.data(), w.data(), bias.data(), N, C, OC);
  CHECK(ops.of(OpKind::matmul).calls == 1);
  CHECK(ops.of(OpKind::matmul).flops == 2 * N * C * OC);
  CHECK(ops.of(OpKind::elementwise).calls == 1);
  CHECK(ops.of(OpKind::elementwise).flops == N * OC);  // the bias add: one add per output

  ops.clear();
  std::vector<float> dx(N * C), dw(C * OC), db(OC);
  core::linear_backward(ctx, {.dinp = dx.data(), .dweight = dw.data(), .dbias = db.data()}, y.data(), x.data(),
                        w.data(), N, C, OC);
  CHECK(ops.of(OpKind::matmul).calls == 2);  // dinp and dweight: one product each
  CHECK(ops.of(OpKind::matmul).flops == 2 * (2 * N * C * OC));
  CHECK(ops.of(OpKind::reduction).calls == 1);  // dbias: a column sum
  CHECK(ops.of(OpKind::reduction).flops == N * OC);
  CHECK(ops.total().calls == 3);

  ops.clear();  // without dinp, one product is left out
  core::linear_backward(ctx, {.dweight = dw.data()}, y.data(), x.data(), w.data(), N, C, OC);
  CHECK(ops.of(OpKind::matmul).calls == 1);
  CHECK(ops.total().calls == 1);
}

TEST_CASE("layernorm records its pieces once: N(8C+6) forward, N(19C+2) backward", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  const int N = 5, C = 8;
  const auto x = testing::random_normal(N * C, 1);
  std::vector<float> w(C, 1.0f), b(C, 0.0f), y(N * C), mean(N), rstd(N);
  core::layernorm_forward(ctx, y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  // sum N·C, squared deviations N·(3C + 1), normalise N·(4C + 5)
  CHECK(ops.of(OpKind::layernorm).calls == 3);
  CHECK(ops.of(OpKind::layernorm).flops == N * C + N * (3 * C + 1) + N * (4 * C + 5));
  CHECK(ops.of(OpKind::layernorm).bytes_written == 4 * (N + N + N * C + 2 * N));
  require_only(ops, OpKind::layernorm);

  ops.clear();
  std::vector<float> dx(N * C), dw(C), db(C);
  core::layernorm_backward(ctx, {.dinp = dx.data(), .dweight = dw.data(), .dbias = db.data()}, y.data(), x.data(),
                           w.data(), mean.data(), rstd.data(), N, C);
  // One call (a GPU fuses it): the row sums 6·N·C, then dinp N·(8C + 2), dweight 4·N·C, dbias N·C.
  CHECK(ops.of(OpKind::layernorm).calls == 1);
  CHECK(ops.of(OpKind::layernorm).flops == 6 * N * C + N * (8 * C + 2) + 4 * N * C + N * C);
  require_only(ops, OpKind::layernorm);
}

TEST_CASE("attention records its whole cost as one call, not its inner products", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  const int B = 2, T = 4, C = 6, NH = 2, HS = C / NH;
  const auto qkv = testing::random_normal(B * T * 3 * C, 2);
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  core::DropoutSpec drop;  // p = 0
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  // Per (sequence, head) pair: q·kᵀ and att·v 2·T²·HS each, the softmax 5 per score.
  CHECK(ops.of(OpKind::attention).calls == 1);
  CHECK(ops.of(OpKind::attention).flops == B * NH * (4 * T * T * HS + 5 * T * T));
  CHECK(ops.of(OpKind::attention).bytes_read == 4 * B * T * 3 * C);
  CHECK(ops.of(OpKind::attention).bytes_written == 4 * (B * T * C + B * NH * T * T));
  require_only(ops, OpKind::attention);

  ops.clear();
  std::vector<float> dqkv(B * T * 3 * C), datt(B * NH * T * T);
  core::attention_backward(ctx, dqkv.data(), datt.data(), out.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  // dv, d(att), dq, dk 2·T²·HS each, the softmax backward 4 per score.
  CHECK(ops.of(OpKind::attention).calls == 1);
  CHECK(ops.of(OpKind::attention).flops == B * NH * (8 * T * T * HS + 4 * T * T));
  require_only(ops, OpKind::attention);

  ops.clear();  // with dropout: one more per score forward (the scale), three backward
  drop.p = 0.5f;
  drop.block.dim[0] = B, drop.block.dim[1] = NH, drop.block.dim[2] = T * T;
  drop.block.global_dim[0] = B, drop.block.global_dim[1] = NH, drop.block.global_dim[2] = T * T;
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  core::attention_backward(ctx, dqkv.data(), datt.data(), out.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  CHECK(ops.of(OpKind::attention).calls == 2);
  CHECK(ops.of(OpKind::attention).flops ==
        B * NH * (4 * T * T * HS + 6 * T * T) + B * NH * (8 * T * T * HS + 7 * T * T));
  require_only(ops, OpKind::attention);
}

TEST_CASE("cross-entropy records its four pieces forward and one op backward", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  const int N = 3, V = 10, V_real = 7;  // three padding columns take no part
  const auto logits = testing::random_normal(N * V, 3);
  const std::vector<int> targets = {0, 3, 6};
  std::vector<float> losses(N), maxes(N), sumexp(N), dlogits(N * V);
  core::crossentropy_forward(ctx, losses.data(), maxes.data(), sumexp.data(), logits.data(), targets.data(), N, V,
                             V_real);
  // max N·V_real, sum of exponentials 3·N·V_real, target 0, losses 3·N
  CHECK(ops.of(OpKind::crossentropy).calls == 4);
  CHECK(ops.of(OpKind::crossentropy).flops == N * V_real + 3 * N * V_real + 3 * N);
  ops.clear();
  core::crossentropy_backward(ctx, dlogits.data(), logits.data(), maxes.data(), sumexp.data(), targets.data(), 1.0f, N,
                              V, 0, V_real);
  CHECK(ops.of(OpKind::crossentropy).calls == 1);
  CHECK(ops.of(OpKind::crossentropy).flops == N * (6 * V_real + 1));
  CHECK(ops.of(OpKind::crossentropy).bytes_written == 4 * N * V_real);
  require_only(ops, OpKind::crossentropy);
}

TEST_CASE("elementwise, reduction, embedding and optimizer ops record their per-element counts", "[ops][ledger]") {
  core::OpLedger ops;
  const auto ctx = core::cpu_context(core::MemoryLedger::host(), &ops);
  const int n = 12;
  std::vector<float> a(n, 0.5f), b(n, 0.25f), out(n), m(n), v(n);
  core::gelu_forward(ctx, out.data(), a.data(), n);                // 9 per element
  core::gelu_backward(ctx, out.data(), a.data(), b.data(), n);     // 21 per element
  core::residual_forward(ctx, out.data(), a.data(), b.data(), n);  // 1
  core::scale(ctx, out.data(), 2.0f, n);                           // 1
  core::zero(ctx, out.data(), n);                                  // 0
  CHECK(ops.of(OpKind::elementwise).calls == 5);
  CHECK(ops.of(OpKind::elementwise).flops == (9 + 21 + 1 + 1 + 0) * n);
  CHECK(ops.of(OpKind::elementwise).bytes_read == 4 * n * (1 + 3 + 2 + 1 + 0));
  CHECK(ops.of(OpKind::elementwise).bytes_written == 4 * n * 5);

  double s = 0.0;
  core::sum(ctx, &s, a.data(), n);          // 1 per element
  core::sum_squares(ctx, &s, a.data(), n);  // 2 per element
  CHECK(ops.of(OpKind::reduction).flops == 3 * n);
  CHECK(ops.of(OpKind::reduction).bytes_written == 2 * 8);  // one double each

  const int N = 4, C = 3, V = 5;
  const std::vector<int> tokens = {0, 4, 2, 7};  // 7 lies outside the block: still counted (sizes only)
  std::vector<float> wte(V * C, 1.0f), x(N * C), dwte(V * C);
  core::embedding_forward(ctx, x.data(), tokens.data(), wte.data(), N, C, 0, V);    // a lookup: 0 FLOPs
  core::embedding_backward(ctx, dwte.data(), x.data(), tokens.data(), N, C, 0, V);  // N·C adds
  CHECK(ops.of(OpKind::embedding).calls == 2);
  CHECK(ops.of(OpKind::embedding).flops == N * C);
  CHECK(ops.of(OpKind::embedding).bytes_read == (4 * N + 4 * N * C) + (4 * N + 4 * 2 * N * C));

  core::adamw_update(ctx, a.data(), m.data(), v.data(), b.data(), n, {});  // 14 per element
  CHECK(ops.of(OpKind::optimizer).calls == 1);
  CHECK(ops.of(OpKind::optimizer).flops == 14 * n);
  CHECK(ops.of(OpKind::optimizer).bytes_read == 4 * 4 * n);
  CHECK(ops.of(OpKind::optimizer).bytes_written == 4 * 3 * n);
}

TEST_CASE("a meta Buffer is recorded like a CPU one and holds no storage", "[meta]") {
  core::MemoryLedger cpu_ledger, meta_ledger;
  core::Buffer on_cpu(cpu_ledger, core::MemoryCategory::activations, {256, 1024});
  core::Buffer on_meta(meta_ledger, core::MemoryCategory::activations, {256, 1024}, core::Device::meta);
  CHECK(on_meta.device() == core::Device::meta);
  CHECK(std::string(core::device_name(core::Device::meta)) == "meta");
  CHECK(on_meta.data() != nullptr);  // offsets into it are pointers, as for a real buffer
  CHECK(meta_ledger.current(core::MemoryCategory::activations) ==
        cpu_ledger.current(core::MemoryCategory::activations));

  // 64 GiB on meta: recorded, but the process's peak resident memory does not grow by it.
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  {
    core::Buffer huge(meta_ledger, core::MemoryCategory::parameters, {int64_t{16} << 30}, core::Device::meta);
    CHECK(meta_ledger.current(core::MemoryCategory::parameters) == size_t{64} << 30);
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  CHECK(meta_ledger.current(core::MemoryCategory::parameters) == 0);
  CHECK(meta_ledger.peak(core::MemoryCategory::parameters) == size_t{64} << 30);
  CHECK(after.ru_maxrss - before.ru_maxrss < 16 * 1024);  // KiB: under 16 MiB
}

TEST_CASE("meta ops record what CPU ops record and compute nothing; host values are NaN", "[meta]") {
  core::OpLedger cpu_ops, meta_ops;
  core::MemoryLedger meta_ledger;
  const auto cpu = core::cpu_context(core::MemoryLedger::host(), &cpu_ops);
  const auto meta = core::meta_context(meta_ledger, &meta_ops);
  const int N = 8, C = 4;
  std::vector<float> x(N * C, 1.0f), w(C * C, 1.0f), y(N * C);
  core::Buffer mx(meta_ledger, core::MemoryCategory::activations, {N, C}, core::Device::meta);
  core::Buffer mw(meta_ledger, core::MemoryCategory::parameters, {C, C}, core::Device::meta);
  core::Buffer my(meta_ledger, core::MemoryCategory::activations, {N, C}, core::Device::meta);
  core::linear_forward(cpu, y.data(), x.data(), w.data(), nullptr, N, C, C);
  core::linear_forward(meta, my.data(), mx.data(), mw.data(), nullptr, N, C, C);  // would fault if it read
  core::gelu_forward(cpu, y.data(), x.data(), N * C);
  core::gelu_forward(meta, my.data(), mx.data(), N * C);
  CHECK(meta_ops == cpu_ops);
  CHECK(meta_ops.of(OpKind::matmul).flops == 2 * N * C * C);

  double s = 0.0;
  core::sum(meta, &s, mx.data(), N * C);
  CHECK(std::isnan(s));
  s = 0.0;
  core::sum_squares(meta, &s, mx.data(), N * C);
  CHECK(std::isnan(s));

  std::vector<float> host(N * C, 1.0f);
  core::copy_to_device(meta, mx.data(), host.data(), N * C);  // nothing moves
  core::copy_to_host(meta, host.data(), mx.data(), N * C);
  for (float h : host) CHECK(std::isnan(h));
  std::vector<int> ids(3, 7);
  core::copy_to_host(meta, ids.data(), reinterpret_cast<const int*>(mx.data()), 3);
  CHECK(ids == std::vector<int>(3, -1));
}
