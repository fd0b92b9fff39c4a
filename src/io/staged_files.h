// Files that must change together (a tokenized corpus: its token files and its tokenizer): each is
// written in full under a temporary name first, and only when all are written are they renamed
// into place, so a failure part-way (a full disk) leaves the folder's earlier files as they were.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace optimus::io {

class StagedFiles {
 public:
  explicit StagedFiles(std::string dir) : dir_(std::move(dir)) {}
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  /// Removes the temporary files of a set that was never committed.
  ~StagedFiles();

  /// Writes dir/name under a temporary name (`write_content` writes the whole content to the open
  /// stream), flushed to disk; a failure is a core::ConfigError naming the file (a full disk in words).
  void write(const std::string& name, const std::function<void(std::FILE*)>& write_content);
  /// dir/name is removed at commit (a file of the earlier set that the new one lacks).
  void remove_at_commit(const std::string& name) { removed_.push_back(name); }
  /// dir/name.
  std::string path_of(const std::string& name) const;
  /// Renames every written file into place and removes those marked; a failure is a core::ConfigError.
  void commit();

 private:
  std::string dir_;
  std::vector<std::pair<std::string, std::string>> staged_;  // (temporary path, final path)
  std::vector<std::string> removed_;
};

}  // namespace optimus::io
