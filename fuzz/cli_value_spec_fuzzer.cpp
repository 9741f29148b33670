// Fuzzes the parsers of command-line value specs (include/polygraphy/tools/args/util.h): numbers,
// `[key:]value` splitting, literals and lists, shapes (--input-shapes), per-key tolerances
// (--atol/--rtol), per-key integers and strings, value ranges (--val-range), byte counts. The input
// is split on newlines into argument values; the first one is also the single value for the
// parsers that take one. Malformed values must be refused with UsageError and nothing else.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "polygraphy/common/exception.h"
#include "tools/args/util.h"

namespace {

using namespace polygraphy;
namespace au = polygraphy::tools::args_util;

template <typename Fn>
void refused_with_usage_error_only(Fn&& parse) {
    try {
        parse();
    } catch (const UsageError&) {
    }
}

void check_numbers(std::string_view text) {
    if (const auto value = au::parse_int(text)) FUZZ_CHECK(au::parse_int(std::to_string(*value)) == *value);
    if (const auto value = au::parse_float(text); value && !std::isnan(*value)) {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%.17g", *value);
        FUZZ_CHECK(au::parse_float(buffer) == *value);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::vector<std::string> args = polygraphy::fuzz::split_lines(data, size);
    const std::string& first = args.front();

    check_numbers(first);
    for (const auto& arg : args) {
        const au::KeyValue kv = au::split_key_value(arg);
        if (arg.find(':') != std::string::npos) {
            FUZZ_CHECK(kv.key + ":" + kv.value == arg && kv.value.find(':') == std::string::npos);
        } else {
            FUZZ_CHECK(kv.key.empty() && kv.value == arg);
        }
    }
    (void)python_list_repr(args);

    refused_with_usage_error_only([&] {
        const au::Literal literal = au::parse_literal("--flag", first);
        if (literal.kind == au::Literal::Kind::kList)
            for (const auto& item : literal.items) FUZZ_CHECK(item.kind != au::Literal::Kind::kList);
    });
    refused_with_usage_error_only([&] {
        for (const Dim& dim : au::parse_shape("--shape", first)) FUZZ_CHECK(dim.value >= -1);
    });
    refused_with_usage_error_only([&] {
        const TensorMetadata shapes = au::parse_input_shapes("--input-shapes", args);
        (void)shapes.to_string();
    });
    refused_with_usage_error_only([&] {
        for (const auto& [name, tolerance] : au::parse_per_key_numbers("--atol", args, 0.0))
            FUZZ_CHECK(!std::isnan(tolerance) && tolerance >= 0.0);
    });
    refused_with_usage_error_only([&] {
        for (const auto& [name, value] : au::parse_per_key_numbers("--rtol", args, 0.0, 1.0))
            FUZZ_CHECK(value >= 0.0 && value <= 1.0);
    });
    refused_with_usage_error_only([&] {
        for (const auto& [name, value] : au::parse_per_key_ints("--index-tolerance", args)) FUZZ_CHECK(value >= 0);
    });
    (void)au::parse_per_key_strings("--check-error-stat", args);
    refused_with_usage_error_only([&] {
        for (const auto& [name, range] : au::parse_val_ranges("--val-range", args))
            FUZZ_CHECK(!std::isnan(range.min) && !std::isnan(range.max) && range.min <= range.max);
    });
    refused_with_usage_error_only([&] { FUZZ_CHECK(au::parse_num_bytes("--pool-limit", first) >= 0); });
    (void)au::did_you_mean(first, std::vector<std::string>(args.begin() + 1, args.end()));
    return 0;
}
