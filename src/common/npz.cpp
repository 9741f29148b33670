// .npz archives (common/npz.h): a minimal zip writer and reader for stored members, and the layout
// of RunResults and input lists in them.
#include "polygraphy/common/npz.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <zlib.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/npy.h"

namespace polygraphy::npz {
namespace {

constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kEnd64Signature = 0x06064b50;
constexpr uint32_t kLocator64Signature = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kPaddingExtraId = 0xd935;  // the id Android's zipalign gives its padding
constexpr uint16_t kUtf8NamesFlag = 0x0800;
constexpr uint16_t kEncryptedFlag = 0x0001;
constexpr uint16_t kVersionPlain = 20;           // 2.0: stored members, folders
constexpr uint16_t kVersionZip64 = 45;           // 4.5: ZIP64
constexpr uint16_t kMadeByUnix = (3 << 8) | 45;  // host system Unix, so the file mode below applies
constexpr uint32_t kRegularFileMode = 0100644u << 16;
constexpr uint16_t kDosDate1980 = (1 << 5) | 1;  // a fixed date: the same results give the same file
constexpr std::size_t kLocalHeaderSize = 30;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kEnd64Size = 56;
constexpr std::size_t kLocator64Size = 20;
constexpr std::size_t kDataAlignment = 64;
constexpr uint64_t kMax32 = 0xffffffffu;
constexpr uint64_t kMax16 = 0xffffu;
constexpr const char* kThresholdVariable = "POLYGRAPHY_ZIP64_THRESHOLD";
constexpr const char* kMetadataMember = "polygraphy.json";
constexpr const char* kLayouts =
    "outputs/<runner>/<iteration>/<output>.npy, inputs/<iteration>/<input>.npy or <input>.npy";

void put16(std::string& out, uint64_t value) {
    for (int i = 0; i < 2; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}
void put32(std::string& out, uint64_t value) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}
void put64(std::string& out, uint64_t value) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}
uint64_t get(const unsigned char* p, int bytes) {
    uint64_t value = 0;
    for (int i = bytes; i-- > 0;) value = value << 8 | p[i];
    return value;
}

uint32_t crc_of(const void* data, std::size_t nbytes, uint32_t crc = 0) {
    return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), nbytes));
}

// The bytes npy::save_to writes for a numeric tensor, known before writing it.
uint64_t npy_size(const Tensor& tensor) {
    const DataType stored = npy::npy_write_dtype(tensor.dtype());
    return npy::make_header(stored, tensor.shape()).size() + static_cast<uint64_t>(tensor.numel()) * dtype_size(stored);
}

bool is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-' || c == '~';
}

