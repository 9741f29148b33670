// Fuzzes the reader of dataset summaries (`run --save-summary`, `data merge`;
// include/polygraphy/comparator/dataset_summary.h). Properties: a part is refused only with a
// FormatError; what is accepted saves and loads back to the same text; merging a part with itself
// gives it back (a requeued shard counts once), or refuses it with a PolygraphyException.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/comparator/dataset_summary.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace polygraphy;
    const std::string path = polygraphy::fuzz::scratch_dir() + "/part.json";
    {
        std::FILE* file = std::fopen(path.c_str(), "wb");
        FUZZ_CHECK(file != nullptr);
        if (size) FUZZ_CHECK(std::fwrite(data, 1, size, file) == size);
        std::fclose(file);
    }
    DatasetSummary summary;
    try {
        summary = load_dataset_summary(path);
    } catch (const FormatError&) {
        return 0;
    }
    // Saving what was read and reading it back gives the same summary, byte for byte when saved again.
    const std::string saved = polygraphy::fuzz::scratch_dir() + "/saved.json";
    save_dataset_summary(summary, saved);
    const std::string text = read_file(saved);
    save_dataset_summary(load_dataset_summary(saved), saved);
    FUZZ_CHECK(read_file(saved) == text);
    // The same part twice merges into itself (when it holds every shard) or is refused in one line.
    try {
        const DatasetSummary merged = merge_dataset_summaries({{"a", summary}, {"b", summary}});
        save_dataset_summary(merged, saved);
        save_dataset_summary(merge_dataset_summaries({{"a", summary}}), path);
        FUZZ_CHECK(read_file(saved) == read_file(path));
    } catch (const PolygraphyException&) {
    }
    std::filesystem::remove(saved);
    std::filesystem::remove(path);
    return 0;
}
