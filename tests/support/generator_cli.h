// The command line shared by the model generators of examples/models: `NAME OUT.onnx [--option VALUE]...`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "external_weights.h"
#include "transformer_sizes.h"

namespace polygraphy::testing {

/// One option of a generator: a number (`--layers 12`) or a switch (`--functions`).
struct GeneratorOption {
    std::string flag;           ///< "--layers"
    std::string help;           ///< one line for the usage text
    int64_t* number = nullptr;  ///< where a numeric option's value goes (its current value is the default)
    bool* enabled = nullptr;    ///< where a switch goes (set to true when given)
};

/// The options of `sizes` (--layers, --hidden, --heads, --intermediate, --vocab, --max-positions, --seed),
/// with the values in `sizes` as defaults; `layer_kind` and `feed_forward_kind` name the layers and the feed-forward
/// layer in the help.
std::vector<GeneratorOption> transformer_size_options(TransformerSizes& sizes, const std::string& layer_kind,
                                                      const std::string& feed_forward_kind);

/// The whole main of a generator: parses `argv` (the output path, then `options`; -h/--help prints the
/// usage), calls `generate(path)`, and prints what was written with the time taken. Returns the exit
/// status: 0, 1 for an error (one `[!]` line), 2 for a malformed command line (a `[!]` line and the usage).
int run_model_generator(int argc, char** argv, const std::string& description,
                        const std::vector<GeneratorOption>& options,
                        const std::function<GeneratedModelInfo(const std::string& path)>& generate);

}  // namespace polygraphy::testing
