// RunResults and input lists, saved and loaded in Polygraphy's JSON format.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// Outputs of one inference of one runner.
struct IterationResult {
    TensorMap outputs;  ///< output name -> tensor, in the runner's output order
    std::optional<double> runtime;  ///< seconds; null in files made by hand
    std::string runner_name;  ///< may be empty in files made by hand (the entry's name applies)
};

/// Results of several runners, in order: [(runner_name, [IterationResult, ...]), ...].
/// JSON: {"lst": [[name, [iteration, ...]], ...], "polygraphy_class": "RunResults"}, arrays as
/// base64-encoded .npy files, exactly as Polygraphy writes them, so files move freely between the two.
class RunResults {
public:
    /// (runner name, iterations).
    using Entry = std::pair<std::string, std::vector<IterationResult>>;

    /// Appends the iterations of one runner.
    void add(std::vector<IterationResult> iterations, const std::string& runner_name) {
        lst.emplace_back(runner_name, std::move(iterations));
    }
    /// Appends every entry of `other` (Polygraphy's `extend`, used by --load-outputs).
    void extend(const RunResults& other) { lst.insert(lst.end(), other.lst.begin(), other.lst.end()); }
    /// Number of entries.
    std::size_t size() const { return lst.size(); }
    /// Iterates over (runner_name, iterations) entries: `for (const auto& [name, iterations] : results)`.
    /// @{
    auto begin() const { return lst.begin(); }
    auto end() const { return lst.end(); }
    auto begin() { return lst.begin(); }
    auto end() { return lst.end(); }
    /// @}
    /// Iterations of the first entry named `runner_name` (Polygraphy's `results[name]`), or nullptr.
    const std::vector<IterationResult>* find(const std::string& runner_name) const {
        for (const auto& entry : lst)
            if (entry.first == runner_name) return &entry.second;
        return nullptr;
    }
    /// Whether there are no entries.
    bool empty() const { return lst.empty(); }

    /// Writes atomically (temp file in the same folder + rename); a path ending in ".npz" gets an
    /// .npz archive (common/npz.h) instead of JSON. Throws PolygraphyException.
    void save(const std::string& path) const;
    /// Throws FormatError naming the file and the problem (bad JSON, base64, .npy, structure).
    static RunResults load(const std::string& path);

    /// The entries, in order (Polygraphy's `lst`).
    std::vector<Entry> lst;
};

/// A list of feed dicts, one per iteration (`--save-inputs` / `--load-inputs`).
using InputList = std::vector<TensorMap>;

/// Polygraphy's inputs JSON: [{name: ndarray, ...}, ...], or an .npz archive for a path ending in
/// ".npz" (common/npz.h). Atomic write.
void save_inputs(const InputList& inputs, const std::string& path);
/// Same, logging `Saving <description> to <path>` (`data to-input`: "input file containing 2 iteration(s)").
void save_inputs(const InputList& inputs, const std::string& path, const std::string& description);
InputList load_inputs(const std::string& path);

/// For tools that take either kind of file (`inspect data`): a top-level list loads as inputs,
/// anything else as RunResults. Logs nothing (save/load above log Polygraphy's "Saving ... to" /
/// "Loading ... from" lines). Throws FormatError like the loaders above.
std::variant<RunResults, InputList> load_run_results_or_inputs(const std::string& path);

/// The same for JSON text already in memory (the reader behind the loaders above; used by the
/// fuzzers). `source` names the text in error messages where the loaders name the file. Logs nothing.
std::variant<RunResults, InputList> parse_run_results_or_inputs(std::string_view text, const std::string& source);

}  // namespace polygraphy
