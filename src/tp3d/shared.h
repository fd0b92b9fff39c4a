// What the 3D product and the 3D layers share inside tp3d (not part of its interface): the
// divisibility check every rank makes before any communication.
#pragma once

#include <string>

namespace optimus::tp3d {

/// Throws core::ConfigError ("<who> needs <what> = n to be a positive multiple of <by_name> = by,
/// since <why>; pad the matrices or choose another cube") unless n is one. Every rank sees the
/// same sizes, so every rank throws alike and nobody waits in a collective.
void check_multiple(const std::string& who, const std::string& what, int n, int by, const std::string& by_name,
                    const std::string& why);

}  // namespace optimus::tp3d
