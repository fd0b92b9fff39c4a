// Shapes and owning buffers: how the kernel core holds numbers.
// A Buffer owns an allocation that is recorded in a MemoryLedger under a category, and releases it
// (and its ledger entry) when destroyed. Its memory is a block of the ledger's pool, which keeps
// released blocks by size for the next Buffer of that size (core/block_pool.h). Everything the
// stages hold lives in Buffers (token ids in IntBuffers); ops take the raw pointers of Buffers. A
// new Buffer's numbers are zero only when it asks (Fill::zero): most are written before they are
// read, and the pool fills no block they do not need filled. A Buffer on Device::cuda lives in the
// current GPU's memory (cuda_context makes a GPU current). A Buffer on Device::meta is recorded like a CPU one but
// holds no numbers: its data() is an address range no process may touch (core/meta/meta_memory.h), so offsets into it
// work and any read or write faults at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/memory_ledger.h"

namespace optimus::core {

enum class Device { cpu, cuda, meta };

const char* device_name(Device d);

/// A row-major shape of up to 4 dimensions, e.g. {B*T, C}.
struct Shape {
  std::vector<int64_t> dims;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit Shape(std::vector<int64_t> d) : dims(std::move(d)) {}

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t operator[](int i) const { return dims.at(static_cast<size_t>(i)); }
  int64_t numel() const;
  std::string str() const;  // "[64, 256]"; past 8 dims cut: "[1, 1, 1, … (1000000 dims)]"
  bool operator==(const Shape& o) const { return dims == o.dims; }
};

/// An owning allocation of float32 numbers, recorded in a ledger under a category.
/// Move-only. Its numbers are zero with Fill::zero (or zero_lazy); with Fill::none whatever its block
/// held (a GPU block is zero all the same: core/block_pool.h), so its first use must write them.
/// Allocation past the ledger's budget throws.
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryLedger& ledger, MemoryCategory category, Shape shape, Device device = Device::cpu,
         Fill fill = Fill::none);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * sizeof(float); }

 private:
  void release();

  float* data_ = nullptr;
  Shape shape_;
  Device device_ = Device::cpu;
  int gpu_ = -1;  // the GPU whose memory holds data_ (Device::cuda), else -1: the block's place in the pool
  MemoryLedger* ledger_ = nullptr;
  MemoryCategory category_ = MemoryCategory::workspace;
};

/// A part of a Buffer seen as a tensor of its own: where it starts and its shape (its device is the
/// Buffer's). It owns nothing; the Buffer it is in must outlive it. (The gradients of a stage's
/// parameters are views of one flat Buffer: model/param_set.h.)
class BufferView {
 public:
  BufferView() = default;
  BufferView(float* data, Shape shape) : data_(data), shape_(std::move(shape)) {}

  float* data() const { return data_; }
  int64_t numel() const { return shape_.numel(); }
  const Shape& shape() const { return shape_; }

 private:
  float* data_ = nullptr;
  Shape shape_;
};

/// An owning allocation of int32 numbers (token ids, targets), on the CPU or a GPU: a Buffer's
/// allocation (4 bytes per element, recorded and released the same way) seen as int.
class IntBuffer {
 public:
  IntBuffer() = default;
  IntBuffer(MemoryLedger& ledger, MemoryCategory category, Shape shape, Device device = Device::cpu,
            Fill fill = Fill::none)
      : storage_(ledger, category, std::move(shape), device, fill) {}

  int* data() const { return reinterpret_cast<int*>(storage_.data()); }
  const Shape& shape() const { return storage_.shape(); }
  Device device() const { return storage_.device(); }
  int64_t numel() const { return storage_.numel(); }
  size_t bytes() const { return storage_.bytes(); }

 private:
  static_assert(sizeof(int) == sizeof(float), "an IntBuffer reuses a Buffer's 4-byte elements");
  Buffer storage_;
};

}  // namespace optimus::core