// urllib.parse.quote(name, safe=''), plus dots encoded in a name made only of dots.
std::string encode_component(std::string_view name) {
    const bool only_dots = !name.empty() && name.find_first_not_of('.') == std::string_view::npos;
    std::string out;
    for (const char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (is_unreserved(c) && !(only_dots && c == '.'))
            out += ch;
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::string> decode_component(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int high = hex_value(text[i + 1]), low = hex_value(text[i + 2]);
        if (high < 0 || low < 0) return std::nullopt;
        out += static_cast<char>(high * 16 + low);
        i += 2;
    }
    return out;
}

std::optional<std::size_t> parse_iteration(std::string_view text) {
    // Decimal, no sign or leading zeros, at most 9 digits.
    if (text.empty() || text.size() > 9 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
    std::size_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

uint64_t zip64_threshold() {
    return byte_count_from_environment(kThresholdVariable, kMax32).value_or(kMax32);
}

bool is_npz_path(const std::string& path) {
    if (path.size() < 4) return false;
    std::string suffix = path.substr(path.size() - 4);
    std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::tolower(c); });
    return suffix == ".npz";
}

// ---- writing the zip ----------------------------------------------------------------------------

ArchiveWriter::ArchiveWriter(const std::string& path)
    : file_(std::make_unique<AtomicFile>(path)), threshold_(zip64_threshold()) {}

ArchiveWriter::~ArchiveWriter() = default;

const std::string& ArchiveWriter::path() const {
    return file_->path();
}

uint64_t ArchiveWriter::begin_member(const std::string& name, uint64_t size) {
    if (!file_->out()) throw InternalError("npz::ArchiveWriter: a member was added after finish()");
    if (name.size() > kMax16)
        throw UnsupportedError(fmt::format("cannot write {}: the member name '{}...' is longer than zip's 65535 bytes",
                                           file_->path(), name.substr(0, 64)));
    if (!names_.emplace(name, entries_.size()).second)
        throw InternalError(fmt::format("npz::ArchiveWriter: member '{}' added twice", name));
    const uint64_t offset = file_->size();
    const bool zip64 = size >= threshold_;
    std::string extra;
    if (zip64) {
        put16(extra, kZip64ExtraId);
        put16(extra, 16);
        put64(extra, size);
        put64(extra, size);
    }
    const uint64_t unpadded = offset + kLocalHeaderSize + name.size() + extra.size();
    std::size_t padding = (kDataAlignment - unpadded % kDataAlignment) % kDataAlignment;
    if (padding != 0 && padding < 4) padding += kDataAlignment;  // an extra field needs 4 bytes at least
    if (padding != 0) {
        put16(extra, kPaddingExtraId);
        put16(extra, padding - 4);
        extra.append(padding - 4, '\0');
    }
    std::string header;
    put32(header, kLocalSignature);
    put16(header, zip64 ? kVersionZip64 : kVersionPlain);
    put16(header, kUtf8NamesFlag);
    put16(header, 0);  // stored
    put16(header, 0);  // time 00:00
    put16(header, kDosDate1980);
    put32(header, 0);  // CRC-32, patched once the data is written
    put32(header, zip64 ? kMax32 : size);
    put32(header, zip64 ? kMax32 : size);
    put16(header, name.size());
    put16(header, extra.size());
    header += name;
    header += extra;
    file_->write(header.data(), header.size());
    entries_.push_back({name, 0, size, offset});
    return offset + 14;
}

void ArchiveWriter::add_tensor(const std::string& name, const Tensor& tensor) {
    if (tensor.dtype() == DataType::kString) {  // its size depends on the longest string: rendered first
        add_bytes(name, npy::save(tensor));
        return;
    }
    const uint64_t size = npy_size(tensor);
    const uint64_t crc_offset = begin_member(name, size);
    uint32_t crc = crc_of(nullptr, 0);
    uint64_t written = 0;
    npy::save_to(tensor, [&](const void* data, std::size_t nbytes) {
        crc = crc_of(data, nbytes, crc);
        file_->write(data, nbytes);
        written += nbytes;
    });
    if (written != size)
        throw InternalError(fmt::format("npz: member '{}' is {} bytes, {} were expected", name, written, size));
    entries_.back().crc = crc;
    std::string field;
    put32(field, crc);
    file_->patch(crc_offset, field.data(), field.size());
}

void ArchiveWriter::add_bytes(const std::string& name, std::string_view bytes) {
    const uint64_t crc_offset = begin_member(name, bytes.size());
    file_->write(bytes.data(), bytes.size());
    entries_.back().crc = crc_of(bytes.data(), bytes.size());
    std::string field;
    put32(field, entries_.back().crc);
    file_->patch(crc_offset, field.data(), field.size());
}

void ArchiveWriter::finish() {
    const uint64_t directory_offset = file_->size();
    std::string directory;
    for (const Entry& entry : entries_) {
        const bool size64 = entry.size >= threshold_, offset64 = entry.offset >= threshold_;
        std::string extra;
        if (size64 || offset64) {
            put16(extra, kZip64ExtraId);
            put16(extra, (size64 ? 16 : 0) + (offset64 ? 8 : 0));
            if (size64) {
                put64(extra, entry.size);
                put64(extra, entry.size);
            }
            if (offset64) put64(extra, entry.offset);
        }
        put32(directory, kCentralSignature);
        put16(directory, kMadeByUnix);
        put16(directory, size64 || offset64 ? kVersionZip64 : kVersionPlain);
        put16(directory, kUtf8NamesFlag);
        put16(directory, 0);
        put16(directory, 0);
        put16(directory, kDosDate1980);
        put32(directory, entry.crc);
        put32(directory, size64 ? kMax32 : entry.size);
        put32(directory, size64 ? kMax32 : entry.size);
        put16(directory, entry.name.size());
        put16(directory, extra.size());
        put16(directory, 0);  // comment
        put16(directory, 0);  // disk
        put16(directory, 0);  // internal attributes
        put32(directory, kRegularFileMode);
        put32(directory, offset64 ? kMax32 : entry.offset);
        directory += entry.name;
        directory += extra;
    }
    const uint64_t directory_size = directory.size();
    const uint64_t count = entries_.size();
    const bool end64 = count >= kMax16 || directory_size >= threshold_ || directory_offset >= threshold_;
    if (end64) {
        const uint64_t end64_offset = directory_offset + directory_size;
        put32(directory, kEnd64Signature);
        put64(directory, kEnd64Size - 12);
        put16(directory, kMadeByUnix);
        put16(directory, kVersionZip64);
        put32(directory, 0);
        put32(directory, 0);
        put64(directory, count);
        put64(directory, count);
        put64(directory, directory_size);
        put64(directory, directory_offset);
        put32(directory, kLocator64Signature);
        put32(directory, 0);
        put64(directory, end64_offset);
        put32(directory, 1);
    }
    put32(directory, kEndSignature);
    put16(directory, 0);
    put16(directory, 0);
    put16(directory, std::min(count, kMax16));
    put16(directory, std::min(count, kMax16));
    put32(directory, directory_size >= threshold_ ? kMax32 : directory_size);
    put32(directory, directory_offset >= threshold_ ? kMax32 : directory_offset);
    put16(directory, 0);
    file_->write(directory.data(), directory.size());
    file_->commit();
}

// ---- reading the zip ----------------------------------------------------------------------------

// Copy-on-write: tensors are handed out as views, and writing to one must not crash.
Archive::Archive(const std::string& path)
    : path_(path), file_(std::make_shared<MappedFile>(path, true)), inflated_(std::make_unique<Inflated>()) {
    const auto* base = reinterpret_cast<const unsigned char*>(file_->data());
    const uint64_t size = file_->size();
    auto fail = [&](const std::string& problem) -> void { throw FormatError(fmt::format("{}: {}", path, problem)); };
    auto fits = [&](uint64_t offset, uint64_t length) { return offset <= size && length <= size - offset; };

    // The end record: the last signature whose comment reaches exactly the end of the file.
    std::optional<uint64_t> end;
    if (size >= kEndSize) {
        const uint64_t lowest = size - kEndSize > kMax16 ? size - kEndSize - kMax16 : 0;
        for (uint64_t at = size - kEndSize + 1; at-- > lowest;) {
            if (get(base + at, 4) == kEndSignature && at + kEndSize + get(base + at + 20, 2) == size) {
                end = at;
                break;
            }
        }
    }
    if (!end) fail("not a zip file (no end-of-central-directory record); an .npz is a zip of .npy files");
    uint64_t count = get(base + *end + 10, 2);
    uint64_t directory_size = get(base + *end + 12, 4);
    uint64_t directory_offset = get(base + *end + 16, 4);
    if (*end >= kLocator64Size && get(base + *end - kLocator64Size, 4) == kLocator64Signature) {
        const uint64_t end64 = get(base + *end - kLocator64Size + 8, 8);
        if (!fits(end64, kEnd64Size) || get(base + end64, 4) != kEnd64Signature)
            fail("corrupt zip: the ZIP64 end record is missing or outside the file");
        count = get(base + end64 + 32, 8);
        directory_size = get(base + end64 + 40, 8);
        directory_offset = get(base + end64 + 48, 8);
    }
    if (!fits(directory_offset, directory_size))
        fail(
            fmt::format("truncated or corrupt zip: its central directory ({} bytes at offset {}) lies outside the "
                        "file of {} bytes",
                        directory_size, directory_offset, size));

    const uint64_t directory_end = directory_offset + directory_size;
    uint64_t at = directory_offset;
    std::set<std::string, std::less<>> names;
    for (uint64_t index = 0; index < count; ++index) {
        if (!fits(at, kCentralHeaderSize) || at + kCentralHeaderSize > directory_end ||
            get(base + at, 4) != kCentralSignature)
            fail(fmt::format("truncated or corrupt zip: the central directory ends at entry {} of the {} it declares",
                             index, count));
        const unsigned char* entry = base + at;
        const uint64_t flags = get(entry + 8, 2), method = get(entry + 10, 2);
        uint64_t compressed = get(entry + 20, 4), uncompressed = get(entry + 24, 4);
        const uint64_t name_length = get(entry + 28, 2), extra_length = get(entry + 30, 2),
                       comment_length = get(entry + 32, 2);
        uint64_t local = get(entry + 42, 4);
        const uint64_t entry_size = kCentralHeaderSize + name_length + extra_length + comment_length;
        if (at + entry_size > directory_end)
            fail(fmt::format("truncated or corrupt zip: central directory entry {} runs past the directory", index));
        std::string name(reinterpret_cast<const char*>(entry + kCentralHeaderSize), name_length);
        auto fail_member = [&](const std::string& problem) { fail(fmt::format("member '{}' {}", name, problem)); };
        // The ZIP64 extra field holds, in order, the fields whose 32-bit value is 0xffffffff.
        const unsigned char* extra = entry + kCentralHeaderSize + name_length;
        for (uint64_t field = 0; field + 4 <= extra_length;) {
            const uint64_t id = get(extra + field, 2), length = get(extra + field + 2, 2);
            if (field + 4 + length > extra_length) fail_member("has a corrupt extra field");
            if (id == kZip64ExtraId) {
                uint64_t used = 0;
                for (uint64_t* value : {&uncompressed, &compressed, &local}) {
                    if (*value != kMax32) continue;
                    if (used + 8 > length) fail_member("has a ZIP64 extra field too short for its sizes");
                    *value = get(extra + field + 4 + used, 8);
                    used += 8;
                }
            }
            field += 4 + length;
        }
        if (flags & kEncryptedFlag) fail_member("is encrypted; .npz members must be plain");
        constexpr uint64_t kStored = 0, kDeflated = 8;
        if (method != kStored && method != kDeflated) {
            const std::string kind = method == 12 ? "bzip2" : method == 14 ? "lzma" : fmt::format("method {}", method);
            fail_member(
                fmt::format("is compressed with {}; .npz members are stored (numpy.savez) or deflated "
                            "(numpy.savez_compressed)",
                            kind));
        }
        if (method == kStored && compressed != uncompressed)
            fail_member(fmt::format("is stored but declares {} bytes compressed and {} uncompressed", compressed,
                                    uncompressed));
        // Deflate expands at most about 1032 to 1: a larger declared size is corrupt, and would
        // otherwise be allocated before the data said otherwise.
        if (method == kDeflated && uncompressed / 1032 > compressed + 1)
            fail_member(fmt::format("declares {} bytes inflated from {} deflated ones, more than deflate can give",
                                    uncompressed, compressed));
        if (!fits(local, kLocalHeaderSize) || get(base + local, 4) != kLocalSignature)
            fail_member(fmt::format("has no local header at offset {}", local));
        const uint64_t data = local + kLocalHeaderSize + get(base + local + 26, 2) + get(base + local + 28, 2);
        if (!fits(data, compressed))
            fail_member(fmt::format("is truncated: its {} bytes at offset {} run past the end of the file ({} bytes)",
                                    compressed, data, size));
        if (!names.insert(name).second) fail_member("appears twice");
        members_.push_back({std::move(name), data, uncompressed, compressed, method == kDeflated});
        at += entry_size;
    }
}

// Deflated members, inflated on first use and kept while the Archive lives (tensors share them).
struct Archive::Inflated {
    std::mutex mutex;
    // By where and how large: two directory entries may name one local header with other sizes.
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, std::shared_ptr<const std::string>> by_extent;
};

Archive::~Archive() = default;

namespace {

std::string inflate_member(const std::string& path, const Member& member, const unsigned char* data) {
    auto fail = [&](const std::string& problem) -> void {
        throw FormatError(fmt::format("{}: member '{}' {}", path, member.name, problem));
    };
    std::string out(member.size, '\0');
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) fail("cannot be inflated (zlib could not start)");
    stream.next_in = const_cast<unsigned char*>(data);
    stream.next_out = reinterpret_cast<unsigned char*>(out.data());
    // zlib counts in 32 bits: the buffers are handed over in chunks.
    constexpr uint64_t kChunk = uint64_t{1} << 30;
    uint64_t in_left = member.stored_size, out_left = member.size;
    int status = Z_OK;
    while (status == Z_OK) {
        if (stream.avail_in == 0 && in_left > 0) {
            stream.avail_in = static_cast<uInt>(std::min(kChunk, in_left));
            in_left -= stream.avail_in;
        }
        if (stream.avail_out == 0 && out_left > 0) {
            stream.avail_out = static_cast<uInt>(std::min(kChunk, out_left));
            out_left -= stream.avail_out;
        }
        status = inflate(&stream, Z_NO_FLUSH);  // Z_BUF_ERROR: no room left or no input left
    }
    const bool no_room = stream.avail_out == 0 && out_left == 0;
    const uint64_t produced = stream.total_out;
    inflateEnd(&stream);
    if (status == Z_BUF_ERROR && no_room)
        fail(fmt::format("is corrupt: it inflates to more than the {} bytes it declares", member.size));
    if (status != Z_STREAM_END) fail("is corrupt: its deflated data is invalid or cut short");
    if (produced != member.size)
        fail(fmt::format("is corrupt: it inflates to {} bytes, not the {} it declares", produced, member.size));
    return out;
}

}  // namespace

