// Read-only memory mapping of a whole file.
#include "io/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/errors.h"

namespace optimus::io {

MappedFile::MappedFile(const std::string& path, size_t size, const std::string& what) {
  if (size == 0) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw core::ConfigError("cannot read " + what + " " + path + ": " + std::strerror(errno) +
                            "; check its permissions");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) {
    throw core::ConfigError("cannot map " + what + " " + path + " into memory: " + std::strerror(map_errno) +
                            "; check the file");
  }
  data_ = static_cast<unsigned char*>(p);
  size_ = size;
}

MappedFile::~MappedFile() {
  unmap();
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::release(size_t offset, size_t n) const {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = (offset + page - 1) / page * page, end = std::min(offset + n, size_) / page * page;
  if (data_ != nullptr && begin < end) ::madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

void MappedFile::unmap() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace optimus::io
