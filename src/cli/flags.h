// The flags several subcommands share: the layout, the model's shape, chapter 5's memory
// techniques, chapter 6's overlap and the placement of the 2D grid (chapter 4) and the 3D cube
// (chapter 7).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "model/activation_block.h"
#include "model/config.h"
#include "train/layout.h"

namespace optimus::cli {

/// --layout, parsed by the layout table (train/layout.h); an unknown name is a ConfigError.
void add_layout_option(CLI::App* app, train::Layout& layout);
/// --layers, --embd, --heads, --seq, --dropout (train, init and plan).
void add_model_flags(CLI::App* app, model::GPTConfig& m);
/// --recompute, --sequence-parallel (train, bench and plan).
void add_memory_flags(CLI::App* app, model::StageOptions& m);
/// --overlap (train and bench; plan has its own, which also predicts its time).
void add_overlap_flag(CLI::App* app, model::StageOptions& m);
/// --placement (train, bench and plan).
void add_placement_option(CLI::App* app, model::StageOptions& m);

/// Refuses a path longer than any path can be (PATH_MAX bytes with its end), before a message could
/// echo it whole: the refusal shows its first 40 characters and its length.
void require_path_length(const char* flag, const std::string& path);

}  // namespace optimus::cli
