// NumPy .npz files: a zip of .npy members, stored as numpy.savez writes them (deflated ones, as
// numpy.savez_compressed writes them, are read too) and as numpy.load opens them, used for `--save-outputs x.npz` /
// `--save-inputs x.npz` and read back by every tool that takes saved data.
//
// Two levels:
//  - ArchiveWriter / Archive: the zip itself. Members are stored (never compressed), with CRC-32
//    (zlib) and UTF-8 names; ZIP64 fields are written for every size or offset at or above the
//    ZIP64 threshold (4 GiB - 1; lowered for tests by zip64_threshold()). Each member's data starts
//    at a multiple of 64 bytes (a padding extra field), so with .npy headers (also multiples of 64)
//    every array is aligned and can be used straight from a file mapping.
//  - ResultsWriter / InputsWriter / load(): Polygraphy's RunResults and input lists, one member per
//    tensor, named
//        outputs/<runner>/<iteration>/<output>.npy     (RunResults)
//        inputs/<iteration>/<input>.npy                (input lists)
//        <input>.npy                                   (numpy.savez(f, name=array): one iteration of inputs)
//    where <runner>, <output> and <input> are percent-encoded as Python's
//    urllib.parse.quote(name, safe='') encodes them (UTF-8 bytes other than letters, digits and
//    "_.-~" become %XX), except that a name made only of dots has them encoded too (%2E), so no
//    member path steps out of its folder; <iteration> is a decimal number from 0. A small member
//    `polygraphy.json` holds what the names do not: the order of runners, iterations and tensors and
//    each iteration's runtime and runner name. It is optional on reading (files made by numpy
//    have none; the zip's order is used then), and when present must list exactly the members.
//
// Reading maps the file copy-on-write: tensors view the mapping (no copy) where their layout allows
// (npy::load_view), and writing to one copies only the pages written, never changing the file; a deflated member is
// inflated into memory once. The CRC-32 is written but not verified on reading, which would read every page. Every
// problem throws FormatError naming the file and a member: not a zip, a truncated or inconsistent central directory,
// members compressed other than by deflate or whose deflated data is corrupt, encrypted members, members outside the
// file, bad .npy data, members matching no layout, a polygraphy.json that disagrees with the members.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "polygraphy/common/run_results.h"

namespace polygraphy {
class AtomicFile;
class MappedFile;
}  // namespace polygraphy

namespace polygraphy::npz {

/// Sizes and offsets at or above this many bytes are written as ZIP64 fields: 0xFFFFFFFF, or the
/// number in the environment variable POLYGRAPHY_ZIP64_THRESHOLD (1 to 0xFFFFFFFF; for tests, which
/// check the ZIP64 path on small files). PolygraphyException for a bad value.
uint64_t zip64_threshold();

/// Whether `path` names an .npz file (its name ends in ".npz", any case).
bool is_npz_path(const std::string& path);

/// Writes a zip of stored members, each as soon as it is added, to a temporary file that finish()
/// renames over the path; destroyed without finish() (an exception), it removes the temporary file.
/// Keeps only the central directory entries (names, sizes, offsets) in memory.
class ArchiveWriter {
public:
    /// Creates the temporary file next to `path`. PolygraphyException when it cannot.
    explicit ArchiveWriter(const std::string& path);
    ~ArchiveWriter();
    ArchiveWriter(const ArchiveWriter&) = delete;
    ArchiveWriter& operator=(const ArchiveWriter&) = delete;

    /// Writes `tensor` as the .npy member `name` (npy::save_to's bytes), streamed from its buffer.
    /// InternalError for a name used before.
    void add_tensor(const std::string& name, const Tensor& tensor);
    /// Writes a member holding `bytes`.
    void add_bytes(const std::string& name, std::string_view bytes);
    /// Writes the central directory and renames the file into place. Nothing can be added after.
    void finish();
    /// The final path.
    const std::string& path() const;

private:
    struct Entry {
        std::string name;
        uint32_t crc = 0;
        uint64_t size = 0;
        uint64_t offset = 0;
    };
    // Starts a member of `size` bytes: its local header; returns the offset of its CRC field.
    uint64_t begin_member(const std::string& name, uint64_t size);

