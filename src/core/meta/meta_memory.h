// The addresses of meta Buffers: ranges in the upper half of the 64-bit address space, which a
// user process can never read or write on Linux (x86-64: the kernel's half, or no address at all;
// aarch64: the kernel's translation table). They cost no memory and no address space, so a meta run
// has no limit but the ledgers' (not even ulimit -v); offsets into them are pointers as for a real
// buffer, and an op that wrongly reads or writes one stops with a segmentation fault at once
// instead of computing with made-up numbers.
#pragma once

#include <cstddef>

namespace optimus::core {

/// A range of `bytes` (> 0; std::bad_alloc past 2^54), 64-byte aligned. Ranges are handed out one
/// after the other, so no two overlap until 2^55 bytes (32 PiB) in all have been, when the count
/// starts again from the bottom. Nothing to give back.
void* meta_address(size_t bytes);

}  // namespace optimus::core
