// Shapes and ledger-recorded buffers. Host and device memory come from the ledger's BlockPool
// (core/block_pool.h), which asks the system only for a size it has no free block of; a meta
// Buffer's address from core/meta/meta_memory.cpp.
#include "core/tensor.h"

#include <iterator>
#include <sstream>
#include <stdexcept>

#include "core/cuda/device_memory.h"
#include "core/meta/meta_memory.h"

namespace optimus::core {

const char* device_name(Device d) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"cpu", "cuda", "meta"};
  static_assert(std::size(kNames) == static_cast<size_t>(Device::meta) + 1);
  return kNames[static_cast<size_t>(d)];
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string Shape::str() const {
  // A shape read from a file may have any number of dims; a message naming it stays one short line.
  constexpr size_t kWhole = 8, kShown = 3;
  const size_t shown = dims.size() > kWhole ? kShown : dims.size();
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shown; ++i) s << (i ? ", " : "") << dims[i];
  if (shown < dims.size()) s << ", … (" << dims.size() << " dims)";
  s << ']';
  return s.str();
}

Buffer::Buffer(MemoryLedger& ledger, MemoryCategory category, Shape shape, Device device, Fill fill)
    : shape_(std::move(shape)), device_(device), ledger_(&ledger), category_(category) {
  for (int64_t d : shape_.dims) {
    if (d < 0) throw std::invalid_argument("Buffer: negative dimension in shape " + shape_.str());
  }
  const size_t n = bytes();
  ledger_->allocate(category_, n);  // throws past the budget, before anything is allocated
  if (n == 0) return;
  try {
    if (device_ == Device::meta) {
      data_ = static_cast<float*>(meta_address(n));
      ledger_->pool().count_take(n);  // what a CPU run's pool would reserve for it
    } else {
      // A block of exactly n bytes, kept by the ledger's pool when the last Buffer of its size went.
      gpu_ = device_ == Device::cuda ? device_current() : -1;
      data_ = static_cast<float*>(ledger_->pool().take(gpu_, n, fill));
    }
  } catch (...) {
    ledger_->release(category_, n);
    throw;
  }
}

Buffer::~Buffer() {
  release();
}

Buffer::Buffer(Buffer&& o) noexcept
    : data_(o.data_),
      shape_(std::move(o.shape_)),
      device_(o.device_),
      gpu_(o.gpu_),
      ledger_(o.ledger_),
      category_(o.category_) {
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
    gpu_ = o.gpu_;
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
    if (device_ != Device::meta) {
      ledger_->pool().give_back(data_, gpu_, bytes());
    } else {
      ledger_->pool().count_give_back(bytes());
    }
  }
  ledger_->release(category_, bytes());
  data_ = nullptr;
  ledger_ = nullptr;
}

}  // namespace optimus::core
