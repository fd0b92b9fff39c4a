// What the 3D product and the 3D layers share inside tp3d (not part of its interface): the
// divisibility check every rank makes before any communication, and a pass's scratch.
#pragma once

#include <cstdint>
#include <string>

#include "core/context.h"
#include "core/tensor.h"

namespace optimus::tp3d {

/// Throws core::ConfigError ("<who> needs <what> = n to be a positive multiple of <by_name> = by,
/// since <why>; pad the matrices or choose another cube") unless n is one. Every rank sees the
/// same sizes, so every rank throws alike and nobody waits in a collective.
void check_multiple(const std::string& who, const std::string& what, int n, int by, const std::string& by_name,
                    const std::string& why);

/// (rows, cols) floats of scratch for one pass, on *ctx.ledger as communication.
core::Buffer scratch(const core::Context& ctx, int64_t rows, int64_t cols);

}  // namespace optimus::tp3d
