// Address ranges without storage for meta Buffers (see meta_memory.h).
#include "core/meta/meta_memory.h"

#include <sys/mman.h>

#include <new>

namespace optimus::core {

void* meta_reserve(size_t bytes) {
  // PROT_NONE private memory is not counted against the commit limit; MAP_NORESERVE says so twice.
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void meta_unreserve(void* p, size_t bytes) noexcept {
  munmap(p, bytes);
}

}  // namespace optimus::core
