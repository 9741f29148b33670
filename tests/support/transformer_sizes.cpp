#include "transformer_sizes.h"

#include <utility>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"

namespace polygraphy::testing {

void validate(const TransformerSizes& sizes) {
    const std::pair<const char*, int64_t> values[] = {
        {"--layers", sizes.layers}, {"--hidden", sizes.hidden},
        {"--heads", sizes.heads},   {"--intermediate", sizes.intermediate},
        {"--vocab", sizes.vocab},   {"--max-positions", sizes.max_positions}};
    for (const auto& [flag, value] : values)
        if (value <= 0) throw UsageError(fmt::format("{} must be positive, got {}", flag, value));
    if (sizes.hidden % sizes.heads != 0)
        throw UsageError(fmt::format("--hidden ({}) must be a multiple of --heads ({})", sizes.hidden, sizes.heads));
}

}  // namespace polygraphy::testing
