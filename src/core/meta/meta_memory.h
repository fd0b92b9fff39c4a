// The memory behind a meta Buffer: an address range reserved from the operating system with no
// access allowed (mmap PROT_NONE). It costs no memory, offsets into it are valid pointers as for a
// real buffer, and an op that wrongly reads or writes it stops with a segmentation fault at once
// instead of computing with made-up numbers. A process can reserve up to its address space
// (128 TiB on x86-64 Linux), far beyond any machine's memory.
#pragma once

#include <cstddef>

namespace optimus::core {

/// Reserves `bytes` (> 0) of address space with no access; throws std::bad_alloc if it cannot.
void* meta_reserve(size_t bytes);
/// Returns a range meta_reserve gave; never throws.
void meta_unreserve(void* p, size_t bytes) noexcept;

}  // namespace optimus::core