std::pair<std::string_view, std::shared_ptr<const void>> Archive::contents(const Member& member) const {
    const char* mapped = file_->data() + member.data_offset;
    if (!member.deflated) return {std::string_view(mapped, member.size), std::shared_ptr<const void>(file_, mapped)};
    std::shared_ptr<const std::string> text;
    {
        std::lock_guard<std::mutex> lock(inflated_->mutex);
        auto& slot = inflated_->by_extent[{member.data_offset, member.stored_size, member.size}];
        if (!slot)
            slot = std::make_shared<const std::string>(
                inflate_member(path_, member, reinterpret_cast<const unsigned char*>(mapped)));
        text = slot;
    }
    return {std::string_view(*text), std::shared_ptr<const void>(text, text->data())};
}

std::string_view Archive::bytes(const Member& member) const {
    return contents(member).first;
}

Tensor Archive::tensor(const Member& member) const {
    const auto [data, owner] = contents(member);
    try {
        return npy::load_view(data.data(), data.size(), owner);
    } catch (const FormatError& error) {
        throw FormatError(fmt::format("{}: member '{}': {}", path_, member.name, error.what()));
    }
}

// ---- the layout of results and inputs -----------------------------------------------------------

std::string output_member_name(const std::string& runner, std::size_t iteration, const std::string& output) {
    return fmt::format("outputs/{}/{}/{}.npy", encode_component(runner), iteration, encode_component(output));
}

