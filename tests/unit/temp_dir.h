// A fresh folder for a test's files, removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace optimus::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/optimus_test_XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside the folder.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace optimus::test
