// The block cache behind Buffers: host blocks from aligned_alloc, GPU blocks from
// core/cuda/device.cu (no_cuda.cpp in a build without the CUDA backend); a host block zero-filled
// when asked, a GPU block on every take (block_pool.h says why).
#include "core/block_pool.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/cuda/device_memory.h"

namespace optimus::core {

void* BlockPool::take(int gpu, size_t bytes, Fill fill) {
  auto it = free_.find(Key(gpu, bytes));
  if (it != free_.end() && !it->second.empty()) {
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    if (gpu >= 0) {
      device_zero(block, bytes);
    } else if (fill == Fill::zero) {
      std::memset(block, 0, bytes);
    }
    return block;
  }
  void* block = nullptr;
  if (gpu < 0) {
    // 64-byte alignment for vector loads; aligned_alloc needs a multiple of the alignment.
    block = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (block == nullptr) throw std::bad_alloc();
    if (fill == Fill::zero) std::memset(block, 0, bytes);
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
    system_free(block, gpu);
    reserved_bytes_ -= bytes;
  }
}

void BlockPool::release_cached() noexcept {
  for (auto& [key, blocks] : free_) {
    for (void* block : blocks) system_free(block, key.first);
    reserved_bytes_ -= key.second * blocks.size();
  }
  free_.clear();
  cached_bytes_ = 0;
}

void BlockPool::system_free(void* block, int gpu) noexcept {
  if (gpu < 0) {
    std::free(block);
  } else {
    device_free(block);
  }
}

}  // namespace optimus::core