std::string input_member_name(std::size_t iteration, const std::string& input) {
    return fmt::format("inputs/{}/{}.npy", iteration, encode_component(input));
}

ResultsWriter::ResultsWriter(const std::string& path) : archive_(path) {}
ResultsWriter::~ResultsWriter() = default;

ResultsWriter::Iteration& ResultsWriter::iteration(const std::string& runner, std::size_t index) {
    auto found =
        std::find_if(runners_.begin(), runners_.end(), [&](const auto& entry) { return entry.first == runner; });
    if (found == runners_.end()) found = runners_.insert(runners_.end(), {runner, {}});
    if (found->second.size() <= index) found->second.resize(index + 1);
    return found->second[index];
}

void ResultsWriter::add_output(const std::string& runner, std::size_t index, const std::string& output,
                               const Tensor& tensor) {
    archive_.add_tensor(output_member_name(runner, index, output), tensor);
    iteration(runner, index).outputs.push_back(output);
}

void ResultsWriter::set_iteration_info(const std::string& runner, std::size_t index, std::optional<double> runtime,
                                       const std::string& runner_name) {
    Iteration& recorded = iteration(runner, index);
    recorded.runtime = runtime;
    recorded.runner_name = runner_name;
}

void ResultsWriter::add_iteration(const std::string& runner, std::size_t index, const IterationResult& result) {
    for (const auto& [name, tensor] : result.outputs) add_output(runner, index, name, tensor);
    set_iteration_info(runner, index, result.runtime, result.runner_name);
}