    std::unique_ptr<AtomicFile> file_;
    std::vector<Entry> entries_;
    std::map<std::string, std::size_t, std::less<>> names_;
    uint64_t threshold_;
};

/// One member of an Archive: stored as it is (numpy.savez, this project's writer) or deflated
/// (numpy.savez_compressed).
struct Member {
    std::string name;          ///< as stored (UTF-8)
    uint64_t data_offset = 0;  ///< where its bytes (compressed ones when deflated) start in the file
    uint64_t size = 0;         ///< its length, uncompressed
    uint64_t stored_size = 0;  ///< its length in the file (size, unless deflated)
    bool deflated = false;     ///< compressed with deflate (zip method 8)
};

/// A zip file mapped (copy-on-write), its central directory read and checked (every member stored
/// or deflated, inside the file, with a valid local header). FormatError naming the file otherwise.
class Archive {
public:
    /// Maps and checks `path`.
    explicit Archive(const std::string& path);
    ~Archive();
    Archive(const Archive&) = delete;
    Archive& operator=(const Archive&) = delete;
    /// The members, in central-directory order.
    const std::vector<Member>& members() const { return members_; }
    /// The member's bytes: a view of the mapping, or of the member inflated into memory once (a
    /// deflated member cannot be mapped); valid while this Archive or a tensor from it lives.
    /// FormatError for deflated data that does not inflate to its declared size.
    std::string_view bytes(const Member& member) const;
    /// The member as a .npy array viewing those bytes (npy::load_view; keeps them alive).
    /// FormatError naming the file and member for bad .npy data.
    Tensor tensor(const Member& member) const;
    /// The file's path.
    const std::string& path() const { return path_; }

private:
    struct Inflated;
    // The member's bytes and what keeps them alive.
    std::pair<std::string_view, std::shared_ptr<const void>> contents(const Member& member) const;

    std::string path_;
    std::shared_ptr<MappedFile> file_;
    std::vector<Member> members_;
    std::unique_ptr<Inflated> inflated_;
};

/// The member name of a runner's output: "outputs/<runner>/<iteration>/<output>.npy" (file comment).
std::string output_member_name(const std::string& runner, std::size_t iteration, const std::string& output);
/// The member name of an input: "inputs/<iteration>/<input>.npy".
std::string input_member_name(std::size_t iteration, const std::string& input);

/// The streaming sink of RunResults: tensors are added one at a time, in any order, and written at
/// once; only names, runtimes and the zip's directory are kept until finish(), which writes
/// polygraphy.json and renames the file into place (destruction without finish() leaves nothing).
/// Runners are ordered by their first mention, iterations by index, outputs by first addition.
class ResultsWriter {
public:
    /// Starts writing to a temporary file next to `path`.
    explicit ResultsWriter(const std::string& path);
    ~ResultsWriter();
    ResultsWriter(const ResultsWriter&) = delete;
    ResultsWriter& operator=(const ResultsWriter&) = delete;

    /// Writes output `output` of iteration `iteration` of runner `runner`. InternalError when that
    /// output was added before.
    void add_output(const std::string& runner, std::size_t iteration, const std::string& output, const Tensor& tensor);
    /// Records an iteration's runtime and runner name (IterationResult's; the name defaults to `runner`).
    /// Needed only for iterations that have them, and for iterations without outputs.
    void set_iteration_info(const std::string& runner, std::size_t iteration, std::optional<double> runtime,
                            const std::string& runner_name);
    /// Both of the above for a whole iteration.
    void add_iteration(const std::string& runner, std::size_t iteration, const IterationResult& result);
    /// Writes polygraphy.json and the directory, and renames the file into place.
    void finish();

private:
    struct Iteration {
        std::vector<std::string> outputs;
        std::optional<double> runtime;
        std::optional<std::string> runner_name;
    };
    Iteration& iteration(const std::string& runner, std::size_t index);

    ArchiveWriter archive_;
    std::vector<std::pair<std::string, std::vector<Iteration>>> runners_;
};

/// The streaming sink of input lists, as ResultsWriter (iterations by index, inputs by first addition).
class InputsWriter {
public:
    /// Starts writing to a temporary file next to `path`.
    explicit InputsWriter(const std::string& path);
    ~InputsWriter();
    InputsWriter(const InputsWriter&) = delete;
    InputsWriter& operator=(const InputsWriter&) = delete;

    /// Writes input `input` of iteration `iteration`. InternalError when added before.
    void add_input(std::size_t iteration, const std::string& input, const Tensor& tensor);
    /// Writes polygraphy.json and the directory, and renames the file into place.
    void finish();

private:
    ArchiveWriter archive_;
    std::vector<std::vector<std::string>> iterations_;
};

/// Saves whole results / inputs (the writers above, fed in order).
/// @{
void save_results(const RunResults& results, const std::string& path);
void save_inputs(const InputList& inputs, const std::string& path);
/// @}

/// Reads an .npz written by the writers above or by numpy.savez: outputs/ members are RunResults,
/// inputs/ or top-level members an input list. Tensors view the file's mapping. FormatError naming
/// the file (and member) for every problem listed in the file comment, and for a file mixing layouts.
std::variant<RunResults, InputList> load(const std::string& path);

}  // namespace polygraphy::npz
