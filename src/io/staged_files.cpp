// Files written under temporary names and renamed into place together.
#include "io/staged_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.h"
#include "io/file_io.h"

namespace optimus::io {

namespace fs = std::filesystem;

namespace {

// After the renames, fsync the folder so the new names themselves survive a power cut. Best effort:
// the files' content is already safe, and some file systems refuse to fsync a folder.
void sync_folder(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

StagedFiles::~StagedFiles() {
  for (const auto& [tmp, path] : staged_) std::remove(tmp.c_str());
}

std::string StagedFiles::path_of(const std::string& name) const {
  return (fs::path(dir_) / name).string();
}

void StagedFiles::write(const std::string& name, const std::function<void(std::FILE*)>& write_content) {
  const std::string path = path_of(name);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    throw core::ConfigError("cannot create " + tmp + " to write " + path + ": " + std::strerror(errno) +
                            "; check that the folder is writable, or choose another folder");
  }
  staged_.emplace_back(tmp, path);  // removed by the destructor unless committed
  try {
    write_content(f);
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) throw write_failure(path);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) throw write_failure(path);
}

void StagedFiles::commit() {
  for (const auto& [tmp, path] : staged_) {  // the one failure a rename can foresee, before any rename
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      throw core::ConfigError("cannot rename " + tmp + " to " + path + ": " + path +
                              " is a folder; remove it or choose another folder");
    }
  }
  for (const auto& [tmp, path] : staged_) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw core::ConfigError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno) + "; check that " +
                              path + " is not a folder and its folder is writable");
    }
  }
  staged_.clear();
  sync_folder(dir_);
  for (const std::string& name : removed_) {
    std::error_code ignored;
    fs::remove(fs::path(dir_) / name, ignored);
  }
}

}  // namespace optimus::io