void ResultsWriter::finish() {
    std::string text;
    json::Writer writer(&text);
    writer.begin_object().key("lst").begin_array();
    for (const auto& [runner, iterations] : runners_) {
        writer.begin_array().value(runner).begin_array();
        for (const Iteration& iteration : iterations) {
            writer.begin_object().key("outputs").begin_array();
            for (const std::string& output : iteration.outputs) writer.value(output);
            writer.end_array().key("runtime");
            if (iteration.runtime)
                writer.value(*iteration.runtime);
            else
                writer.null();
            writer.key("runner_name");
            if (iteration.runner_name)
                writer.value(*iteration.runner_name);
            else
                writer.null();
            writer.end_object();
        }
        writer.end_array().end_array();
    }
    writer.end_array().key("polygraphy_class").value("RunResults").end_object();
    writer.finish();
    archive_.add_bytes(kMetadataMember, text);
    archive_.finish();
}

InputsWriter::InputsWriter(const std::string& path) : archive_(path) {}
InputsWriter::~InputsWriter() = default;

void InputsWriter::add_input(std::size_t iteration, const std::string& input, const Tensor& tensor) {
    archive_.add_tensor(input_member_name(iteration, input), tensor);
    if (iterations_.size() <= iteration) iterations_.resize(iteration + 1);
    iterations_[iteration].push_back(input);
}

