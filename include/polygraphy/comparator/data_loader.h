// Data loaders: the default seeded random loader (numpy-compatible) and user-provided feeds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "polygraphy/common/name_match.h"  // find_str_in_list, closest_match (used with data loaders)
#include "polygraphy/common/run_results.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// Anything that yields feed dicts: called with the iteration index and the metadata of the first
/// runner's inputs (the seeds' `input_metadata` property, set by the Comparator); returns nullopt
/// when exhausted. A lambda over a vector of feed dicts is a data loader.
using DataLoaderFn =
    std::function<std::optional<TensorMap>(std::size_t iteration, const TensorMetadata& input_metadata)>;

/// Inclusive range of generated values.
struct ValRange {
    double min = 0.0;  ///< lowest value
    double max = 1.0;  ///< highest value
};

/// Generates random inputs exactly as Polygraphy's DataLoader does with numpy:
/// iteration i uses a fresh legacy `RandomState(seed + i)` (MT19937), inputs are drawn in model-input
/// order; floats are `random_sample(shape) * (max - min) + min` rounded to the dtype, integers and
/// bools `randint(min, max + 1, shape, dtype)` with numpy's masked rejection sampling. So the same
/// seed and ranges give the same values in both tools.
class DataLoader {
public:
    /// Settings of the generated data (`--seed`, `--iterations`, `--val-range`, `--input-shapes`).
    struct Options {
        int64_t seed = 1;        ///< iteration i draws from RandomState(seed + i)
        int64_t iterations = 1;  ///< number of feeds as_function() yields
        /// Per-input ranges; the key "" is the default for inputs not listed (Polygraphy: (0.0, 1.0)).
        /// Keys may be fnmatch patterns ("ids_*"); an exact key wins over a pattern.
        OrderedMap<ValRange> val_range;
        /// User-provided dtypes/shapes (`--input-shapes`), overriding the model's for generation.
        /// Keys may be fnmatch patterns, as in Polygraphy; a pattern matching no input only warns.
        TensorMetadata input_metadata;
        /// Range of every integer input (not bool), over val_range (Polygraphy's deprecated `int_range`,
        /// `--int-min/--int-max`); the seeds' `DataLoader(int_range=(0, 2), float_range=(0.0, 2.0))`.
        std::optional<ValRange> int_range;
        /// Range of every floating-point input, over val_range (`float_range`, `--float-min/--float-max`).
        std::optional<ValRange> float_range;
    };

    DataLoader() : DataLoader(Options{}) {}
    /// Loader with `options`; logs the user metadata when there is some.
    explicit DataLoader(Options options);

    /// Number of iterations as_function() yields.
    int64_t iterations() const { return options_.iterations; }

    /// Feed dict of iteration `index` for inputs described by `model_metadata`.
    /// Dynamic dims without a user shape become 1 (with a warning, once per input); an unknown rank
    /// gives a scalar and an unknown dtype float64 (numpy's astype(None)). A static 1-D integer input
    /// of length N whose user shape has N dims is a shape tensor: it gets the user shape as values.
    /// float8/int4/string inputs are UnsupportedError (bfloat16 is generated through float32).
    /// Throws UsageError for user metadata or ranges naming inputs the model does not have
    /// (with a did-you-mean hint), PolygraphyException for user shapes that contradict the model.
    TensorMap generate(int64_t index, const TensorMetadata& model_metadata) const;

    /// Adapts this loader to the DataLoaderFn interface.
    DataLoaderFn as_function() const;

private:
    Options options_;
};

/// A data loader over a fixed list of feed dicts (e.g. from `--load-inputs`): the seeds' "a list of dicts".
DataLoaderFn data_loader_from_list(InputList feeds);

/// A data loader over a generator: `next(input_metadata)` is called once per iteration, in order, and
/// returns the next feed dict or nullopt when exhausted (the seeds' Python generator that may read the
/// `input_metadata` set by the Comparator). The generator's state is shared by copies of the returned
/// function, so one Comparator::run consumes it once.
DataLoaderFn data_loader_from_generator(std::function<std::optional<TensorMap>(const TensorMetadata&)> next);

/// What a sharded loader saw of the whole dataset once it was read to its end.
struct DatasetTally {
    bool complete = false;    ///< the loader was read to its end (the figures below are set)
    std::size_t samples = 0;  ///< samples in the whole dataset
    std::string fingerprint;  ///< a hash of every sample's input names, types, shapes and values (hex)
};

/// The samples of shard `index` of `count` of what `loader` yields: iteration k is the loader's
/// sample `index + k * count`. Every sample of the dataset is still asked for, in order (a
/// generator yields only in order), and those of other shards are dropped once hashed; when the
/// loader ends, `tally` (when given) gets the dataset's size and fingerprint. A revisited
/// iteration asks the loader for its sample again (random access). UsageError unless
/// index < count.
DataLoaderFn shard_data_loader(DataLoaderFn loader, std::size_t index, std::size_t count,
                               std::shared_ptr<DatasetTally> tally = nullptr);

/// Matches loaded buffers to a runner's inputs the way Polygraphy does: by exact name, then
/// case-insensitive substring, then position (warning when not exact); casts on dtype mismatch
/// with a warning; a shape that contradicts the metadata is an InputError naming the input.
TensorMap coerce_feed(const TensorMap& feed, const TensorMetadata& metadata);

/// Formats a target shape for the log lines of try_match_shape.
using ShapeText = std::function<std::string(const DynShape& shape)>;

/// Polygraphy's util.try_match_shape: freezes dynamic dims of `shape` from the tensor, then tries
/// to reshape and/or transpose `tensor` to it, logging each step (the target shape is printed with
/// `shape_text`). Returns the tensor unchanged where no step applies; never throws for a mismatch.
Tensor try_match_shape(const Tensor& tensor, DynShape shape, const ShapeText& shape_text);

}  // namespace polygraphy
