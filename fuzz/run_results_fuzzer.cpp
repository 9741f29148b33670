// Fuzzes the reader of Polygraphy's JSON files (include/polygraphy/common/run_results.h): RunResults
// and input lists, through parse_run_results_or_inputs (the reader behind RunResults::load,
// load_inputs and load_run_results_or_inputs). Properties: whatever is accepted is valid JSON, and
// saving it and loading the file back (the file-mapping path) gives the same results.
#include <cmath>
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
#include "polygraphy/common/npy.h"
#include "polygraphy/common/run_results.h"

namespace {

using namespace polygraphy;
using Loaded = std::variant<RunResults, InputList>;

// Names and strings are compared as written: invalid UTF-8 is saved as U+FFFD, so compare the
// JSON quoting (and np.save bytes for string arrays) rather than the raw bytes.
bool same_text(const std::string& a, const std::string& b) {
    return json::quote(a) == json::quote(b);
}

bool same_tensor(const Tensor& a, const Tensor& b) {
    if (a.dtype() == DataType::kString && b.dtype() == DataType::kString) return npy::save(a) == npy::save(b);
    return a.equals(b);
}

bool same_map(const TensorMap& a, const TensorMap& b) {
    if (a.size() != b.size()) return false;
    auto it = b.begin();
    for (const auto& [name, tensor] : a) {
        if (!same_text(name, it->first) || !same_tensor(tensor, it->second)) return false;
        ++it;
    }
    return true;
}

bool same_runtime(const std::optional<double>& a, const std::optional<double>& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return true;
    return (std::isnan(*a) && std::isnan(*b)) || *a == *b;
}

bool same(const Loaded& a, const Loaded& b) {
    if (a.index() != b.index()) return false;
    if (const auto* inputs = std::get_if<InputList>(&a)) {
        const auto& other = std::get<InputList>(b);
        if (inputs->size() != other.size()) return false;
        for (std::size_t i = 0; i < inputs->size(); ++i)
            if (!same_map((*inputs)[i], other[i])) return false;
        return true;
    }
    const auto& x = std::get<RunResults>(a).lst;
    const auto& y = std::get<RunResults>(b).lst;
    if (x.size() != y.size()) return false;
    for (std::size_t r = 0; r < x.size(); ++r) {
        if (!same_text(x[r].first, y[r].first) || x[r].second.size() != y[r].second.size()) return false;
        for (std::size_t i = 0; i < x[r].second.size(); ++i) {
            const IterationResult& p = x[r].second[i];
            const IterationResult& q = y[r].second[i];
            if (!same_text(p.runner_name, q.runner_name) || !same_runtime(p.runtime, q.runtime) ||
                !same_map(p.outputs, q.outputs))
                return false;
        }
    }
    return true;
}

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
