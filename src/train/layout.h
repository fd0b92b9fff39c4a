// The layouts a run can use — serial, Megatron's 1D, Optimus's 2D, 3D — in one table. Each entry says
// everything the code around the stages needs to know of its layout: its name on the command line,
// which numbers of ranks and which batches it can split, the communicators its grid splits a world
// into, and how to build its model on a group of ranks. The trainer, the benchmark, the planner and
// the command line read the table; nothing else knows a layout by name. Adding a layout is a stage
// folder and one entry here (docs/extending.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_comm.h"
#include "comm/grid.h"
#include "comm/meta_communicator.h"
#include "comm/world.h"
#include "core/context.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "model/model.h"

namespace optimus::train {

enum class Layout { serial, tp1d, tp2d, tp3d };

/// The layout named `name` on the command line; anything else is a ConfigError naming the choices.
Layout parse_layout(const std::string& name);
/// The command line's name of `layout` ("serial", "1d", "2d", "3d"), also written into checkpoints.
const char* to_string(Layout layout);
/// "serial, 1d, 2d or 3d": the choices, for help texts and messages.
std::string layout_choices();

/// A model built for a layout, with the grid it computes on (none for serial), which outlives it.
struct LayoutModel {
  std::shared_ptr<const void> grid;     // comm::Grid1D, comm::Grid2D or comm::Grid3D
  std::unique_ptr<model::Model> model;  // serial::GPT, tp1d::GPT, tp2d::GPT or tp3d::GPT
};

/// How the words of a batch check's message name the batch: `batch`, the B of the message (e.g.
/// "--batch 8", or a copy's share under data parallelism), and `choose`, what to change.
struct BatchWords {
  std::string batch;
  std::string choose = "choose --batch";
};

struct GemmProduct;  // train/gemm_reference.h

/// One row of the table.
struct LayoutDefinition {
  Layout layout;
  const char* name;                 // the value of --layout
  bool sequence_parallel;           // whether it has Megatron's sequence parallelism (a mode of its layers)
  comm::Placement::Grid placement;  // the grid --placement arranges: square (2d), cube (3d) or none
  bool summa;                       // whether --overlap hides its own communication (SUMMA's broadcasts)
  /// ConfigError unless `ranks` ranks can run the layout; `who` names them in the message.
  void (*require_ranks)(int ranks, const std::string& who, bool data_parallel);
  /// The batch sizes it can split are the multiples of this, at T tokens a sequence.
  int (*batch_unit)(int ranks, int T, bool sequence_parallel);
  /// ConfigError unless a pass of B sequences of T tokens splits over `ranks` (the stage's own check).
  void (*require_batch)(int B, int T, int ranks, bool sequence_parallel, const BatchWords& words);
  /// ConfigError unless the model's widths split over `ranks` (the stage's own check, no collective).
  void (*require_shapes)(const model::GPTConfig& config, int ranks);
  /// The communicators its grid splits a world of `ranks` into: names and sizes (the meta world's).
  comm::SplitSizes (*splits)(int ranks);
  /// Builds the model on `group` (collective over it: the grid's splits), after require_fits and
  /// require_shapes.
  LayoutModel (*build)(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed,
                       comm::Communicator& group, const model::StageOptions& options);
  /// The matrix products one of `ranks` ranks runs in a forward and backward pass of `rows` token
  /// rows (the bench's reference, train/gemm_reference.h).
  std::vector<GemmProduct> (*products)(const model::GPTConfig& config, int ranks, int rows, model::Recompute recompute);
};

/// The row of `layout`.
const LayoutDefinition& definition(Layout layout);

/// Throws core::ConfigError, on every rank alike, unless `layout` can run on `ranks` ranks that are
/// one model copy of `copies` (data parallelism; 1: the world) with `options`: sequence parallelism
/// only where the layout has it, a --placement only for the grid the layout has (2d's square, 3d's
/// cube), and one that tiles it.
/// Needs no communication and no model: called first, before any file is read, so a wrong launch is
/// the first thing a user hears about.
void require_fits(Layout layout, int ranks, const model::StageOptions& options, int copies = 1);

/// Throws core::ConfigError, on every rank alike, unless the layout on `ranks` ranks can split a
/// batch of B sequences of T tokens in `grad_accum` micro-batches of B / grad_accum (2D cuts a
/// micro-batch over the q rows of its grid, 1D with sequence parallelism its tokens over its p
/// ranks). `batch` names the B of the message (default "--batch B").
void require_batch_fits(Layout layout, int B, int ranks, int T = 1, bool sequence_parallel = false, int grad_accum = 1,
                        std::string batch = "");

/// The batch sizes `layout` on `ranks` ranks can split: the multiples of this.
int batch_unit(Layout layout, int ranks, int T, bool sequence_parallel);

/// Builds the model of `layout` on the ranks of `group` (initialised from `seed`, its memory and ops
/// on `ctx`, recomputation, sequence parallelism, overlap and placement as `options` ask). A layout,
/// model width or option that does not fit (require_fits, the layout's require_shapes) is a
/// core::ConfigError raised identically on every rank before any communication.
LayoutModel build_model(Layout layout, const model::GPTConfig& config, uint32_t seed, comm::Communicator& group,
                        const core::Context& ctx, const model::StageOptions& options);

/// The same for the whole world, its collectives on the World's communicator on the CPU and on a
/// device communicator over the same ranks on a GPU (NCCL or host-staged, comm/device_comm.h; rank 0
/// says which on stderr), which `owned` keeps alive; the checks come before that communicator.
LayoutModel build_model(Layout layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
                        const core::Context& ctx, comm::DeviceComm device_comm, const model::StageOptions& options,
                        std::unique_ptr<comm::Communicator>& owned);

/// Rank `rank` of a meta world of D·`ranks` ranks for D = `data_parallel` copies of `layout` on
/// `ranks` each, recording into `ledger`: the splits of the layout's grid, and for D > 1
/// train::DataParallel's ("model", ranks; "data", D).
std::unique_ptr<comm::MetaCommunicator> meta_world(Layout layout, int ranks, int rank, comm::CommLedger& ledger,
                                                   int data_parallel = 1);

}  // namespace optimus::train
