// Whole-file reading and atomic writing for checkpoints. A checkpoint file is
// written under a temporary name, flushed to disk, then renamed over its real name, so a crash or a
// full disk never leaves a half-written file where a reader will look for a whole one.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace optimus::model {

/// Writes a file atomically: `write_content` writes the whole content to the open stream (throwing
/// on any problem), then the file is flushed, fsync'ed and renamed to `path`. On any error the
/// temporary file `<path>.tmp.<pid>` is removed, `path` is left as it was, and the error is rethrown
/// (a failure of the file system itself is a core::ConfigError naming the path and the reason).
void write_atomically(const std::string& path, const std::function<void(std::FILE*)>& write_content);

/// Writes `n` bytes to `f`; throws core::ConfigError naming `path` when the system refuses them.
void write_bytes(std::FILE* f, const void* data, size_t n, const std::string& path);

/// The whole content of a regular file; core::ConfigError naming the file and the reason otherwise.
/// `what` says what the file is in the message, e.g. "checkpoint config".
std::string read_whole_file(const std::string& path, const std::string& what);

}  // namespace optimus::model
