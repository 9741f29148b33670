// Fuzzes the reader of Polygraphy's JSON files (include/polygraphy/common/run_results.h): RunResults
// and input lists, through parse_run_results_or_inputs (the reader behind RunResults::load,
// load_inputs and load_run_results_or_inputs). Properties: whatever is accepted is valid JSON, and
// saving it and loading the file back (the file-mapping path) gives the same results.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_support.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/run_results.h"
#include "same_saved_data.h"

namespace {

using namespace polygraphy;
using polygraphy::fuzz::Loaded;
using polygraphy::fuzz::same;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<Loaded> loaded;
    try {
        loaded = parse_run_results_or_inputs(text, "fuzz.json");
    } catch (const FormatError&) {
        return 0;
    }

    // The reader skips what it does not need and decodes arrays on a fast path; what it accepts
    // must still be one valid JSON document.
    try {
        json::Cursor cursor(text, "fuzz.json");
        cursor.skip_value();
        cursor.expect_end();
    } catch (const FormatError&) {
        FUZZ_CHECK(!"accepted a document that is not valid JSON");
    }

    // Save and load back through the file path. Saving can refuse what cannot be written (for
    // example a runner name that is not text); loading what was saved must not fail.
    const std::string path = polygraphy::fuzz::scratch_dir() + "/results.json";
    try {
        if (const auto* inputs = std::get_if<InputList>(&*loaded)) save_inputs(*inputs, path);
        else std::get<RunResults>(*loaded).save(path);
    } catch (const PolygraphyException&) {
        return 0;
    }
    const Loaded reloaded = load_run_results_or_inputs(path);
    std::filesystem::remove(path);
    FUZZ_CHECK(same(*loaded, reloaded));
    return 0;
}
