// File helpers: atomic writes, whole-file reads, and the byte counts (sizes, limits) read from the
// environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace polygraphy {

/// Writes a file so that readers never see a torn one: `write` streams into a temporary file in
/// the same folder (created with the parent folders when missing), which is flushed, fsync'ed and
/// renamed over `path`. On any failure (including an exception from `write`) the temporary file is
/// removed, the previous file is left intact and PolygraphyException is thrown naming the path.
void write_file_atomically(const std::string& path, const std::function<void(std::FILE* out)>& write);
void write_file_atomically(const std::string& path, std::string_view contents);

/// The temporary file behind write_file_atomically(), for writers that outlive one call (streaming
/// sinks fed over a whole run): opened in `path`'s folder (created when missing), committed by
/// commit() (flush, fsync, the mode a plain open() would give, rename over `path`), and removed by
/// the destructor when commit() was not called or failed, so nothing half-written is left behind.
/// Throws PolygraphyException naming `path`.
class AtomicFile {
public:
    /// Creates the temporary file.
    explicit AtomicFile(const std::string& path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// The stream to write to (buffered, 1 MiB); null after commit().
    std::FILE* out() const { return out_; }
    /// The final path.
    const std::string& path() const { return path_; }
    /// Writes `nbytes` at the end; PolygraphyException on a short write.
    void write(const void* data, std::size_t nbytes);
    /// Overwrites bytes already written at `offset` (flushes the stream first), e.g. a size field.
    void patch(std::size_t offset, const void* data, std::size_t nbytes);
    /// Bytes written so far.
    std::size_t size() const { return size_; }
    /// Makes the file appear at its path (see the class comment).
    void commit();

private:
    [[noreturn]] void fail(int error);
    std::string path_;
    std::string temp_;
    std::FILE* out_ = nullptr;
    std::size_t size_ = 0;
};

/// The number of bytes in the environment variable `variable`: nullopt when it is unset or empty,
/// else a decimal number from 1 to `max` (digits only: no sign, space or suffix), read on each call.
/// PolygraphyException "<variable> must be a number of bytes from 1 to <max>, not '<value>'" otherwise.
std::optional<uint64_t> byte_count_from_environment(const char* variable, uint64_t max);

/// Reads a whole file; PolygraphyException naming the path when it cannot be opened or read.
std::string read_file(const std::string& path);

/// A whole file mapped read-only (or read into memory when it cannot be mapped, e.g. a pipe).
/// For large inputs: pages are read on demand, and release_before() drops the pages already
/// consumed from this process's resident memory, so that parsing a file costs little more
/// memory than what is decoded from it. Throws PolygraphyException naming the path on failure.
class MappedFile {
public:
    /// Maps the whole file read-only.
    explicit MappedFile(const std::string& path);
    /// With `copy_on_write`, the pages may be written too, each written page becoming this
    /// process's private copy (the file never changes): for tensors handed out as views of the
    /// file, which callers may write to.
    MappedFile(const std::string& path, bool copy_on_write);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    /// The file's bytes, its size and path.
    /// @{
    const char* data() const { return data_; }
    std::size_t size() const { return size_; }
    std::string_view view() const { return std::string_view(data_, size_); }
    const std::string& path() const { return path_; }
    /// @}

    /// Hint that everything before `pointer` will not be read again (MADV_DONTNEED on the whole
    /// pages before it; they stay readable and come back from the page cache if touched).
    void release_before(const char* pointer);

private:
    std::string path_;
    const char* data_ = "";
    std::size_t size_ = 0;
    void* mapping_ = nullptr;
    std::size_t released_ = 0;  ///< bytes from the start already released
    std::string fallback_;      ///< contents when the file could not be mapped
};

}  // namespace polygraphy
