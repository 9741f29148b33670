// File helpers: atomic writes, whole-file reads.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace polygraphy {

/// Writes a file so that readers never see a torn one: `write` streams into a temporary file in
/// the same folder (created with the parent folders when missing), which is flushed, fsync'ed and
/// renamed over `path`. On any failure (including an exception from `write`) the temporary file is
/// removed, the previous file is left intact and PolygraphyException is thrown naming the path.
void write_file_atomically(const std::string& path, const std::function<void(std::FILE* out)>& write);
void write_file_atomically(const std::string& path, std::string_view contents);

/// Reads a whole file; PolygraphyException naming the path when it cannot be opened or read.
std::string read_file(const std::string& path);

}  // namespace polygraphy
