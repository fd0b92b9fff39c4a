// Read-only memory mapping of a whole file, for checkpoints: a tensor's bytes are read from the page
// cache when first touched, straight into the shard that needs them, and every process of a node
// that maps the file shares its pages. Nothing is copied whole.
#pragma once

#include <cstddef>
#include <string>

namespace optimus::io {

/// A regular file mapped read-only (MAP_PRIVATE). Move-only; unmapped when destroyed. A disk error
/// under a mapping arrives as SIGBUS, not as an exception, so a reader checks the file's size and
/// structure before it touches its data.
class MappedFile {
 public:
  MappedFile() = default;
  /// Maps the first `size` bytes of `path`; core::ConfigError naming the file (`what` + path) and the
  /// system's reason when it cannot. size 0 maps nothing.
  MappedFile(const std::string& path, size_t size, const std::string& what);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  /// Lets the pages wholly inside [offset, offset + n) leave this process's resident memory
  /// (MADV_DONTNEED; they stay in the page cache and are read again if touched): for a part that was
  /// used and is done with, so the mapping never holds the whole file in a process's memory.
  void release(size_t offset, size_t n) const;

 private:
  void unmap() noexcept;

  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace optimus::io
