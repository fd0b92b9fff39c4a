// Whole-file reading and atomic writing for checkpoints. A checkpoint file is
// written under a temporary name, flushed to disk, then renamed over its real name, so a crash or a
// full disk never leaves a half-written file where a reader will look for a whole one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "core/errors.h"

namespace optimus::io {

/// Writes a file atomically: `write_content` writes the whole content to the open stream (throwing
/// on any problem), then the file is flushed, fsync'ed and renamed to `path`. On any error the
/// temporary file `<path>.tmp.<pid>` is removed, `path` is left as it was, and the error is rethrown
/// (a failure of the file system itself is a core::ConfigError naming the path and the reason; a
/// full disk is said in words).
void write_atomically(const std::string& path, const std::function<void(std::FILE*)>& write_content);

/// The error for a write of `path` that the system refused, from errno: a full disk (or quota) in
/// words, any other reason as the system gives it.
core::ConfigError write_failure(const std::string& path);

/// Writes `n` bytes to `f`; throws core::ConfigError naming `path` when the system refuses them.
void write_bytes(std::FILE* f, const void* data, size_t n, const std::string& path);

/// The size of a regular file; core::ConfigError naming the file (`what` + path) if it is missing,
/// not a regular file, or unreadable. When `what` starts with "checkpoint", the message for a
/// missing file also says what a checkpoint is.
uintmax_t regular_file_size(const std::string& path, const std::string& what);

/// The whole content of a regular file of at most `max_bytes` bytes; core::ConfigError naming the
/// file and the reason otherwise. `what` says what the file is in the message, e.g. "checkpoint config".
std::string read_whole_file(const std::string& path, const std::string& what, size_t max_bytes);

/// The largest JSON file (config.json, --config) this project reads: far above any real one.
inline constexpr size_t kMaxJsonFileBytes = size_t{1} << 20;

}  // namespace optimus::io
