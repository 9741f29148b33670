#include "polygraphy/common/file_io.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

// The process umask, read without changing it (umask() would race with other threads).
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    }
    return 022;
}

// Rethrows the exception in flight with "Could not write <path>: " in front, keeping its type.
[[noreturn]] void rethrow_naming(const std::string& path) {
    const auto prefix = [&](const std::exception& e) { return fmt::format("Could not write {}: {}", path, e.what()); };
    try {
        throw;
    } catch (const InternalError&) {
        throw;
    } catch (const FormatError& e) {
        throw FormatError(prefix(e));
    } catch (const UnsupportedError& e) {
        throw UnsupportedError(prefix(e));
    } catch (const InputError& e) {
        throw InputError(prefix(e));
    } catch (const std::exception& e) {
        throw PolygraphyException(prefix(e));
    }
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    if (path.empty() || !target.has_filename())
        throw PolygraphyException(fmt::format("Could not write '{}': not a file path", path));
    const fs::path folder = target.parent_path();
    if (!folder.empty()) {
        std::error_code error;
        fs::create_directories(folder, error);
        if (error)
            throw PolygraphyException(
                fmt::format("Could not write {}: cannot create folder {}: {}", path, folder.string(), error.message()));
    }
    std::string temp_name(".");  // built in steps: GCC 12 warns falsely about "." + string
    temp_name += target.filename().string();
    temp_name += ".tmp.XXXXXX";
    temp_ = (folder / temp_name).string();
    const int fd = mkstemp(temp_.data());
    if (fd < 0) throw PolygraphyException(fmt::format("Could not write {}: {}", path, errno_text(errno)));
    out_ = fdopen(fd, "wb");
    if (!out_) {
        const int error = errno;
        close(fd);
        unlink(temp_.c_str());
        throw PolygraphyException(fmt::format("Could not write {}: {}", path, errno_text(error)));
    }
    std::setvbuf(out_, nullptr, _IOFBF, 1 << 20);
}

AtomicFile::~AtomicFile() {
    if (!out_) return;
    std::fclose(out_);
    unlink(temp_.c_str());
}

void AtomicFile::fail(int error) {
    if (out_) std::fclose(out_);
    out_ = nullptr;
    unlink(temp_.c_str());
    throw PolygraphyException(fmt::format("Could not write {}: {}", path_, errno_text(error)));
}

void AtomicFile::write(const void* data, std::size_t nbytes) {
    if (nbytes > 0 && std::fwrite(data, 1, nbytes, out_) != nbytes) fail(errno ? errno : EIO);
    size_ += nbytes;
}

void AtomicFile::patch(std::size_t offset, const void* data, std::size_t nbytes) {
    if (std::fflush(out_) != 0) fail(errno ? errno : EIO);
    for (std::size_t done = 0; done < nbytes;) {
        const ssize_t n = pwrite(fileno(out_), static_cast<const char*>(data) + done, nbytes - done,
                                 static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(n < 0 ? errno : EIO);
        done += static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit() {
    if (std::fflush(out_) != 0 || std::ferror(out_)) fail(errno ? errno : EIO);
    if (fsync(fileno(out_)) != 0) fail(errno);
    // mkstemp makes the file 0600; give it the mode a plain open() would (or the old file's).
    struct stat existing {};
    const mode_t mode = stat(path_.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : (0666 & ~current_umask());
    fchmod(fileno(out_), mode);
    const int closed = std::fclose(out_);
    out_ = nullptr;
    if (closed != 0) {
        unlink(temp_.c_str());
        throw PolygraphyException(fmt::format("Could not write {}: {}", path_, errno_text(errno)));
    }
    if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
        const int error = errno;
        unlink(temp_.c_str());
        throw PolygraphyException(fmt::format("Could not write {}: {}", path_, errno_text(error)));
    }
    // Make the rename itself durable.
    const std::string folder = std::filesystem::path(path_).parent_path().string();
    const int dir = open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        fsync(dir);
        close(dir);
    }
}

void write_file_atomically(const std::string& path, const std::function<void(std::FILE* out)>& write) {
    AtomicFile file(path);
    try {
        write(file.out());
    } catch (...) {
        rethrow_naming(path);
    }
    file.commit();
}

void write_file_atomically(const std::string& path, std::string_view contents) {
    write_file_atomically(path, [&](std::FILE* out) {
        if (!contents.empty() && std::fwrite(contents.data(), 1, contents.size(), out) != contents.size())
            throw PolygraphyException(fmt::format("write failed: {}", errno_text(errno)));
    });
}

std::string read_file(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw PolygraphyException(fmt::format("Could not read {}: {}", path, errno_text(errno)));
    struct stat info {};
    if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
        close(fd);
        throw PolygraphyException(fmt::format("Could not read {}: it is a folder", path));
    }
    std::string contents;
    if (S_ISREG(info.st_mode)) contents.reserve(static_cast<std::size_t>(info.st_size));
    char chunk[1 << 16];
    while (true) {
        const ssize_t n = ::read(fd, chunk, sizeof(chunk));
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            close(fd);
            throw PolygraphyException(fmt::format("Could not read {}: {}", path, errno_text(error)));
        }
        contents.append(chunk, static_cast<std::size_t>(n));
    }
    close(fd);
    return contents;
}

MappedFile::MappedFile(const std::string& path) : MappedFile(path, false) {}

MappedFile::MappedFile(const std::string& path, bool copy_on_write) : path_(path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw PolygraphyException(fmt::format("Could not read {}: {}", path, errno_text(errno)));
    struct stat info {};
    if (fstat(fd, &info) != 0) {
        const int error = errno;
        close(fd);
        throw PolygraphyException(fmt::format("Could not read {}: {}", path, errno_text(error)));
    }
    if (S_ISDIR(info.st_mode)) {
        close(fd);
        throw PolygraphyException(fmt::format("Could not read {}: it is a folder", path));
    }
    if (S_ISREG(info.st_mode) && info.st_size > 0) {
        const auto size = static_cast<std::size_t>(info.st_size);
        void* mapping = mmap(nullptr, size, PROT_READ | (copy_on_write ? PROT_WRITE : 0), MAP_PRIVATE, fd, 0);
        if (mapping != MAP_FAILED) {
            close(fd);
            mapping_ = mapping;
            data_ = static_cast<const char*>(mapping);
            size_ = size;
            return;
        }
    }
    close(fd);
    if (S_ISREG(info.st_mode) && info.st_size == 0) return;
    fallback_ = read_file(path);
    data_ = fallback_.data();
    size_ = fallback_.size();
}

MappedFile::~MappedFile() {
    if (mapping_) munmap(mapping_, size_);
}

void MappedFile::release_before(const char* pointer) {
    if (!mapping_ || pointer <= data_) return;
    static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t offset = std::min(static_cast<std::size_t>(pointer - data_), size_);
    const std::size_t end = offset / page * page;
    if (end <= released_) return;
    madvise(const_cast<char*>(data_) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
}

std::optional<uint64_t> byte_count_from_environment(const char* variable, uint64_t max) {
    const char* text = std::getenv(variable);
    if (!text || !*text) return std::nullopt;
    uint64_t bytes = 0;
    const char* end = text + std::strlen(text);
    const auto [ptr, error] = std::from_chars(text, end, bytes);
    if (error != std::errc() || ptr != end || bytes == 0 || bytes > max)
        throw PolygraphyException(
            fmt::format("{} must be a number of bytes from 1 to {}, not '{}'", variable, max, text));
    return bytes;
}

}  // namespace polygraphy
