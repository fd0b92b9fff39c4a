// Atomic writes (temporary name, fsync, rename: io/staged_files.h) and checked whole-file reads.
#include "io/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.h"
#include "io/staged_files.h"

namespace optimus::io {

using core::ConfigError;
namespace fs = std::filesystem;

namespace {

std::string reason() {
  return std::strerror(errno);
}

}  // namespace

ConfigError write_failure(const std::string& path) {
  if (errno == ENOSPC || errno == EDQUOT) {
    return ConfigError("cannot write " + path + ": the disk is full (no space left on device); free some space or " +
                       "choose another folder");
  }
  return ConfigError("cannot write " + path + ": " + reason() + "; free some disk space or choose another directory");
}

void write_bytes(std::FILE* f, const void* data, size_t n, const std::string& path) {
  if (n > 0 && std::fwrite(data, 1, n, f) != n) throw write_failure(path);
}

void write_atomically(const std::string& path, const std::function<void(std::FILE*)>& write_content) {
  StagedFiles file(fs::path(path).parent_path().string());
  file.write(fs::path(path).filename().string(), write_content);
  file.commit();
}

uintmax_t regular_file_size(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // an error code, not an exception (a symlink loop)
  if (status.type() == fs::file_type::not_found) {
    const bool checkpoint = what.rfind("checkpoint", 0) == 0;
    throw ConfigError(what + " " + path + " does not exist; check the path" +
                      (checkpoint ? " (a checkpoint is a directory holding config.json and model.safetensors)" : ""));
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

}  // namespace optimus::io
