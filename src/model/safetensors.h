// A small reader and writer of the safetensors format (https://github.com/huggingface/safetensors),
// the file format of our checkpoints: an 8-byte little-endian header length N, N bytes
// of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// tensors' bytes back to back. Only F32 and I32 tensors, which is all the model and its training
// state use. Reading checks every promise the header makes against the file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "io/mapped_file.h"

namespace optimus::model {

enum class DType { f32, i32 };

/// "F32" or "I32", as the format spells them.
const char* dtype_name(DType dtype);

/// One named tensor with its raw little-endian bytes (numel × 4, row-major).
struct SafeTensor {
  std::string name;
  DType dtype = DType::f32;
  core::Shape shape;
  std::vector<unsigned char> bytes;

  static SafeTensor from_floats(std::string name, core::Shape shape, const float* data);
  static SafeTensor from_ints(std::string name, core::Shape shape, const int32_t* data);
  /// The elements; std::logic_error if the dtype is not the one asked for (check it first).
  std::vector<float> floats() const;
  std::vector<int32_t> ints() const;
};

/// Free-form string pairs stored in the header under "__metadata__".
using Metadata = std::map<std::string, std::string>;

/// What a file holds: its tensors in the order of their data, and its metadata.
struct SafeTensorFile {
  std::string path;  // for messages
  std::vector<SafeTensor> tensors;
  Metadata metadata;

  /// The tensor called `name`, or nullptr.
  const SafeTensor* find(const std::string& name) const;
  /// The tensor called `name`, checked to have `dtype` and `shape`; otherwise a core::ConfigError
  /// naming the tensor, the file, what was expected and what was found.
  const SafeTensor& require(const std::string& name, DType dtype, const core::Shape& shape) const;
};

/// Writes the tensors, back to back in the given order, atomically (io/file_io.h). The header is
/// padded with spaces to a multiple of 8 bytes so the data starts aligned, as the reference writer
/// does. Duplicate or empty names and byte counts that do not match the shape are std::invalid_argument.
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors, const Metadata& metadata = {});

/// A tensor to write before its bytes exist: its name, dtype and shape.
struct TensorHeader {
  std::string name;
  DType dtype = DType::f32;
  core::Shape shape;
};

/// The same file, one tensor at a time: the header from `tensors`, then for k = 0, 1, … in order the
/// shape's numel × 4 bytes at bytes_of(k), which may make tensor k just then (gather it from the
/// ranks); the pointer must stay valid until the next call. So a model is written without a whole
/// copy of it beside the model. A throw from bytes_of ends the write as a failed one.
void write_safetensors(const std::string& path, const std::vector<TensorHeader>& tensors,
                       const std::function<const void*(size_t k)>& bytes_of, const Metadata& metadata = {});

/// One tensor of a mapped file: its bytes where they lie in the mapping (numel × 4, little-endian,
/// row-major), read from the page cache when first touched.
struct MappedTensor {
  std::string name;
  DType dtype = DType::f32;
  core::Shape shape;
  const unsigned char* data = nullptr;
  uint64_t bytes = 0;
};

/// A safetensors file mapped into memory read-only, its header checked as read_safetensors checks
/// it before any data is touched. A reader takes each tensor straight from the mapping into the
/// shard that needs it and then releases its pages, so a checkpoint is never held whole in a
/// process's memory; the processes of a node share the file's pages. Move-only; unmapped when
/// destroyed (the tensors' data pointers with it).
class MappedSafeTensors {
 public:
  /// Maps and checks the file: a core::ConfigError as read_safetensors gives for anything wrong.
  explicit MappedSafeTensors(const std::string& path);

  const std::string& path() const { return path_; }
  /// Its tensors in the order of their data.
  const std::vector<MappedTensor>& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }
  /// The tensor called `name`, or nullptr.
  const MappedTensor* find(const std::string& name) const;
  /// The tensor called `name`, checked as SafeTensorFile::require checks it (the same sentences).
  const MappedTensor& require(const std::string& name, DType dtype, const core::Shape& shape) const;
  /// Lets the pages of `t` leave this process's resident memory (io::MappedFile::release), once its
  /// values have been taken where they belong.
  void release(const MappedTensor& t) const;

 private:
  std::string path_;
  io::MappedFile file_;
  std::vector<MappedTensor> tensors_;
  std::unordered_map<std::string, size_t> position_;  // each tensor's place in tensors_, by name
  Metadata metadata_;
};

/// The floats of an F32 tensor (std::logic_error for another dtype): where they lie in the mapping
/// when that is float-aligned (in every file whose header is padded to 8 bytes, as the reference
/// writer and ours pad it), else copied into `copy`.
const float* floats_of(const MappedTensor& t, std::vector<float>& copy);

/// Reads and validates a whole file. Anything wrong with it (missing, too short, a header that is
/// not JSON or not the expected structure, an unknown dtype, a shape that does not match its bytes,
/// data ranges out of order, overlapping, with gaps or past the end, a truncated file or trailing
/// bytes) is a core::ConfigError: one sentence naming the file, what is wrong, and what to do.
/// A copy of the whole file: large files are better read through MappedSafeTensors.
SafeTensorFile read_safetensors(const std::string& path);

}  // namespace optimus::model