void InputsWriter::finish() {
    std::string text;
    json::Writer writer(&text);
    writer.begin_object().key("iterations").begin_array();
    for (const auto& inputs : iterations_) {
        writer.begin_array();
        for (const std::string& input : inputs) writer.value(input);
        writer.end_array();
    }
    writer.end_array().key("polygraphy_class").value("InputList").end_object();
    writer.finish();
    archive_.add_bytes(kMetadataMember, text);
    archive_.finish();
}

void save_results(const RunResults& results, const std::string& path) {
    ResultsWriter writer(path);
    for (const auto& [runner, iterations] : results)
        for (std::size_t index = 0; index < iterations.size(); ++index)
            writer.add_iteration(runner, index, iterations[index]);
    writer.finish();
}

void save_inputs(const InputList& inputs, const std::string& path) {
    InputsWriter writer(path);
    for (std::size_t index = 0; index < inputs.size(); ++index)
        for (const auto& [name, tensor] : inputs[index]) writer.add_input(index, name, tensor);
    writer.finish();
}

// ---- reading results and inputs -----------------------------------------------------------------

namespace {

enum class Layout { kOutputs, kInputs, kTopLevel };

const char* layout_name(Layout layout) {
    switch (layout) {
        case Layout::kOutputs:
            return "outputs/<runner>/<iteration>/<output>.npy";
        case Layout::kInputs:
            return "inputs/<iteration>/<input>.npy";
        case Layout::kTopLevel:
            return "<input>.npy";
    }
    return "";
}

// A tensor member's place: (runner, iteration, name); the runner is empty for inputs.
using Key = std::tuple<std::string, std::size_t, std::string>;

struct Placed {
    Key key;
    const Member* member;
};

class Reader {
public:
    explicit Reader(const std::string& path) : archive_(path) {}

    std::variant<RunResults, InputList> read() {
        std::optional<Layout> layout;
        const Member* first = nullptr;
        for (const Member& member : archive_.members()) {
            if (member.name == kMetadataMember) {
                metadata_ = &member;
                continue;
            }
            const auto [member_layout, key] = place(member);
            if (layout && *layout != member_layout)
                fail(fmt::format("mixes layouts: member '{}' is {} but member '{}' is {}", first->name,
                                 layout_name(*layout), member.name, layout_name(member_layout)));
            layout = member_layout;
            if (!first) first = &member;
            if (!index_.emplace(key, placed_.size()).second)
                fail(fmt::format("members '{}' and '{}' name the same tensor", placed_[index_.at(key)].member->name,
                                 member.name));
            placed_.push_back({key, &member});
        }
        if (!layout && metadata_) layout = metadata_layout();
        if (layout == Layout::kOutputs) return metadata_ ? results_from_metadata() : results_from_names();
        return metadata_ ? inputs_from_metadata() : inputs_from_names();
    }

private:
    [[noreturn]] void fail(const std::string& problem) const {
        throw FormatError(fmt::format("{}: {}", archive_.path(), problem));
    }

