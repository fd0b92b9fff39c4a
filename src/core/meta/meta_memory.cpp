// Address ranges without storage for meta Buffers (see meta_memory.h).
#include "core/meta/meta_memory.h"

#include <atomic>
#include <cstdint>
#include <new>

namespace optimus::core {

namespace {

// Bits 55 to 63 set: above every user address on x86-64 (4- and 5-level paging) and, bit 55
// choosing the kernel's table, on aarch64 (whose top byte is ignored); the ranges are offsets below 2^55.
constexpr uintptr_t kBase = 0xff80'0000'0000'0000;
constexpr uintptr_t kWindow = uintptr_t{1} << 55;
std::atomic<uintptr_t> next{0};  // the offset of the next range

}  // namespace

void* meta_address(size_t bytes) {
  if (bytes > kWindow / 2) throw std::bad_alloc();
  const uintptr_t size = (static_cast<uintptr_t>(bytes) + 63) / 64 * 64;  // 64-byte aligned, as host blocks
  uintptr_t seen = next.load(), start = 0;
  do {
    start = seen + size > kWindow ? 0 : seen;
  } while (!next.compare_exchange_weak(seen, start + size));
  return reinterpret_cast<void*>(kBase + start);
}

}  // namespace optimus::core
