// Atomic writes (temporary name, fsync, rename) and checked whole-file reads.
#include "model/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.h"

namespace optimus::model {

using core::ConfigError;
namespace fs = std::filesystem;

namespace {

std::string reason() {
  return std::strerror(errno);
}

// After the rename, fsync the directory so the new name itself survives a power cut. Best effort:
// the file's content is already safe, and some file systems refuse to fsync a directory.
void sync_directory_of(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_bytes(std::FILE* f, const void* data, size_t n, const std::string& path) {
  if (n > 0 && std::fwrite(data, 1, n, f) != n) {
    throw ConfigError("cannot write " + path + ": " + reason() + "; free some disk space or choose another directory");
  }
}

void write_atomically(const std::string& path, const std::function<void(std::FILE*)>& write_content) {
  // The pid keeps two processes (e.g. two runs saving into one directory) off each other's temp file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    throw ConfigError("cannot create " + tmp + " to save " + path + ": " + reason() +
                      "; check that the directory exists and is writable, or choose another directory");
  }
  try {
    write_content(f);
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
      throw ConfigError("cannot write " + path + ": " + reason() +
                        "; free some disk space or choose another directory");
    }
    const int closed = std::fclose(f);
    f = nullptr;
    if (closed != 0) {
      throw ConfigError("cannot write " + path + ": " + reason() +
                        "; free some disk space or choose another directory");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw ConfigError("cannot rename " + tmp + " to " + path + ": " + reason() + "; check that " + path +
                        " is not a directory and its directory is writable");
    }
  } catch (...) {
    if (f != nullptr) std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  sync_directory_of(path);
}

uintmax_t regular_file_size(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // an error code, not an exception (a symlink loop)
  if (status.type() == fs::file_type::not_found) {
    throw ConfigError(what + " " + path + " does not exist; check the path (a checkpoint is a directory holding " +
                      "config.json and model.safetensors)");
  }
  if (ec) throw ConfigError("cannot read " + what + " " + path + ": " + ec.message() + "; check the path");
  if (status.type() != fs::file_type::regular) {
    throw ConfigError(what + " " + path + " is not a regular file; check the path");
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw ConfigError("cannot read " + what + " " + path + ": " + ec.message() + "; check the path");
  return size;
}

std::string read_whole_file(const std::string& path, const std::string& what, size_t max_bytes) {
  if (regular_file_size(path, what) > max_bytes) {
    throw ConfigError(what + " " + path + " is larger than the " + std::to_string(max_bytes >> 10) +
                      " KiB such a file can be; check the path");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw ConfigError("cannot read " + what + " " + path + ": " + reason() + "; check its permissions");
  std::string text;
  char chunk[65536];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0 && text.size() <= max_bytes) text.append(chunk, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw ConfigError("cannot read " + what + " " + path + ": " + reason() + "; check the file system");
  if (text.size() > max_bytes) throw ConfigError(what + " " + path + " grew while it was read; check the file");
  return text;
}

}  // namespace optimus::model
