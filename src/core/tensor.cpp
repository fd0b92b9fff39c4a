// Shapes and ledger-recorded buffers. Device memory comes from core/cuda/device.cu (or, in a build
// without the CUDA backend, from no_cuda.cpp, which says so); a meta Buffer's address range from
// core/meta/meta_memory.cpp.
#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <stdexcept>

#include "core/cuda/device_memory.h"
#include "core/meta/meta_memory.h"

namespace optimus::core {

const char* device_name(Device d) {
  switch (d) {
    case Device::cpu:
      return "cpu";
    case Device::cuda:
      return "cuda";
    case Device::meta:
      return "meta";
  }
  return "?";
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string Shape::str() const {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << ']';
  return s.str();
}

Buffer::Buffer(MemoryLedger& ledger, MemoryCategory category, Shape shape, Device device)
    : shape_(std::move(shape)), device_(device), ledger_(&ledger), category_(category) {
  for (int64_t d : shape_.dims) {
    if (d < 0) throw std::invalid_argument("Buffer: negative dimension in shape " + shape_.str());
  }
  const size_t n = bytes();
  ledger_->allocate(category_, n);  // throws past the budget, before anything is allocated
  if (n == 0) return;
  if (device_ == Device::cpu) {
    // 64-byte alignment for vector loads; aligned_alloc needs a multiple of the alignment.
    data_ = static_cast<float*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
    if (data_ == nullptr) {
      ledger_->release(category_, n);
      throw std::bad_alloc();
    }
    std::memset(data_, 0, n);
  } else if (device_ == Device::meta) {
    try {
      data_ = static_cast<float*>(meta_reserve(n));
    } catch (...) {
      ledger_->release(category_, n);
      throw;
    }
  } else {
    try {
      data_ = static_cast<float*>(device_alloc_zeroed(n));
    } catch (...) {
      ledger_->release(category_, n);
      throw;
    }
  }
}

Buffer::~Buffer() {
  release();
}

Buffer::Buffer(Buffer&& o) noexcept
    : data_(o.data_), shape_(std::move(o.shape_)), device_(o.device_), ledger_(o.ledger_), category_(o.category_) {
  o.data_ = nullptr;
  o.ledger_ = nullptr;
  o.shape_ = Shape{};
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    shape_ = std::move(o.shape_);
    device_ = o.device_;
    ledger_ = o.ledger_;
    category_ = o.category_;
    o.data_ = nullptr;
    o.ledger_ = nullptr;
    o.shape_ = Shape{};
  }
  return *this;
}

void Buffer::release() {
  if (ledger_ == nullptr) return;
  if (data_ != nullptr) {
    if (device_ == Device::cpu) {
      std::free(data_);
    } else if (device_ == Device::meta) {
      meta_unreserve(data_, bytes());
    } else {
      device_free(data_);
    }
  }
  ledger_->release(category_, bytes());
  data_ = nullptr;
  ledger_ = nullptr;
}

}  // namespace optimus::core