    std::pair<Layout, Key> place(const Member& member) const {
        const std::string_view name = member.name;
        auto no_layout = [&](const std::string& why) {
            fail(fmt::format("member '{}' matches no layout ({}); members must be {}", member.name, why, kLayouts));
        };
        if (name.size() < 4 || name.substr(name.size() - 4) != ".npy") no_layout("not a .npy array");
        std::vector<std::string_view> parts;
        std::string_view rest = name.substr(0, name.size() - 4);
        for (std::size_t slash; (slash = rest.find('/')) != std::string_view::npos; rest.remove_prefix(slash + 1))
            parts.push_back(rest.substr(0, slash));
        parts.push_back(rest);
        auto decoded = [&](std::string_view part) {
            auto text = decode_component(part);
            if (!text) no_layout(fmt::format("'{}' is not percent-encoded correctly", part));
            return std::move(*text);
        };
        auto iteration = [&](std::string_view part) {
            const auto index = parse_iteration(part);
            if (!index) no_layout(fmt::format("'{}' is not an iteration number", part));
            return *index;
        };
        if (parts.size() == 1) return {Layout::kTopLevel, Key{"", 0, decoded(parts[0])}};
        if (parts.size() == 3 && parts[0] == "inputs")
            return {Layout::kInputs, Key{"", iteration(parts[1]), decoded(parts[2])}};
        if (parts.size() == 4 && parts[0] == "outputs")
            return {Layout::kOutputs, Key{decoded(parts[1]), iteration(parts[2]), decoded(parts[3])}};
        no_layout(fmt::format("{} path components", parts.size()));
        return {};
    }

    Tensor take(const Key& key, const std::string& what) {
        const auto found = index_.find(key);
        if (found == index_.end())
            fail(fmt::format("{} lists {}, but there is no member for it", kMetadataMember, what));
        used_.insert(found->second);
        return archive_.tensor(*placed_[found->second].member);
    }

    void check_all_used() const {
        for (std::size_t i = 0; i < placed_.size(); ++i)
            if (!used_.count(i))
                fail(fmt::format("member '{}' matches no runner, iteration and tensor listed in {}",
                                 placed_[i].member->name, kMetadataMember));
    }

    json::Cursor metadata_cursor() const {
        return json::Cursor(archive_.bytes(*metadata_),
                            fmt::format("{} (member {})", archive_.path(), kMetadataMember));
    }

    // Every key of `cursor`'s next object, expecting polygraphy_class `expected` and handing `list` to `read`.
    template <typename Read>
    void read_metadata(const char* expected, const char* list, Read&& read) {
        json::Cursor cursor = metadata_cursor();
        std::string scratch;
        std::optional<std::string> polygraphy_class;
        bool have_list = false;
        cursor.begin_object();
        while (auto key = cursor.next_key(scratch)) {
            if (*key == list) {
                read(cursor);
                have_list = true;
            } else if (*key == "polygraphy_class") {
                polygraphy_class = cursor.read_string();
            } else {
                cursor.skip_value();
            }
        }
        cursor.expect_end();
        if (polygraphy_class != expected || !have_list)
            fail(fmt::format("{} is not the metadata of {} members: it needs \"polygraphy_class\": \"{}\" and \"{}\"",
                             kMetadataMember, expected == std::string("RunResults") ? "outputs/" : "inputs/", expected,
                             list));
    }

    // The kind of an archive with no tensor members, from its metadata's polygraphy_class.
    Layout metadata_layout() const {
        json::Cursor cursor = metadata_cursor();
        std::string scratch;
        cursor.begin_object();
        while (auto key = cursor.next_key(scratch)) {
            if (*key == "polygraphy_class")
                return cursor.read_string() == "RunResults" ? Layout::kOutputs : Layout::kInputs;
            cursor.skip_value();
        }
        return Layout::kInputs;
    }

