// A small reader and writer of the safetensors format (https://github.com/huggingface/safetensors),
// the file format of our checkpoints: an 8-byte little-endian header length N, N bytes
// of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// tensors' bytes back to back. Only F32 and I32 tensors, which is all the model and its training
// state use. Reading checks every promise the header makes against the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

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

/// Reads and validates a whole file. Anything wrong with it (missing, too short, a header that is
/// not JSON or not the expected structure, an unknown dtype, a shape that does not match its bytes,
/// data ranges out of order, overlapping, with gaps or past the end, a truncated file or trailing
/// bytes) is a core::ConfigError: one sentence naming the file, what is wrong, and what to do.
SafeTensorFile read_safetensors(const std::string& path);

}  // namespace optimus::model
