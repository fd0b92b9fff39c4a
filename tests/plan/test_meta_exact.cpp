// The meta device's accounting is exact: each rank runs one training step of a layout for real, on
// the CPU under MPI, then the same step on the meta device with a MetaCommunicator playing its own
// rank of a world of the same size, in fresh ledgers; the two runs' memory ledgers (current and
// peak, per category), communication ledgers (every communicator and operation: calls, bytes,
// group size) and op ledgers (per kind: calls, FLOPs, bytes) must be equal, rank by rank. Run under
// mpiexec -np P with the layout's tag: [serial] at 1, [tp1d] at 2 and 4, [tp2d] at 4 and 9, [tp3d] at 8,
// and [tp3d_placed] at 8: the cube with its row lines on consecutive ranks (--placement row).
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "core/philox.h"
#include "mpi_test.h"
#include "plan/step.h"

using namespace optimus;

namespace {

/// The two shapes: the byte vocabulary (padded by q = 3) with dropout on, and a prime vocabulary
/// (padded by every p and q > 1) without. NH = 12 and C divide by p = 2, 4 and q = 2, 3.
model::GPTConfig byte_vocabulary() {
  model::GPTConfig c;
  c.n_layer = 2, c.n_embd = 48, c.n_head = 12, c.n_positions = 8, c.vocab_size = 256, c.dropout = 0.1f;
  return c;
}

model::GPTConfig prime_vocabulary() {
  model::GPTConfig c;
  c.n_layer = 1, c.n_embd = 36, c.n_head = 12, c.n_positions = 4, c.vocab_size = 101, c.dropout = 0.0f;
  return c;
}

constexpr int kBatch = 6;    // a multiple of q = 2 and 3
constexpr int kBatch3d = 8;  // a multiple of q² = 4 (both shapes' C divides by q² = 4 and NH by q = 2)

std::vector<int> tokens(int64_t n, int vocab, uint32_t salt) {
  std::vector<int> x(static_cast<size_t>(n));
  const core::PhiloxKey key{2024u, salt};
  for (int64_t k = 0; k < n; ++k) {
    x[static_cast<size_t>(k)] = static_cast<int>(core::philox(key, static_cast<uint64_t>(k)).v[0] % vocab);
  }
  return x;
}

struct Ledgers {
  core::MemoryLedger memory;
  comm::CommLedger comm;
  core::OpLedger ops;
};

// Each comparison reports its first difference on this rank.
bool same_memory(const core::MemorySnapshot& meta, const core::MemorySnapshot& cpu, const char* when) {
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    if (meta.current(category) != cpu.current(category) || meta.peak(category) != cpu.peak(category)) {
      UNSCOPED_INFO("rank " << mpi_test::world().rank() << ", " << when << ": " << core::memory_category_name(category)
                            << " meta current/peak " << meta.current(category) << "/" << meta.peak(category) << ", cpu "
                            << cpu.current(category) << "/" << cpu.peak(category));
      return false;
    }
  }
  return meta.current_total() == cpu.current_total() && meta.peak_total() == cpu.peak_total();
}

bool same_comm(const comm::CommLedger& meta, const comm::CommLedger& cpu) {
  if (meta.communicators() != cpu.communicators()) {
    UNSCOPED_INFO("rank " << mpi_test::world().rank() << ": the communicators differ:\nmeta\n"
                          << meta.report() << "cpu\n"
                          << cpu.report());
    return false;
  }
  for (const std::string& name : cpu.communicators()) {
    bool same = meta.group_size(name) == cpu.group_size(name);
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      same = same && meta.calls(name, op) == cpu.calls(name, op) && meta.bytes(name, op) == cpu.bytes(name, op);
    }
    if (!same) {
      UNSCOPED_INFO("rank " << mpi_test::world().rank() << ": '" << name << "' differs (group of "
                            << meta.group_size(name) << " on meta, " << cpu.group_size(name) << " on the cpu):\nmeta\n"
                            << meta.report() << "cpu\n"
                            << cpu.report());
      return false;
    }
  }
  return true;
}

bool same_ops(const core::OpLedger& meta, const core::OpLedger& cpu) {
  if (meta == cpu) return true;
  UNSCOPED_INFO("rank " << mpi_test::world().rank() << ": the op ledgers differ:\nmeta\n"
                        << meta.report() << "cpu\n"
                        << cpu.report());
  return false;
}