    RunResults results_from_metadata() {
        RunResults results;
        read_metadata("RunResults", "lst", [&](json::Cursor& cursor) {
            std::string scratch;
            cursor.begin_array();
            while (cursor.next_element()) {
                cursor.begin_array();
                if (!cursor.next_element()) cursor.fail("expected [runner_name, iterations]");
                const std::string runner = cursor.read_string();
                if (!cursor.next_element()) cursor.fail("expected [runner_name, iterations]");
                std::vector<IterationResult> iterations;
                cursor.begin_array();
                while (cursor.next_element()) {
                    IterationResult iteration;
                    iteration.runner_name = runner;
                    const std::size_t index = iterations.size();
                    cursor.begin_object();
                    while (auto key = cursor.next_key(scratch)) {
                        if (*key == "outputs") {
                            cursor.begin_array();
                            while (cursor.next_element()) {
                                const std::string output = cursor.read_string();
                                iteration.outputs.set(
                                    output, take({runner, index, output},
                                                 fmt::format("output '{}' of iteration {} of runner '{}'", output,
                                                             index, runner)));
                            }
                        } else if (*key == "runtime") {
                            if (!cursor.read_null()) iteration.runtime = cursor.read_number();
                        } else if (*key == "runner_name") {
                            if (!cursor.read_null()) iteration.runner_name = cursor.read_string();
                        } else {
                            cursor.skip_value();
                        }
                    }
                    iterations.push_back(std::move(iteration));
                }
                if (cursor.next_element()) cursor.fail("expected [runner_name, iterations]");
                results.add(std::move(iterations), runner);
            }
        });
        check_all_used();
        return results;
    }

    InputList inputs_from_metadata() {
        InputList inputs;
        read_metadata("InputList", "iterations", [&](json::Cursor& cursor) {
            cursor.begin_array();
            while (cursor.next_element()) {
                TensorMap feed;
                const std::size_t index = inputs.size();
                cursor.begin_array();
                while (cursor.next_element()) {
                    const std::string input = cursor.read_string();
                    feed.set(input, take({"", index, input}, fmt::format("input '{}' of iteration {}", input, index)));
                }
                inputs.push_back(std::move(feed));
            }
        });
        check_all_used();
        return inputs;
    }

    // Without metadata: runners in order of appearance; iterations must run from 0 without a gap.
    template <typename Visit>
    void check_iterations(const std::string& runner, const std::map<std::size_t, std::vector<const Placed*>>& by_index,
                          Visit&& visit) const {
        std::size_t expected = 0;
        for (const auto& [index, placed] : by_index) {
            if (index != expected)
                fail(fmt::format("member '{}' is iteration {}{}, but no member holds iteration {}",
                                 placed.front()->member->name, index,
                                 runner.empty() ? "" : " of runner '" + runner + "'", expected));
            visit(placed);
            ++expected;
        }
    }

    RunResults results_from_names() {
        std::vector<std::pair<std::string, std::map<std::size_t, std::vector<const Placed*>>>> runners;
        for (const Placed& placed : placed_) {
            const std::string& runner = std::get<0>(placed.key);
            auto found = std::find_if(runners.begin(), runners.end(), [&](const auto& e) { return e.first == runner; });
            if (found == runners.end()) found = runners.insert(runners.end(), {runner, {}});
            found->second[std::get<1>(placed.key)].push_back(&placed);
        }
        RunResults results;
        for (const auto& entry : runners) {
            const std::string& runner = entry.first;  // not a structured binding: clang 14 cannot capture one
            std::vector<IterationResult> iterations;
            check_iterations(runner, entry.second, [&](const std::vector<const Placed*>& placed) {
                IterationResult iteration;
                iteration.runner_name = runner;
                for (const Placed* tensor : placed)
                    iteration.outputs.set(std::get<2>(tensor->key), archive_.tensor(*tensor->member));
                iterations.push_back(std::move(iteration));
            });
            results.add(std::move(iterations), runner);
        }
        return results;
    }

    InputList inputs_from_names() {
        std::map<std::size_t, std::vector<const Placed*>> by_index;
        for (const Placed& placed : placed_) by_index[std::get<1>(placed.key)].push_back(&placed);
        InputList inputs;
        check_iterations("", by_index, [&](const std::vector<const Placed*>& placed) {
            TensorMap feed;
            for (const Placed* tensor : placed) feed.set(std::get<2>(tensor->key), archive_.tensor(*tensor->member));
            inputs.push_back(std::move(feed));
        });
        return inputs;
    }

    Archive archive_;
    const Member* metadata_ = nullptr;
    std::vector<Placed> placed_;
    std::map<Key, std::size_t> index_;
    std::set<std::size_t> used_;
};

}  // namespace

std::variant<RunResults, InputList> load(const std::string& path) {
    return Reader(path).read();
}

}  // namespace polygraphy::npz
