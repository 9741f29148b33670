// Value parsing for command-line options, with Polygraphy's semantics and strict, one-line errors.
#pragma once

#include "polygraphy/job/run_job.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polygraphy/common/ordered_map.h"
#include "polygraphy/common/python_repr.h"  // the errors quote values as Python does
#include "polygraphy/common/tensor_metadata.h"
#include "polygraphy/comparator/data_loader.h"

namespace polygraphy::tools::args_util {

/// Python int(): optional sign, digits (underscores between digits allowed), surrounding spaces.
/// nullopt when `text` is not one or does not fit in int64.
std::optional<int64_t> parse_int(std::string_view text);
/// Python float(): decimal/scientific notation, inf/infinity/nan (any case), surrounding spaces.
std::optional<double> parse_float(std::string_view text);
/// The value of a one-number option (`--atol 1e-3`, `--check-sqnr 30`): nullopt when `text` is;
/// UsageError "<flag>: expected a number[ of 0 or more], got '<text>'" for what parse_float() refuses,
/// NaN, and (with `non_negative`) a negative number.
std::optional<double> parse_number_option(const std::optional<std::string>& text, const std::string& flag,
                                          bool non_negative);

/// Refuses, before a tool does any work, an output path that cannot be written: UsageError
/// "<flag>: <path> is a folder; give a file path" or "<flag>: <why>" (a file is created and removed
/// again to find out). Nothing for nullopt.
void check_destination(const std::optional<std::string>& path, const std::string& flag);

/// `--shard I/N` (0 <= I < N) or `--shard auto`: the shard from the environment, a Slurm job
/// array's (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT: an array of
/// consecutive indices) or a Kubernetes Indexed Job's (JOB_COMPLETION_INDEX of JOB_COMPLETIONS, which
/// the job's manifest sets). UsageError for anything else, an index out of range, or `auto` outside
/// such a job.
DatasetShard parse_shard(const std::string& text);

/// `[<key>:]<value>` split on the LAST ':' (Python's rpartition), so keys may contain ':'
/// (`Input:0:1e-3` -> key "Input:0"). No ':' gives the empty key, meaning "every other name".
struct KeyValue {
    std::string key;    ///< "" when the argument has no ':'
    std::string value;  ///< the part after the last ':'
};
KeyValue split_key_value(std::string_view arg);

/// A Python-literal-ish value, as Polygraphy's args_util.cast() reads it: `[...]` lists of
/// comma-separated items, ints, floats, and strings (quotes stripped).
struct Literal {
    /// What the literal is.
    enum class Kind { kInt, kFloat, kString, kList };
    Kind kind = Kind::kString;   ///< what the literal is
    int64_t int_value = 0;       ///< kInt's value
    double float_value = 0.0;    ///< kFloat's value
    std::string text;            ///< the source text (quotes stripped for strings)
    std::vector<Literal> items;  ///< kList
    /// kInt or kFloat.
    bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat; }
    /// The number as a double (for kInt or kFloat).
    double as_double() const { return kind == Kind::kInt ? static_cast<double>(int_value) : float_value; }
};
/// Strict: a list must be exactly `[item,...]` (one pair of brackets, no nesting); `[]` is empty.
/// Throws UsageError mentioning `flag` and `text` for unbalanced brackets or empty items.
Literal parse_literal(const std::string& flag, std::string_view text);

/// Per-key numbers: `--atol 1e-5 out0:1e-3` -> {"": 1e-5, "out0": 1e-3}. Every value must be a
/// finite or infinite number (not NaN); `min_value`/`max_value` bound it (inclusive).
/// Throws UsageError: "Invalid value in --atol: 'out0:abc'. Expected [<name>:]<number>; 'abc' is not a number".
OrderedMap<double> parse_per_key_numbers(const std::string& flag, const std::vector<std::string>& args,
                                         std::optional<double> min_value = std::nullopt,
                                         std::optional<double> max_value = std::nullopt);
/// Per-key non-negative integers (`--index-tolerance 1 out0:0`).
OrderedMap<int64_t> parse_per_key_ints(const std::string& flag, const std::vector<std::string>& args,
                                       int64_t min_value = 0);
/// Per-key strings (`--check-error-stat max out0:mean`); the caller validates the values.
OrderedMap<std::string> parse_per_key_strings(const std::string& flag, const std::vector<std::string>& args);

/// A shape: `[1,3,224,224]`, `['batch',3,-1]`, `[batch,3]` (string dims are named dynamic dims,
/// -1 an unnamed dynamic one), `[]` (scalar). Throws UsageError naming `flag` and the value.
DynShape parse_shape(const std::string& flag, std::string_view text);

/// `--input-shapes name:[d0,...] ...` (names may contain ':'; `name:auto` leaves the shape unknown).
/// A missing name or a repeated name is a UsageError.
TensorMetadata parse_input_shapes(const std::string& flag, const std::vector<std::string>& args);

/// `--val-range [min,max] name:[min,max] ...` -> ranges by input name ("" = default for others).
/// Throws UsageError for anything but two numbers with min <= max.
OrderedMap<ValRange> parse_val_ranges(const std::string& flag, const std::vector<std::string>& args);

/// `N`, `16M`, `2K`, `1G`, `16e6` (K/M/G = KiB/MiB/GiB; fractions truncated). UsageError otherwise.
int64_t parse_num_bytes(const std::string& flag, std::string_view text);

/// `--compare-memory-budget SIZE`: parse_num_bytes(), and more than 0 (UsageError otherwise).
std::size_t parse_memory_budget(const std::string& flag, std::string_view text);

/// " Did you mean 'x'?" when `closest_match` finds one among `candidates`, else "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace polygraphy::tools::args_util
