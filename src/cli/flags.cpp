// The shared flags.
#include "cli/flags.h"

#include <climits>
#include <string>

#include "comm/grid.h"
#include "core/errors.h"

namespace optimus::cli {

void add_layout_option(CLI::App* app, train::Layout& layout) {
  app->add_option_function<std::string>(
      "--layout", [&layout](const std::string& name) { layout = train::parse_layout(name); },
      train::layout_choices() + " (default: " + train::to_string(layout) + ")");
}

void add_model_flags(CLI::App* app, model::GPTConfig& m) {
  app->add_option("--layers", m.n_layer, "number of transformer blocks L")->capture_default_str();
  app->add_option("--embd", m.n_embd, "embedding width C")->capture_default_str();
  app->add_option("--heads", m.n_head, "attention heads NH (must divide C)")->capture_default_str();
  app->add_option("--seq", m.n_positions, "sequence length T (also the model's n_positions)")->capture_default_str();
  app->add_option("--dropout", m.dropout, "dropout probability")->capture_default_str();
}

void add_memory_flags(CLI::App* app, model::StageOptions& m) {
  app->add_option_function<std::string>(
      "--recompute", [&m](const std::string& name) { m.recompute = model::parse_recompute(name); },
      "what the forward pass keeps: none (every activation, the default) or block (each block's input; the "
      "backward pass reruns the block's forward)");
  app->add_flag("--sequence-parallel", m.sequence_parallel,
                "1d only: split the LayerNorms, dropouts and residual adds over the ranks by tokens (Megatron's "
                "sequence parallelism)");
}

void add_overlap_flag(CLI::App* app, model::StageOptions& m) {
  app->add_flag("--overlap", m.overlap,
                "overlap communication with computation: 2d starts each SUMMA step's broadcasts during the step "
                "before; data parallelism sums a block's gradients while the backward pass goes on (the results "
                "are bitwise the same)");
}

void add_placement_option(CLI::App* app, model::StageOptions& m) {
  app->add_option_function<std::string>(
      "--placement", [&m](const std::string& text) { m.placement = comm::Placement::parse(text); },
      "which grid position each rank holds. 2d: row-major (rank i*q + j at (i, j), the default), or RxC: "
      "blocks of R grid rows by C grid columns on consecutive ranks, one block per node (2x2 is the Optimus "
      "code's --rank-rearrange). 3d: the line of the cube on consecutive ranks: depth (rank (i*q + j)*q + k, "
      "the default; row-major names it too), row or col. The results are bitwise the same, only the traffic "
      "between nodes changes");
}

void require_path_length(const char* flag, const std::string& path) {
  if (path.size() < PATH_MAX) return;
  throw core::ConfigError(std::string(flag) + " '" + path.substr(0, 40) + "...' is " + std::to_string(path.size()) +
                          " characters long, more than a path can have (" + std::to_string(PATH_MAX - 1) +
                          "); check it");
}

}  // namespace optimus::cli
