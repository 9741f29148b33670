// Fuzzes the .npz reader (include/polygraphy/common/npz.h): the input is written to a file and read
// with npz::Archive (the zip's central directory, every member's bytes and .npy data) and npz::load
// (RunResults or an input list, tensors viewing the file's mapping). Properties: only FormatError
// refuses a file; every member lies inside the file; whatever load() accepts survives save_results /
// save_inputs -> load() unchanged, written with ZIP64 fields for odd-sized inputs (threshold 1) so
// both writer paths are read back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>

#include <stdlib.h>

#include "fuzz_support.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/npz.h"
#include "same_saved_data.h"

namespace {

using namespace polygraphy;
using polygraphy::fuzz::Loaded;
using polygraphy::fuzz::touch;

void write_file(const std::string& path, const uint8_t* data, std::size_t size) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    FUZZ_CHECK(file != nullptr);
    FUZZ_CHECK(std::fwrite(data, 1, size, file) == size);
    FUZZ_CHECK(std::fclose(file) == 0);
}

// The zip level: members are inside the file and their bytes readable (deflated ones inflate to
// their declared size or give a FormatError); bad .npy data is a FormatError.
void check_archive(const std::string& path, std::size_t file_size) {
    std::optional<npz::Archive> archive;
    try {
        archive.emplace(path);
    } catch (const FormatError&) {
        return;
    }
    for (const npz::Member& member : archive->members()) {
        FUZZ_CHECK(member.data_offset <= file_size && member.stored_size <= file_size - member.data_offset);
        FUZZ_CHECK(member.deflated || member.stored_size == member.size);
        std::string_view bytes;
        try {
            bytes = archive->bytes(member);  // a deflated member that does not inflate: FormatError
        } catch (const FormatError&) {
            FUZZ_CHECK(member.deflated);
            continue;
        }
        FUZZ_CHECK(bytes.size() == member.size);
        volatile char sink = 0;
        for (char c : bytes) sink = sink ^ c;
        try {
            touch(archive->tensor(member));
        } catch (const FormatError&) {
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    unsetenv("POLYGRAPHY_ZIP64_THRESHOLD");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string path = polygraphy::fuzz::scratch_dir() + "/input.npz";
    write_file(path, data, size);
    check_archive(path, size);

    std::optional<Loaded> loaded;
    try {
        loaded = npz::load(path);
    } catch (const FormatError&) {
        std::filesystem::remove(path);
        return 0;
    }
    if (const auto* inputs = std::get_if<InputList>(&*loaded)) {
        for (const TensorMap& iteration : *inputs)
            for (const auto& [name, tensor] : iteration) touch(tensor);
    } else {
        for (const auto& [runner, iterations] : std::get<RunResults>(*loaded).lst)
            for (const IterationResult& iteration : iterations)
                for (const auto& [name, tensor] : iteration.outputs) touch(tensor);
    }

    // Save and load back. Saving can refuse what cannot be written; loading what was saved must not fail.
    const std::string resaved = polygraphy::fuzz::scratch_dir() + "/resaved.npz";
    if (size % 2 == 1) setenv("POLYGRAPHY_ZIP64_THRESHOLD", "1", 1);
    bool saved = true;
    try {
        if (const auto* inputs = std::get_if<InputList>(&*loaded))
            npz::save_inputs(*inputs, resaved);
        else
            npz::save_results(std::get<RunResults>(*loaded), resaved);
    } catch (const PolygraphyException&) {
        saved = false;
    }
    unsetenv("POLYGRAPHY_ZIP64_THRESHOLD");
    if (saved) {
        const Loaded reloaded = npz::load(resaved);
        FUZZ_CHECK(polygraphy::fuzz::same(*loaded, reloaded));
        std::filesystem::remove(resaved);
    }
    std::filesystem::remove(path);
    return 0;
}
