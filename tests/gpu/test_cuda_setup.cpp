// The backend plumbing that runs on any machine (label unit): copies and sums on a CPU context,
// IntBuffers, the refusals where there is no GPU or no CUDA backend (one clear sentence each), and
// the choice of device communicator. The GPU side of the same is in test_gpu_ops.cpp.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/device_comm.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "unit/check.h"

using namespace optimus;
using Catch::Matchers::Contains;

TEST_CASE("copies on a CPU context are plain copies, for floats and token ids", "[setup]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<float> x = testing::random_normal(100, 1);
  std::vector<float> y(100, 0.0f), z(100, 0.0f);
  core::copy_to_device(ctx, y.data(), x.data(), 100);
  core::copy_on_device(ctx, z.data(), y.data(), 100);
  CHECK(z == x);
  const std::vector<int> ids = testing::random_ints(100, 50257, 2);
  std::vector<int> back(100, -1);
  core::copy_to_host(ctx, back.data(), ids.data(), 100);
  CHECK(back == ids);
  core::synchronize(ctx);  // nothing to wait for
}

TEST_CASE("sum on the CPU is the sequential double sum up to 2^14 elements, chunked after", "[setup]") {
  const std::vector<float> x = testing::random_normal(40000, 3);
  const core::Context ctx = core::cpu_context();
  double sequential = 0.0;
  for (int k = 0; k < 16384; ++k) sequential += static_cast<double>(x[static_cast<size_t>(k)]);
  double s = 0.0;
  core::sum(ctx, &s, x.data(), 16384);
  CHECK(s == sequential);
  // three chunks: each in order, then the chunks in order (the chunking of sum_squares)
  double chunks[3] = {0.0, 0.0, 0.0};
  for (int k = 0; k < 40000; ++k) chunks[k / 16384] += static_cast<double>(x[static_cast<size_t>(k)]);
  core::sum(ctx, &s, x.data(), 40000);
  CHECK(s == (chunks[0] + chunks[1]) + chunks[2]);
  core::sum(ctx, &s, x.data(), 0);
  CHECK(s == 0.0);
}

TEST_CASE("an IntBuffer holds token ids and is recorded in its ledger", "[setup]") {
  core::MemoryLedger ledger;
  {
    core::IntBuffer ids(ledger, core::MemoryCategory::activations, {4, 8}, core::Device::cpu, core::Fill::zero);
    CHECK(ids.numel() == 32);
    CHECK(ids.bytes() == 128);
    CHECK(ledger.current(core::MemoryCategory::activations) == 128);
    CHECK(ids.data()[31] == 0);  // zero-initialised, as asked
    ids.data()[31] = 50256;
    CHECK(ids.data()[31] == 50256);
    core::IntBuffer moved = std::move(ids);
    CHECK(moved.data()[31] == 50256);
    CHECK(ledger.current(core::MemoryCategory::activations) == 128);
  }
  CHECK(ledger.current(core::MemoryCategory::activations) == 0);
}

TEST_CASE("without a GPU, cuda_context refuses with one sentence that says why", "[setup]") {
  core::MemoryLedger ledger;
  const int gpus = core::cuda_device_count();
  // An index past the GPUs found (all of them, where there are none) is refused, naming the cause.
  CHECK_THROWS_WITH(core::cuda_context(ledger, gpus),
                    Contains(core::cuda_backend_built() ? "there is no GPU" : "no CUDA backend"));
  CHECK_THROWS_AS(core::cuda_context(ledger, -1), std::runtime_error);
  CHECK(core::cuda_device_report().rfind(gpus == 0 ? "no GPU" : std::to_string(gpus), 0) == 0);
}

