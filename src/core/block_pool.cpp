// The block cache behind Buffers: host blocks from aligned_alloc (large ones from mmap), GPU blocks from
// core/cuda/device.cu (no_cuda.cpp in a build without the CUDA backend); a host block zero-filled
// when asked, a GPU block on every take (block_pool.h says why).
#include "core/block_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "core/cuda/device_memory.h"

namespace optimus::core {

namespace {

// Host blocks of this size and more are pages straight from the system (an anonymous mmap): page-
// aligned, and zero until written, so Fill::zero_lazy need not write them.
constexpr size_t kPageBlockBytes = size_t{1} << 20;

// Host blocks of this size and more ask for the system's 2 MiB pages where it has them (Linux's
// transparent huge pages, when set to "madvise"): a matrix product's packing walks the rows of its
// operands, and one TLB entry then covers 512 times the memory. Only where the data lie changes.
constexpr size_t kHugePageBytes = size_t{2} << 20;

// A new host block of `bytes`, zero-filled when `fill` asks.
void* host_alloc(size_t bytes, Fill fill) {
  if (bytes >= kPageBlockBytes) {
    void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    if (bytes >= kHugePageBytes) ::madvise(block, bytes, MADV_HUGEPAGE);  // a hint: no error if refused
    // Written, for Fill::zero: a first write takes a page at once, where a first read would map the
    // shared zero page and the write after it would copy it (fill's comment).
    if (fill == Fill::zero) std::memset(block, 0, bytes);
    return block;
  }
  // 64-byte alignment for vector loads; aligned_alloc needs a multiple of the alignment.
  void* block = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (block == nullptr) throw std::bad_alloc();
  if (fill != Fill::none) std::memset(block, 0, bytes);
  return block;
}

}  // namespace

void* BlockPool::take(int gpu, size_t bytes, Fill fill) {
  auto it = free_.find(Key(gpu, bytes));
  if (it != free_.end() && !it->second.empty()) {
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    if (gpu >= 0) {
      device_zero(block, bytes);
    } else if (fill != Fill::none) {
      std::memset(block, 0, bytes);
    }
    return block;
  }
  void* block = nullptr;
  if (gpu < 0) {
    block = host_alloc(bytes, fill);
  } else {
    block = device_alloc_zeroed(bytes);
  }
  ++system_allocations_;
  reserved_bytes_ += bytes;
  return block;
}

void BlockPool::give_back(void* block, int gpu, size_t bytes) noexcept {
  try {
    free_[Key(gpu, bytes)].push_back(block);
    cached_bytes_ += bytes;
  } catch (...) {  // no memory for the list itself: the block goes back to the system instead
    system_free(block, gpu, bytes);
    reserved_bytes_ -= bytes;
  }
}

void BlockPool::count_take(size_t bytes) {
  auto it = counted_free_.find(bytes);
  if (it != counted_free_.end() && it->second > 0) {
    --it->second;
    return;
  }
  counted_reserved_ += bytes;
  counted_peak_ = std::max(counted_peak_, counted_reserved_);
}

void BlockPool::count_give_back(size_t bytes) noexcept {
  try {
    ++counted_free_[bytes];
  } catch (...) {  // no memory for the count: the block stays reserved and unused, an overcount
  }
}

void BlockPool::release_cached() noexcept {
  for (auto& [key, blocks] : free_) {
    for (void* block : blocks) system_free(block, key.first, key.second);
    reserved_bytes_ -= key.second * blocks.size();
  }
  free_.clear();
  cached_bytes_ = 0;
}

void BlockPool::system_free(void* block, int gpu, size_t bytes) noexcept {
  if (gpu < 0 && bytes >= kPageBlockBytes) {
    ::munmap(block, bytes);
  } else if (gpu < 0) {
    std::free(block);
  } else {
    device_free(block);
  }
}

}  // namespace optimus::core
