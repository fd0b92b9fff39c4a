// The table of layouts, and the checks and builders that read it.
#include "train/layout.h"

#include <array>
#include <cstdio>
#include <numeric>

#include "core/errors.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp1d/shard_1d.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"
#include "tp3d/gpt.h"
#include "tp3d/shard_3d.h"
#include "tp3d/vocabulary.h"
#include "train/gemm_reference.h"

namespace optimus::train {

namespace {

// ---- serial: one rank holds the whole model --------------------------------------------------------

void serial_ranks(int ranks, const std::string& who, bool data_parallel) {
  if (ranks == 1) return;
  throw core::ConfigError("the serial layout runs on 1 process, but " + who +
                          (data_parallel ? "; choose --data-parallel equal to the processes, or --layout 1d, 2d or 3d"
                                         : "; run without mpirun or choose --layout 1d, 2d or 3d"));
}

LayoutModel serial_build(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, comm::Communicator&,
                         const model::StageOptions& options) {
  return {nullptr, std::make_unique<serial::GPT>(config, ctx, seed, options)};
}

// ---- 1d: Megatron's column- and row-parallel layers over p ranks ------------------------------------

void any_ranks(int, const std::string&, bool) {}

int tp1d_batch_unit(int ranks, int T, bool sequence_parallel) {
  return sequence_parallel ? ranks / std::gcd(ranks, T) : 1;
}

void tp1d_batch(int B, int T, int ranks, bool sequence_parallel, const BatchWords& words) {
  if (sequence_parallel) tp1d::check_tokens_divisible(int64_t{B} * T, ranks, words.choose);
}

LayoutModel tp1d_build(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed,
                       comm::Communicator& group, const model::StageOptions& options) {
  auto grid = std::make_shared<const comm::Grid1D>(group);
  return {grid, std::make_unique<tp1d::GPT>(config, ctx, seed, *grid, options)};
}

// ---- 2d: Optimus's SUMMA on a q×q grid -------------------------------------------------------------

void tp2d_ranks(int ranks, const std::string& who, bool) {
  comm::Grid2D::side(ranks, who);  // a ConfigError unless the ranks are a square
}

int tp2d_batch_unit(int ranks, int, bool) {
  return comm::Grid2D::side(ranks);
}

void tp2d_batch(int B, int, int ranks, bool, const BatchWords& words) {
  tp2d::check_batch_divisible_2d(B, comm::Grid2D::side(ranks), words.batch, words.choose);
}

void tp2d_shapes(const model::GPTConfig& config, int ranks) {
  tp2d::check_divisible_2d(config, comm::Grid2D::side(ranks));
}

comm::SplitSizes tp2d_splits(int ranks) {
  const int q = comm::Grid2D::side(ranks);
  return {{"row", q}, {"col", q}, {"world", ranks}};  // "world": a block placement's renumbered grid
}

LayoutModel tp2d_build(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed,
                       comm::Communicator& group, const model::StageOptions& options) {
  auto grid = std::make_shared<const comm::Grid2D>(group, options.placement.square, options.overlap);
  return {grid, std::make_unique<tp2d::GPT>(config, ctx, seed, *grid, options)};
}

// ---- 3d: the 3D product on a q×q×q cube -----------------------------------------------------------

void tp3d_ranks(int ranks, const std::string& who, bool) {
  comm::Grid3D::side(ranks, who);  // a ConfigError unless the ranks are a cube
}

int tp3d_batch_unit(int ranks, int, bool) {
  const int q = comm::Grid3D::side(ranks);
  return q * q;
}

void tp3d_batch(int B, int, int ranks, bool, const BatchWords& words) {
  tp3d::check_batch_divisible_3d(B, comm::Grid3D::side(ranks), words.batch, words.choose);
}

void tp3d_shapes(const model::GPTConfig& config, int ranks) {
  tp3d::check_divisible_3d(config, comm::Grid3D::side(ranks));
}

comm::SplitSizes tp3d_splits(int ranks) {
  const int q = comm::Grid3D::side(ranks);
  return {{"cube_row", q}, {"cube_col", q}, {"cube_depth", q}, {"world", ranks}};  // "world": a placed cube's
}

LayoutModel tp3d_build(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed,
                       comm::Communicator& group, const model::StageOptions& options) {
  auto cube = std::make_shared<const comm::Grid3D>(group, options.placement.cube);
  return {cube, std::make_unique<tp3d::GPT>(config, ctx, seed, *cube, options)};
}

// Each stage's matrix products of a pass: serial's full ones, 1D's local ones with its vocabulary
// part ⌈V/p⌉, SUMMA's q block products of 2D's, the vocabulary padded to q·⌈V/q⌉, and 3D's one
// block product per product, the vocabulary padded to q²·⌈V/q²⌉.
std::vector<GemmProduct> serial_products(const model::GPTConfig& config, int, int rows, model::Recompute recompute) {
  return stage_products(config, 1, rows, config.vocab_size, recompute);
}

std::vector<GemmProduct> tp1d_products(const model::GPTConfig& config, int ranks, int rows,
                                       model::Recompute recompute) {
  return stage_products(config, ranks, rows, tp1d::vocab_part(config, ranks), recompute);
}

std::vector<GemmProduct> tp2d_products(const model::GPTConfig& config, int ranks, int rows,
                                       model::Recompute recompute) {
  const int q = comm::Grid2D::side(ranks);
  return summa_blocks(stage_products(config, 1, rows, tp2d::vocab_block(config, q) * q, recompute), q);
}

std::vector<GemmProduct> tp3d_products(const model::GPTConfig& config, int ranks, int rows,
                                       model::Recompute recompute) {
  const int q = comm::Grid3D::side(ranks);
  return cube_blocks(stage_products(config, 1, rows, tp3d::vocab_piece(config, q) * q * q, recompute), q);
}

// The stages check their own widths as they are built; 2D's must come before its grid's splits.
void shapes_checked_by_stage(const model::GPTConfig&, int) {}
void any_batch(int, int, int, bool, const BatchWords&) {}
int one(int, int, bool) {
  return 1;
}
comm::SplitSizes no_splits(int) {
  return {};
}

using Grid = comm::Placement::Grid;

const std::array<LayoutDefinition, 4> kLayouts = {{
    {.layout = Layout::serial,
     .name = "serial",
     .sequence_parallel = false,
     .placement = Grid::none,
     .summa = false,
     .require_ranks = serial_ranks,
     .batch_unit = one,
     .require_batch = any_batch,
     .require_shapes = shapes_checked_by_stage,
     .splits = no_splits,
     .build = serial_build,
     .products = serial_products},
    {.layout = Layout::tp1d,
     .name = "1d",
     .sequence_parallel = true,
     .placement = Grid::none,
     .summa = false,
     .require_ranks = any_ranks,
     .batch_unit = tp1d_batch_unit,
     .require_batch = tp1d_batch,
     .require_shapes = shapes_checked_by_stage,
     .splits = no_splits,
     .build = tp1d_build,
     .products = tp1d_products},
    {.layout = Layout::tp2d,
     .name = "2d",
     .sequence_parallel = false,
     .placement = Grid::square,
     .summa = true,
     .require_ranks = tp2d_ranks,
     .batch_unit = tp2d_batch_unit,
     .require_batch = tp2d_batch,
     .require_shapes = tp2d_shapes,
     .splits = tp2d_splits,
     .build = tp2d_build,
     .products = tp2d_products},
    {.layout = Layout::tp3d,
     .name = "3d",
     .sequence_parallel = false,
     .placement = Grid::cube,
     .summa = false,
     .require_ranks = tp3d_ranks,
     .batch_unit = tp3d_batch_unit,
     .require_batch = tp3d_batch,
     .require_shapes = tp3d_shapes,
     .splits = tp3d_splits,
     .build = tp3d_build,
     .products = tp3d_products},
}};

// The name of the layout whose ranks form `grid` (the first such row).
const char* layout_with(Grid grid) {
  for (const LayoutDefinition& d : kLayouts) {
    if (d.placement == grid) return d.name;
  }
  return "";
}

}  // namespace

const LayoutDefinition& definition(Layout layout) {
  return kLayouts[static_cast<size_t>(layout)];
}

std::string layout_choices() {
  std::string choices;
  for (size_t k = 0; k < kLayouts.size(); ++k) {
    choices += (k == 0 ? "" : k + 1 == kLayouts.size() ? " or " : ", ") + std::string(kLayouts[k].name);
  }
  return choices;
}

Layout parse_layout(const std::string& name) {
  for (const LayoutDefinition& d : kLayouts) {
    if (name == d.name) return d.layout;
  }
  throw core::ConfigError("unknown layout '" + name.substr(0, 40) + "'; choose " + layout_choices());
}

const char* to_string(Layout layout) {
  return definition(layout).name;
}

void require_fits(Layout layout, int ranks, const model::StageOptions& options, int copies) {
  const LayoutDefinition& d = definition(layout);
  const std::string who = copies == 1
                              ? "the world has " + std::to_string(ranks)
                              : "one model copy has " + std::to_string(ranks) + " (" + std::to_string(ranks * copies) +
                                    " processes / --data-parallel " + std::to_string(copies) + ")";
  d.require_ranks(ranks, who, copies > 1);
  if (options.sequence_parallel && !d.sequence_parallel) {
    throw core::ConfigError(std::string("--sequence-parallel is a mode of the 1d layout, not of ") + d.name +
                            "; use it with --layout 1d");
  }
  const comm::Placement& placement = options.placement;
  if (placement.grid == Grid::none) return;
  if (placement.grid != d.placement) {
    const char* owner = layout_with(placement.grid);
    throw core::ConfigError("--placement " + placement.name() + " arranges the " +
                            comm::Placement::noun(placement.grid) + " of the " + owner + " layout, and " + d.name +
                            " has none; use --placement row-major or " + "--layout " + owner);
  }
  placement.check(ranks);
}

void require_batch_fits(Layout layout, int B, int ranks, int T, bool sequence_parallel, int grad_accum,
                        std::string batch) {
  const int Bm = B / grad_accum;
  if (batch.empty()) batch = "--batch " + std::to_string(B);
  BatchWords words{batch, "choose --batch"};
  if (grad_accum > 1) {
    words.batch = "the micro-batch (" + batch + " / --grad-accum " + std::to_string(grad_accum) + " = " +
                  std::to_string(Bm) + ")";
    words.choose = "choose --batch / --grad-accum";
  }
  definition(layout).require_batch(Bm, T, ranks, sequence_parallel, words);
}

int batch_unit(Layout layout, int ranks, int T, bool sequence_parallel) {
  return definition(layout).batch_unit(ranks, T, sequence_parallel);
}

LayoutModel build_model(Layout layout, const model::GPTConfig& config, uint32_t seed, comm::Communicator& group,
                        const core::Context& ctx, const model::StageOptions& options) {
  const LayoutDefinition& d = definition(layout);
  require_fits(layout, group.size(), options);
  d.require_shapes(config, group.size());
  return d.build(config, ctx, seed, group, options);
}

LayoutModel build_model(Layout layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
                        const core::Context& ctx, comm::DeviceComm device_comm, const model::StageOptions& options,
                        std::unique_ptr<comm::Communicator>& owned) {
  const LayoutDefinition& d = definition(layout);
  require_fits(layout, world.size(), options);
  d.require_shapes(config, world.size());  // before the device communicator and the grid's splits
  comm::Communicator* group = &world.comm();
  if (layout != Layout::serial && ctx.device != core::Device::cpu) {
    std::string chosen;
    owned =
        comm::make_device_communicator(MPI_COMM_WORLD, ctx, device_comm, "world", comm::CommLedger::process(), &chosen);
    if (world.rank() == 0) std::fprintf(stderr, "optimus: device communicator: %s\n", chosen.c_str());
    group = owned.get();
  }
  return d.build(config, ctx, seed, *group, options);
}

std::unique_ptr<comm::MetaCommunicator> meta_world(Layout layout, int ranks, int rank, comm::CommLedger& ledger,
                                                   int data_parallel) {
  comm::SplitSizes splits = definition(layout).splits(ranks);
  if (data_parallel > 1) splits["model"] = ranks, splits["data"] = data_parallel;
  return comm::MetaCommunicator::world(ranks * data_parallel, rank, splits, ledger);
}

}  // namespace optimus::train