#if !defined(OPTIMUS_WITH_CUDA)
TEST_CASE("in a CPU-only build, an op given a CUDA context throws one clear sentence", "[setup]") {
  core::Context ctx;  // what no function of this build makes: a context claiming a GPU
  ctx.device = core::Device::cuda;
  float x[4] = {1, 2, 3, 4};
  CHECK_THROWS_WITH(core::zero(ctx, x, 4), Contains("zero: got a CUDA context, but this build has no CUDA backend"));
  CHECK_THROWS_WITH(core::matmul(ctx, x, x, x, 2, 2, 1, core::Trans::no, core::Trans::no),
                    Contains("matmul_strided: got a CUDA context"));
  CHECK_THROWS_WITH(core::copy_to_device(ctx, x, x, 4), Contains("no CUDA backend"));
  CHECK(x[3] == 4.0f);  // nothing touched
}
#endif

TEST_CASE("the device communicator is chosen alike on every rank, and a forced nccl that cannot work says why",
          "[setup]") {
  using comm::DeviceComm;
  CHECK(comm::parse_device_comm("auto") == DeviceComm::automatic);
  CHECK(comm::parse_device_comm("nccl") == DeviceComm::nccl);
  CHECK(comm::parse_device_comm("staged") == DeviceComm::staged);
  CHECK_THROWS_AS(comm::parse_device_comm("mpi"), core::ConfigError);
  CHECK(std::string(comm::device_comm_name(DeviceComm::automatic)) == "auto");

  // auto: NCCL when every rank of a node has its own GPU (and NCCL is built), staged otherwise
  CHECK(comm::resolve_device_comm(DeviceComm::automatic, 4, 4, true) == DeviceComm::nccl);
  CHECK(comm::resolve_device_comm(DeviceComm::automatic, 4, 1, true) == DeviceComm::staged);
  CHECK(comm::resolve_device_comm(DeviceComm::automatic, 1, 1, false) == DeviceComm::staged);
  CHECK(comm::resolve_device_comm(DeviceComm::staged, 1, 8, true) == DeviceComm::staged);
  CHECK(comm::resolve_device_comm(DeviceComm::nccl, 2, 2, true) == DeviceComm::nccl);
  CHECK_THROWS_WITH(comm::resolve_device_comm(DeviceComm::nccl, 4, 1, true),
                    Contains("needs one GPU per rank, but a node runs 4 ranks on 1 GPU(s)"));
  CHECK_THROWS_AS(comm::resolve_device_comm(DeviceComm::nccl, 1, 1, false), core::ConfigError);
}

TEST_CASE("a node's ranks get GPUs of their own by PCI bus id, whether each sees all of them or only its own",
          "[setup]") {
  using V = std::vector<std::vector<std::string>>;
  const std::vector<std::string> four = {"0000:1B:00.0", "0000:3B:00.0", "0000:5B:00.0", "0000:7B:00.0"};
  // Every rank sees the node's 4 GPUs: one each, in order.
  CHECK(comm::assign_gpus(V(4, four)) == std::vector<int>{0, 1, 2, 3});
  // Each rank sees only its own (CUDA_VISIBLE_DEVICES per task, as Slurm's --gpus-per-task=1 sets):
  // index 0 for each, and four different GPUs.
  CHECK(comm::assign_gpus(V{{four[2]}, {four[0]}, {four[3]}, {four[1]}}) == std::vector<int>{0, 0, 0, 0});
  // 4 ranks on 1 GPU share it; on 2 GPUs two ranks share each.
  CHECK(comm::assign_gpus(V(4, {four[0]})) == std::vector<int>{0, 0, 0, 0});
  CHECK(comm::assign_gpus(V(4, {four[0], four[1]})) == std::vector<int>{0, 1, 0, 1});
  // Ranks that see the same GPUs in different orders still get different ones (four[0], then four[1]).
  CHECK(comm::assign_gpus(V{{four[0], four[1]}, {four[1], four[0]}}) == std::vector<int>{0, 0});
  // A rank that sees no GPU gets none.
  CHECK(comm::assign_gpus(V{{four[0]}, {}}) == std::vector<int>{0, -1});

  using comm::DeviceComm;
  CHECK(comm::describe_device_comm(DeviceComm::nccl, 4, 4) == "nccl (each of a node's 4 ranks has a GPU of its own)");
  CHECK(comm::describe_device_comm(DeviceComm::staged, 4, 1) ==
        "staged (a node's 4 ranks share 1 GPU(s): NCCL needs one GPU per rank)");
}