/// Rank 0 prints what the ranks recorded, summed over the world, and its own peak.
void print_totals(const std::string& what, const Ledgers& cpu) {
  const core::OpLedger::Totals ops = cpu.ops.total();
  long long mine[4] = {ops.flops, ops.calls, cpu.comm.calls(), cpu.comm.bytes()}, all[4] = {};
  OPTIMUS_MPI_CHECK(MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  mpi_test::world().print0(
      "meta = cpu, %s: every rank's ledgers equal; all ranks together %lld FLOPs in %lld op calls, %lld "
      "collectives of %lld bytes; rank 0 peaks at %zu bytes (%zu of activations)\n",
      what.c_str(), all[0], all[1], all[2], all[3], cpu.memory.peak_total(),
      cpu.memory.peak(core::MemoryCategory::activations));
}

void require_meta_equals_cpu(const std::string& layout, const model::GPTConfig& config, const std::string& shape, int B,
                             const model::StageOptions& stage) {
  const int P = mpi_test::world().size(), rank = mpi_test::world().rank();
  plan::StepOptions options;
  options.B = B, options.T = config.n_positions;
  options.grad_clip = 0.0f;  // the norm is computed and reduced; scaling by it would depend on its value
  options.stage = stage;
  const std::vector<int> inputs = tokens(int64_t{options.B} * options.T, config.vocab_size, 1);
  const std::vector<int> targets = tokens(int64_t{options.B} * options.T, config.vocab_size, 2);

  Ledgers cpu, meta;
  plan::StepResult on_cpu, on_meta;
  {
    comm::MpiCommunicator world(MPI_COMM_WORLD, "world", cpu.comm);
    on_cpu = plan::run_training_step(train::parse_layout(layout), config, core::cpu_context(cpu.memory, &cpu.ops),
                                     world, options, inputs.data(), targets.data());
  }
  {
    auto world = train::meta_world(train::parse_layout(layout), P, rank, meta.comm);
    on_meta = plan::run_training_step(train::parse_layout(layout), config,
                                      core::meta_context(meta.memory, &meta.ops, omp_get_max_threads()), *world,
                                      options, inputs.data(), targets.data());
  }

  MPI_REQUIRE((std::isfinite(on_cpu.loss) && std::isfinite(on_cpu.norm)));
  MPI_REQUIRE((std::isnan(on_meta.loss) && std::isnan(on_meta.norm)));  // values meta does not have
  MPI_REQUIRE(cpu.ops.total().flops > 0);
  MPI_REQUIRE((P == 1 || cpu.comm.calls() > 0));
  MPI_REQUIRE(on_cpu.after_step.current_total() > 0);
  MPI_REQUIRE(same_memory(on_meta.after_step, on_cpu.after_step, "after the step"));
  MPI_REQUIRE(same_memory(meta.memory.snapshot(), cpu.memory.snapshot(), "after release"));
  MPI_REQUIRE(same_comm(meta.comm, cpu.comm));
  MPI_REQUIRE(same_ops(meta.ops, cpu.ops));
  print_totals(layout + " on " + std::to_string(P) + " rank" + (P == 1 ? "" : "s") + ", " + shape, cpu);
}

void require_both_shapes(const std::string& layout, int B = kBatch, const model::StageOptions& stage = {}) {
  const std::string b = " B" + std::to_string(B);
  const std::string placed =
      stage.placement.grid == comm::Placement::Grid::none ? "" : ", --placement " + stage.placement.name();
  SECTION("L2 C48 NH12 V256 (padded by q = 3) T8, dropout 0.1") {
    require_meta_equals_cpu(layout, byte_vocabulary(), "L2 C48 NH12 V256 T8" + b + " dropout 0.1" + placed, B, stage);
  }
  SECTION("L1 C36 NH12 V101 (padded by every p and q > 1) T4, no dropout") {
    require_meta_equals_cpu(layout, prime_vocabulary(), "L1 C36 NH12 V101 T4" + b + placed, B, stage);
  }
}

}  // namespace

TEST_CASE("the serial GPT's step on meta records exactly its CPU run's ledgers", "[serial]") {
  require_both_shapes("serial");
}

TEST_CASE("a Megatron 1D rank's step on meta records exactly its CPU run's ledgers, rank by rank", "[tp1d]") {
  require_both_shapes("1d");
}

TEST_CASE("an Optimus 2D rank's step on meta records exactly its CPU run's ledgers, rank by rank", "[tp2d]") {
  require_both_shapes("2d");
}

TEST_CASE("a 3D rank's step on meta records exactly its CPU run's ledgers, rank by rank", "[tp3d]") {
  require_both_shapes("3d", kBatch3d);
}

TEST_CASE(
    "a 3D rank's step with the cube's row lines on consecutive ranks on meta records exactly its CPU run's "
    "ledgers, rank by rank",
    "[tp3d_placed]") {
  model::StageOptions stage;
  stage.placement = comm::Placement::parse("row");
  require_both_shapes("3d", kBatch3d, stage);
}
