// The cache of memory blocks behind Buffers, one per MemoryLedger: a released Buffer gives its
// block back here, and the next Buffer of exactly that many bytes on the same memory takes it
// again instead of asking the system (zero-filled when that Buffer asks for it). A training step allocates the same
// sizes every step, so after the first step it asks the system for nothing. The ledger's logical record (what Buffers
// hold) is unchanged by the cache; the cache adds what the system has lent: reserved bytes, the blocks in use plus the
// free ones it keeps (cached bytes), like PyTorch's caching allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace optimus::core {

/// What a block's numbers are when it is taken: whatever it held (its user writes before it reads),
/// or zero. zero_lazy is zero too, but a new host block of 1 MiB or more is not written to make it
/// so: its pages are the system's zero pages until first written, and take no memory until then.
/// For a buffer that may never be used (the gradients of a model that only evaluates) and whose
/// first use writes it: a page read first maps the shared zero page, and the write after copies it
/// (a page fault with a TLB flush on every CPU, per 4 KiB page).
enum class Fill { none, zero, zero_lazy };

/// Blocks of host memory (gpu = -1) or of GPU `gpu`'s memory, kept free by exact size.
/// Not thread-safe (neither is the ledger): Buffers are made and released by the stage's thread.
/// A host block is zero-filled only when asked. A GPU block is given back without waiting for the
/// GPU, so every take of one zero-fills it, asked or not: that fill is a cudaMemset on the legacy
/// default stream, which waits for all work queued before it on the device's blocking streams (a
/// context's stream is one), so the block's next user cannot overtake its last. Work on a
/// non-blocking stream (NCCL's communication stream) must have been waited for
/// (comm::Request::wait) before its Buffer goes.
class BlockPool {
 public:
  BlockPool() = default;
  /// Not copyable: a block has one owner.
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  /// Frees the free blocks; blocks still in use are the Buffers' (they must not outlive the pool).
  ~BlockPool() { release_cached(); }

  /// A block of `bytes` (> 0) bytes, 64-byte aligned on the host: a free one of that size and place
  /// if the pool has one, else a new one from the system (aligned_alloc, or the pages of an
  /// anonymous mmap from 1 MiB; cudaMalloc on the current GPU); zero-filled if `fill` asks (a GPU
  /// block always, see above). Throws std::bad_alloc or
  /// std::runtime_error when the system has none.
  void* take(int gpu, size_t bytes, Fill fill);
  /// Keeps a block from take() (same gpu and bytes) for the next take of its size.
  void give_back(void* block, int gpu, size_t bytes) noexcept;
  /// Returns the free blocks to the system; those in use stay where they are.
  void release_cached() noexcept;

  /// A meta Buffer's block: the rule of take() and give_back() applied to sizes alone (a free block
  /// of exactly `bytes` if one was given back, else a new one), with no memory behind it, so that a
  /// meta run knows what the pool of a CPU run of the same Buffers would hold: the in-use bytes plus
  /// the free blocks no later Buffer fits exactly. Counted apart from the real blocks.
  void count_take(size_t bytes);
  void count_give_back(size_t bytes) noexcept;
  /// The most bytes count_take's blocks held at once, in use and free: a CPU run's peak reserved bytes.
  size_t peak_counted_bytes() const { return counted_peak_; }

  /// How many blocks were asked of the system since the pool was made.
  int64_t system_allocations() const { return system_allocations_; }
  /// Bytes of the free blocks the pool keeps.
  size_t cached_bytes() const { return cached_bytes_; }
  /// Bytes the system has lent the pool: blocks in use plus the free ones.
  size_t reserved_bytes() const { return reserved_bytes_; }

 private:
  using Key = std::pair<int, size_t>;  // (gpu, bytes)
  static void system_free(void* block, int gpu, size_t bytes) noexcept;

  std::map<Key, std::vector<void*>> free_;
  std::map<size_t, int64_t> counted_free_;  // meta: free blocks by size
  size_t counted_reserved_ = 0, counted_peak_ = 0;
  int64_t system_allocations_ = 0;
  size_t cached_bytes_ = 0;
  size_t reserved_bytes_ = 0;
};

}  // namespace optimus::core
