// The seeded random data loader (bit-compatible with Polygraphy's numpy DataLoader) and feed helpers.
#include "polygraphy/comparator/data_loader.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "common/hash.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace {

// ---- numpy's legacy RandomState -----------------------------------------------------------------

/// numpy.random.RandomState(seed): MT19937 seeded with init_genrand (same as std::mt19937(seed)).
class NumpyRandomState {
public:
    explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}

    uint32_t next32() { return static_cast<uint32_t>(engine_()); }
    /// mt19937_next64: the first draw is the high word.
    uint64_t next64() {
        const uint64_t high = next32();
        return (high << 32) | next32();
    }
    /// random_sample(): 53 random bits from two draws.
    double next_double() {
        const uint32_t a = next32() >> 5;
        const uint32_t b = next32() >> 6;
        return (a * 67108864.0 + b) / 9007199254740992.0;
    }

private:
    std::mt19937 engine_;
};

/// Smallest all-ones mask >= value.
uint64_t gen_mask(uint64_t value) {
    uint64_t mask = value;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    return mask;
}

// The fills below mirror numpy's random_bounded_uint{64,32,16,8}_fill and random_bounded_bool_fill
// with use_masked=True (the legacy RandomState.randint path). `off` is the low bound and
// `rng` = high - low (inclusive), both as unsigned two's complement.

/// Masked rejection sampling: keep the draw's bits under the smallest mask covering `rng`, retry
/// while above it. rng == 0 gives `off` without drawing.
template <typename U, typename Draw>
void fill_masked(U off, U rng, U* out, std::size_t count, Draw&& draw) {
    if (rng == 0) {
        std::fill(out, out + count, off);
        return;
    }
    const auto mask = static_cast<U>(gen_mask(rng));
    for (std::size_t i = 0; i < count; ++i) {
        U value;
        do value = static_cast<U>(draw() & mask);
        while (value > rng);
        out[i] = static_cast<U>(off + value);
    }
}

/// numpy's buffered draws for 16-, 8- and 1-bit values (bools): one 32-bit draw serves 32 / kBits
/// values, low bits first, the buffer shifted right between them.
template <int kBits>
class BufferedDraw {
public:
    explicit BufferedDraw(NumpyRandomState& rs) : rs_(rs) {}
    uint32_t operator()() {
        if (remaining_ == 0) {
            buffer_ = rs_.next32();
            remaining_ = 32 / kBits - 1;
        } else {
            buffer_ >>= kBits;
            --remaining_;
        }
        return buffer_;
    }

private:
    NumpyRandomState& rs_;
    uint32_t buffer_ = 0;
    int remaining_ = 0;
};

// ---- Python-style formatting for log messages ----------------------------------------------------

/// A declared shape as a Python list: [1, 'batch', None].
std::string py_list(const DynShape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        const Dim& dim = shape[i];
        if (!dim.is_dynamic()) {
            text += std::to_string(dim.value);
        } else if (!dim.param.empty()) {
            text += python_repr(dim.param);
        } else {
            text += "None";
        }
    }
    return text + "]";
}

std::string py_list(const Shape& shape) {
    return py_list(to_dyn_shape(shape));
}

/// str() of a 1-D numpy integer array: values right-aligned to a common width, e.g. "[  1   3 224 224]".
std::string numpy_int_array(const std::vector<int64_t>& values) {
    std::size_t width = 0;
    for (int64_t value : values) width = std::max(width, std::to_string(value).size());
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::string item = std::to_string(values[i]);
        if (i) text.push_back(' ');
        text.append(width - item.size(), ' ');
        text.append(item);
    }
    return text + "]";
}

// ---- names --------------------------------------------------------------------------------------

bool contains_wildcard(const std::string& name) {
    return name.find_first_of("*?[]") != std::string::npos;
}

bool wildcard_matches(const std::string& pattern, const std::string& name) {
    return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

/// Key of `keys` that applies to `name`: the exact key, else the first wildcard pattern matching it.
const std::string* match_key(const std::string& name, const std::vector<std::string>& keys) {
    for (const auto& key : keys) {
        if (key == name) return &key;
    }
    for (const auto& key : keys) {
        if (!key.empty() && contains_wildcard(key) && wildcard_matches(key, name)) return &key;
    }
    return nullptr;
}

/// UsageError for keys naming no model input; wildcard patterns matching nothing only warn.
void check_keys_exist(const std::vector<std::string>& keys, const TensorMetadata& model_metadata,
                      const std::string& what) {
    const std::vector<std::string> inputs = model_metadata.keys();
    for (const auto& key : keys) {
        if (key.empty() || model_metadata.contains(key)) continue;
        if (contains_wildcard(key)) {
            const bool any = std::any_of(inputs.begin(), inputs.end(),
                                         [&](const std::string& input) { return wildcard_matches(key, input); });
            if (!any) {
                logger().warning("Input tensor wildcard: " + key + " | " + what +
                                 " was provided, but none of the matched inputs exist in the model.");
            }
            continue;
        }
        std::string message = "Input tensor: " + key + " | " + what + " was provided, but the model has no such input.";
        if (auto match = closest_match(key, inputs)) message += " Did you mean: " + *match + "?";
        message += "\nNote: Model inputs are: " + python_list_repr(inputs);
        throw UsageError(message);
    }
}

// ---- generation ---------------------------------------------------------------------------------

struct IntBounds {
    __int128 min;
    __int128 max;
};

std::optional<IntBounds> integer_bounds(DataType dtype) {
    switch (dtype) {
        case DataType::kBool:
            return IntBounds{0, 1};
        case DataType::kInt8:
            return IntBounds{INT8_MIN, INT8_MAX};
        case DataType::kUInt8:
            return IntBounds{0, UINT8_MAX};
        case DataType::kInt16:
            return IntBounds{INT16_MIN, INT16_MAX};
        case DataType::kUInt16:
            return IntBounds{0, UINT16_MAX};
        case DataType::kInt32:
            return IntBounds{INT32_MIN, INT32_MAX};
        case DataType::kUInt32:
            return IntBounds{0, UINT32_MAX};
        case DataType::kInt64:
            return IntBounds{INT64_MIN, INT64_MAX};
        case DataType::kUInt64:
            return IntBounds{0, static_cast<__int128>(UINT64_MAX)};
        default:
            return std::nullopt;
    }
}

std::string int128_to_string(__int128 value) {
    if (value == 0) return "0";
    const bool negative = value < 0;
    unsigned __int128 magnitude =
        negative ? -static_cast<unsigned __int128>(value) : static_cast<unsigned __int128>(value);
    std::string digits;
    while (magnitude > 0) {
        digits += static_cast<char>('0' + static_cast<int>(magnitude % 10));
        magnitude /= 10;
    }
    if (negative) digits += '-';
    std::reverse(digits.begin(), digits.end());
    return digits;
}

/// Python's int(float): truncation toward zero; NaN and infinities are errors.
__int128 py_int(double value, const std::string& name) {
    if (!std::isfinite(value) || std::fabs(value) >= 1e30) {
        throw UsageError("Input tensor: " + name + " | Value range bound " + python_float_repr(value) +
                         " cannot be converted to an integer");
    }
    return static_cast<__int128>(std::trunc(value));
}

Tensor generate_integers(NumpyRandomState& rs, const std::string& name, DataType dtype, const Shape& shape,
                         const ValRange& range) {
    const bool is_bool = dtype == DataType::kBool;
    __int128 low;
    __int128 high;
    if (is_bool) {
        // Polygraphy casts the range with bool(): any non-zero bound (NaN included) is True.
        low = range.min != 0.0;
        high = range.max != 0.0;
        logger().log_once(Severity::kVerbose, "Input tensor: " + name + " | Generating input data in range: [" +
                                                  (low ? "True" : "False") + ", " + (high ? "True" : "False") + "]");
    } else {
        low = py_int(range.min, name);
        high = py_int(range.max, name);
        logger().log_once(Severity::kVerbose, "Input tensor: " + name + " | Generating input data in range: [" +
                                                  int128_to_string(low) + ", " + int128_to_string(high) + "]");
    }
    const IntBounds bounds = *integer_bounds(dtype);
    const std::string range_text = "[" + int128_to_string(low) + ", " + int128_to_string(high) + "]";
    if (low > high) {
        throw UsageError("Input tensor: " + name + " | Invalid value range " + range_text +
                         ": the minimum is greater than the maximum");
    }
    if (low < bounds.min || high > bounds.max) {
        throw UsageError("Input tensor: " + name + " | Value range " + range_text + " is out of bounds for " +
                         std::string(dtype_name(dtype)) + "\nNote: " + std::string(dtype_name(dtype)) +
                         " values lie in [" + int128_to_string(bounds.min) + ", " + int128_to_string(bounds.max) + "]");
    }
    const auto off = static_cast<uint64_t>(low);
    const auto rng = static_cast<uint64_t>(high - low);

    Tensor tensor(dtype, shape);
    const auto count = static_cast<std::size_t>(tensor.numel());
    auto draw32 = [&rs]() { return rs.next32(); };
    switch (dtype) {
        case DataType::kBool:
            fill_masked<uint8_t>(static_cast<uint8_t>(off), static_cast<uint8_t>(rng), tensor.data_as<uint8_t>(), count,
                                 BufferedDraw<1>(rs));
            break;
        case DataType::kInt8:
        case DataType::kUInt8:
            fill_masked<uint8_t>(static_cast<uint8_t>(off), static_cast<uint8_t>(rng), tensor.data_as<uint8_t>(), count,
                                 BufferedDraw<8>(rs));
            break;
        case DataType::kInt16:
        case DataType::kUInt16:
            fill_masked<uint16_t>(static_cast<uint16_t>(off), static_cast<uint16_t>(rng), tensor.data_as<uint16_t>(),
                                  count, BufferedDraw<16>(rs));
            break;
        case DataType::kInt32:
        case DataType::kUInt32:
            fill_masked<uint32_t>(static_cast<uint32_t>(off), static_cast<uint32_t>(rng), tensor.data_as<uint32_t>(),
                                  count, draw32);
            break;
        default:
            // 64-bit types draw 32 bits at a time while the range fits in 32 bits.
            if (rng <= 0xFFFFFFFFull) {
                fill_masked<uint64_t>(off, rng, tensor.data_as<uint64_t>(), count, draw32);
            } else {
                fill_masked<uint64_t>(off, rng, tensor.data_as<uint64_t>(), count, [&rs]() { return rs.next64(); });
            }
            break;
    }
    return tensor;
}

Tensor generate_floats(NumpyRandomState& rs, const std::string& name, DataType dtype, const Shape& shape,
                       const ValRange& range) {
    logger().log_once(Severity::kVerbose, "Input tensor: " + name + " | Generating input data in range: [" +
                                              python_float_repr(range.min) + ", " + python_float_repr(range.max) + "]");
    // As Polygraphy: with an infinite bound, scale by the bound itself so that infinities survive.
    double scale = range.max - range.min;
    double shift = range.min;
    if (std::isinf(range.min)) {
        scale = range.min;
        shift = 0.0;
    }
    if (std::isinf(range.max)) scale = range.max;

    Tensor tensor(dtype, shape);
    const auto count = static_cast<std::size_t>(tensor.numel());
    auto sample = [&]() {
        // Two separate roundings, as numpy computes `x * scale` and then `+ shift`.
        const volatile double scaled = rs.next_double() * scale;
        return scaled + shift;
    };
    switch (dtype) {
        case DataType::kFloat64: {
            auto* out = tensor.data_as<double>();
            for (std::size_t i = 0; i < count; ++i) out[i] = sample();
            break;
        }
        case DataType::kFloat32: {
            auto* out = tensor.data_as<float>();
            for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(sample());
            break;
        }
        case DataType::kFloat16: {
            auto* out = tensor.data_as<uint16_t>();
            for (std::size_t i = 0; i < count; ++i) out[i] = double_to_half(sample());
            break;
        }
        case DataType::kBFloat16: {
            // numpy has no bfloat16 (Polygraphy refuses it); we round through float32.
            auto* out = tensor.data_as<uint16_t>();
            for (std::size_t i = 0; i < count; ++i) out[i] = float_to_bfloat16(static_cast<float>(sample()));
            break;
        }
        case DataType::kComplex64: {
            auto* out = tensor.data_as<float>();
            for (std::size_t i = 0; i < count; ++i) {
                out[2 * i] = static_cast<float>(sample());
                out[2 * i + 1] = 0.0f;
            }
            break;
        }
        case DataType::kComplex128: {
            auto* out = tensor.data_as<double>();
            for (std::size_t i = 0; i < count; ++i) {
                out[2 * i] = sample();
                out[2 * i + 1] = 0.0;
            }
            break;
        }
        default:
            throw InternalError("generate_floats called for " + std::string(dtype_name(dtype)));
    }
    return tensor;
}

bool can_generate(DataType dtype) {
    if (integer_bounds(dtype)) return true;
    switch (dtype) {
        case DataType::kFloat64:
        case DataType::kFloat32:
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kComplex64:
        case DataType::kComplex128:
            return true;
        default:
            return false;
    }
}

bool is_valid_shape_override(const Shape& new_shape, const DynShape& original) {
    if (new_shape.size() != original.size()) return false;
    for (std::size_t i = 0; i < new_shape.size(); ++i) {
        if (!original[i].is_dynamic() && original[i].value != new_shape[i]) return false;
    }
    return true;
}

Shape concrete_dims(const DynShape& shape) {
    Shape result;
    for (const Dim& dim : shape) result.push_back(dim.value);
    return result;
}

}  // namespace

// ---- DataLoader ---------------------------------------------------------------------------------

DataLoader::DataLoader(Options options) : options_(std::move(options)) {
    if (!options_.input_metadata.empty()) {
        logger().info("Will generate inference input data according to provided TensorMetadata: " +
                      options_.input_metadata.to_string());
    }
}

TensorMap DataLoader::generate(int64_t index, const TensorMetadata& model_metadata) const {
    const std::vector<std::string> user_keys = options_.input_metadata.keys();
    const std::vector<std::string> range_keys = options_.val_range.keys();
    check_keys_exist(user_keys, model_metadata, "Metadata");
    check_keys_exist(range_keys, model_metadata, "A value range");

    const int64_t seed = options_.seed + index;
    if (index < 0 || seed < 0 || seed > int64_t{0xFFFFFFFF}) {
        throw UsageError("Seed must be between 0 and 2**32 - 1, but seed + iteration is " + std::to_string(seed));
    }
    logger().verbose("Generating data using numpy seed: " + std::to_string(seed));
    NumpyRandomState rs(static_cast<uint32_t>(seed));

    TensorMap buffers;
    for (const auto& [name, model_entry] : model_metadata) {
        const MetadataEntry* user = nullptr;
        if (const std::string* key = match_key(name, user_keys)) user = options_.input_metadata.find(*key);

        // Unknown dtypes fall back to float64, as numpy's astype(None) does in Polygraphy.
        DataType dtype = model_entry.dtype.value_or(DataType::kFloat64);
        if (user && user->dtype) dtype = *user->dtype;
        if (!can_generate(dtype)) {
            throw UnsupportedError("Could not convert data type: " + std::string(dtype_name(dtype)) +
                                   " to numpy, so the default data loader cannot generate a numpy array for input: " +
                                   name + ". Please use a custom data loader to provide inputs.");
        }

        // Polygraphy's shape-tensor heuristic: a static 1-D integer input of length N whose user "shape"
        // has N static dims gets that shape as its values.
        const std::optional<DynShape>& model_shape = model_entry.shape;
        const bool is_shape_tensor = user && user->shape && model_shape && dtype_is_integer(dtype) &&
                                     !is_shape_dynamic(*model_shape) && model_shape->size() == 1 &&
                                     !is_shape_dynamic(*user->shape) &&
                                     static_cast<int64_t>(user->shape->size()) == model_shape->front().value;

        std::optional<DynShape> shape = model_shape;
        const std::string shape_text = model_shape ? py_list(*model_shape) : "None";
        if (user && user->shape) {
            const DynShape& user_shape = *user->shape;
            if (is_shape_dynamic(user_shape)) {
                logger().warning(
                    "Input tensor: " + name + " [shape=" + shape_text +
                    "] | Provided input shape: " + py_list(user_shape) +
                    " is dynamic.\nDynamic shapes cannot be used to generate inference data. Will use "
                    "default shape instead.\nTo avoid this, please provide a fixed shape to the data loader. ");
            } else if (!model_shape || is_valid_shape_override(concrete_dims(user_shape), *model_shape) ||
                       is_shape_tensor) {
                shape = user_shape;
            } else {
                // Polygraphy warns and ignores the shape; a contradiction is more likely a mistake.
                throw PolygraphyException("Input tensor: " + name + " [shape=" + shape_text +
                                          "] | Cannot use provided custom shape: " + py_list(user_shape) +
                                          " to override tensor shape\nNote: Only dynamic dimensions may be overridden");
            }
        }

        Shape static_shape;
        if (!shape) {
            logger().log_once(
                Severity::kWarning,
                "Input tensor: " + name + " [shape=None] | Shape is unknown. Will generate data of shape: [].");
        } else {
            static_shape = concrete_dims(*shape);
            if (is_shape_dynamic(*shape)) {
                for (int64_t& dim : static_shape) {
                    if (dim < 0) dim = 1;  // Polygraphy's DEFAULT_SHAPE_VALUE
                }
                logger().log_once(Severity::kWarning,
                                  "Input tensor: " + name + " [shape=" + py_list(*shape) +
                                      "] | Will generate data of shape: " + py_list(static_shape) +
                                      ".\nIf this is incorrect, please provide a custom data loader.");
            }
        }

        if (is_shape_tensor) {
            Tensor values = Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(static_shape.size())},
                                                 std::vector<double>(static_shape.begin(), static_shape.end()));
            logger().log_once(Severity::kInfo, "Assuming " + name + " is a shape tensor. Setting input values to: " +
                                                   numpy_int_array(static_shape) +
                                                   ". If these values are not correct, please set it correctly in "
                                                   "'input_metadata' or by providing --input-shapes");
            buffers.set(name, values.cast(dtype));
            continue;
        }

        ValRange range;
        if (const std::string* key = match_key(name, range_keys)) {
            range = options_.val_range.at(*key);
        } else if (const ValRange* fallback = options_.val_range.find("")) {
            range = *fallback;
        }
        if (options_.int_range && dtype_is_integer(dtype))
            range = *options_.int_range;
        else if (options_.float_range && dtype_is_floating(dtype))
            range = *options_.float_range;
        if (integer_bounds(dtype)) {
            buffers.set(name, generate_integers(rs, name, dtype, static_shape, range));
        } else {
            buffers.set(name, generate_floats(rs, name, dtype, static_shape, range));
        }
    }
    return buffers;
}

DataLoaderFn DataLoader::as_function() const {
    return [loader = *this](std::size_t iteration, const TensorMetadata& metadata) -> std::optional<TensorMap> {
        if (loader.iterations() <= 0 || iteration >= static_cast<std::size_t>(loader.iterations())) return std::nullopt;
        return loader.generate(static_cast<int64_t>(iteration), metadata);
    };
}

DataLoaderFn data_loader_from_generator(std::function<std::optional<TensorMap>(const TensorMetadata&)> next) {
    if (!next) throw PolygraphyException("data_loader_from_generator needs a generator; got an empty function");
    // The Comparator asks for iterations 0, 1, 2... once; a generator cannot rewind, so asking for an
    // iteration out of order is a usage error rather than silently different data.
    struct State {
        std::function<std::optional<TensorMap>(const TensorMetadata&)> next;
        std::size_t position = 0;
        bool exhausted = false;
    };
    auto state = std::make_shared<State>(State{std::move(next)});
    return [state](std::size_t iteration, const TensorMetadata& metadata) -> std::optional<TensorMap> {
        if (state->exhausted) return std::nullopt;
        if (iteration != state->position)
            throw UsageError("A generator data loader yields its feeds in order once; iteration " +
                             std::to_string(iteration) + " was requested after " + std::to_string(state->position) +
                             " feeds");
        std::optional<TensorMap> feed = state->next(metadata);
        if (!feed) {
            state->exhausted = true;
            return std::nullopt;
        }
        ++state->position;
        return feed;
    };
}

namespace {

void hash_feed(Hasher& hasher, const TensorMap& feed) {
    hasher.add_number(feed.size());
    for (const auto& [name, tensor] : feed) {
        hasher.add(name);
        hasher.add(dtype_name(tensor.dtype()));
        hasher.add_number(tensor.shape().size());
        for (int64_t dim : tensor.shape()) hasher.add_number(static_cast<uint64_t>(dim));
        if (tensor.dtype() == DataType::kString) {
            for (const std::string& text : tensor.strings()) hasher.add(text);
        } else {
            hasher.add(tensor.data(), tensor.nbytes());
        }
    }
}

}  // namespace

DataLoaderFn shard_data_loader(DataLoaderFn loader, std::size_t index, std::size_t count,
                               std::shared_ptr<DatasetTally> tally) {
    if (count == 0 || index >= count)
        throw UsageError(fmt::format("Shard {} of {} does not exist: a shard index goes from 0 to the shard count - 1",
                                     index, count));
    // What the loader has yielded so far, in order.
    struct State {
        std::size_t next = 0;  // the loader's next sample
        bool ended = false;
        Hasher hasher;
    };
    auto state = std::make_shared<State>();
    return [loader = std::move(loader), index, count, tally, state](
               std::size_t iteration, const TensorMetadata& metadata) -> std::optional<TensorMap> {
        const std::size_t wanted = index + iteration * count;
        if (wanted < state->next) return loader(wanted, metadata);  // a revisit: random access
        while (!state->ended) {
            const std::size_t sample = state->next;
            std::optional<TensorMap> feed = loader(sample, metadata);
            if (!feed) {
                state->ended = true;
                if (tally) {
                    Hasher hasher = state->hasher;
                    hasher.add_number(sample);
                    *tally = DatasetTally{true, sample, hasher.hex()};
                }
                break;
            }
            ++state->next;
            hash_feed(state->hasher, *feed);
            if (sample == wanted) return feed;
        }
        return std::nullopt;
    };
}

DataLoaderFn data_loader_from_list(InputList feeds) {
    return [feeds = std::move(feeds)](std::size_t iteration, const TensorMetadata&) -> std::optional<TensorMap> {
        if (iteration >= feeds.size()) return std::nullopt;
        return feeds[iteration];
    };
}

// ---- coerce_feed --------------------------------------------------------------------------------

namespace {

std::string meta_text(std::optional<DataType> dtype, const std::string& shape) {
    return "[dtype=" + (dtype ? std::string(dtype_name(*dtype)) : std::string("None")) + ", shape=" + shape + "]";
}

/// Numeric range of a dtype as numpy's iinfo/finfo reports it (none for bool, strings, complex, float64).
std::optional<std::pair<double, double>> dtype_range(DataType dtype) {
    if (dtype != DataType::kBool) {
        if (auto bounds = integer_bounds(dtype)) {
            return std::make_pair(static_cast<double>(bounds->min), static_cast<double>(bounds->max));
        }
    }
    switch (dtype) {
        case DataType::kFloat16:
            return std::make_pair(-65504.0, 65504.0);
        case DataType::kFloat32:
            return std::make_pair(-static_cast<double>(std::numeric_limits<float>::max()),
                                  static_cast<double>(std::numeric_limits<float>::max()));
        case DataType::kBFloat16:
            return std::make_pair(-3.3895313892515355e38, 3.3895313892515355e38);
        default:
            return std::nullopt;
    }
}

bool has_out_of_range_values(const Tensor& tensor, DataType target) {
    const auto range = dtype_range(target);
    if (!range || tensor.dtype() == DataType::kString || tensor.dtype() == DataType::kComplex64 ||
        tensor.dtype() == DataType::kComplex128) {
        return false;
    }
    for (int64_t i = 0; i < tensor.numel(); ++i) {
        const double value = tensor.value_as_double(i);
        if (value < range->first || value > range->second) return true;
    }
    return false;
}

/// Copy of `tensor` with its axes permuted: result axis i is input axis perm[i].
Tensor transpose(const Tensor& tensor, const std::vector<std::size_t>& perm) {
    const Shape& in_shape = tensor.shape();
    const std::size_t rank = in_shape.size();
    Shape out_shape(rank);
    for (std::size_t i = 0; i < rank; ++i) out_shape[i] = in_shape[perm[i]];
    Tensor result(tensor.dtype(), out_shape);

    std::vector<int64_t> in_strides(rank, 1);
    for (std::size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * in_shape[i];
    const bool strings = tensor.dtype() == DataType::kString;
    const std::size_t elem = strings ? 0 : dtype_size(tensor.dtype());
    const auto* src = static_cast<const uint8_t*>(tensor.data());
    auto* dst = static_cast<uint8_t*>(result.data());

    std::vector<int64_t> index(rank, 0);
    for (int64_t flat = 0; flat < result.numel(); ++flat) {
        int64_t source = 0;
        for (std::size_t i = 0; i < rank; ++i) source += index[i] * in_strides[perm[i]];
        if (strings) {
            result.strings()[static_cast<std::size_t>(flat)] = tensor.strings()[static_cast<std::size_t>(source)];
        } else {
            std::memcpy(dst + static_cast<std::size_t>(flat) * elem, src + static_cast<std::size_t>(source) * elem,
                        elem);
        }
        for (std::size_t i = rank; i-- > 0;) {
            if (++index[i] < out_shape[i]) break;
            index[i] = 0;
        }
    }
    return result;
}

bool all_static(const DynShape& shape) {
    return !is_shape_dynamic(shape);
}

// The steps of util.try_match_shape; `shape_text` formats the target shape the way the caller's
// Python counterpart prints it (a list for metadata shapes, a tuple for array shapes).
Tensor try_reshape(const Tensor& tensor, const DynShape& shape, const ShapeText& shape_text) {
    if (!all_static(shape)) {
        logger().warning("Could not reshape array from shape: " + shape_to_string(tensor.shape()) + " to " +
                         shape_text(shape) + ". Skipping reshape.");
        return tensor;
    }
    const Shape target = concrete_dims(shape);
    if (target == tensor.shape()) return tensor;
    int64_t volume = 1;
    for (int64_t dim : target) volume *= dim;
    if (volume != tensor.numel()) {
        logger().warning("Could not reshape array from shape: " + shape_to_string(tensor.shape()) + " to " +
                         shape_text(shape) + ". Skipping reshape.");
        return tensor;
    }
    logger().info("Reshaped array from shape: " + shape_to_string(tensor.shape()) + " to: " + shape_to_string(target));
    return tensor.reshaped(target);
}

Tensor try_permute(const Tensor& tensor, const DynShape& shape, const ShapeText& shape_text) {
    if (!all_static(shape)) return tensor;
    const Shape target = concrete_dims(shape);
    Shape sorted_have = tensor.shape();
    Shape sorted_want = target;
    std::sort(sorted_have.begin(), sorted_have.end());
    std::sort(sorted_want.begin(), sorted_want.end());
    if (sorted_have != sorted_want) {
        logger().extra_verbose("Array of shape: " + shape_to_string(tensor.shape()) +
                               " cannot be permuted to: " + shape_text(shape));
        return tensor;
    }
    if (target == tensor.shape()) return tensor;

    // For each wanted dim, the first unused input axis of that length.
    std::vector<bool> used(target.size(), false);
    std::vector<std::size_t> perm;
    for (int64_t dim : target) {
        for (std::size_t axis = 0; axis < tensor.shape().size(); ++axis) {
            if (!used[axis] && tensor.shape()[axis] == dim) {
                used[axis] = true;
                perm.push_back(axis);
                break;
            }
        }
    }
    Tensor result = transpose(tensor, perm);
    std::string perm_text = "[";
    for (std::size_t i = 0; i < perm.size(); ++i) perm_text += (i ? ", " : "") + std::to_string(perm[i]);
    logger().info("Permuted array of shape: " + shape_to_string(tensor.shape()) +
                  " to: " + shape_to_string(result.shape()) + " using permutation " + perm_text + "]");
    return result;
}

}  // namespace

Tensor try_match_shape(const Tensor& tensor, DynShape shape, const ShapeText& shape_text) {
    if (all_static(shape) && concrete_dims(shape) == tensor.shape()) return tensor;
    // Freeze dynamic dims from the array: one dynamic dim takes the remaining volume; several take
    // the array's dims when the ranks agree.
    std::size_t dynamic = 0;
    for (const Dim& dim : shape) dynamic += dim.is_dynamic();
    if (dynamic == 1) {
        int64_t static_volume = 1;
        for (const Dim& dim : shape) {
            if (!dim.is_dynamic()) static_volume *= dim.value;
        }
        const int64_t determined = static_volume == 0 ? 0 : tensor.numel() / static_volume;
        for (Dim& dim : shape) {
            if (dim.is_dynamic()) dim = Dim::fixed(determined);
        }
    } else if (dynamic > 1 && shape.size() == tensor.shape().size()) {
        for (std::size_t i = 0; i < shape.size(); ++i) {
            if (shape[i].is_dynamic()) shape[i] = Dim::fixed(tensor.shape()[i]);
        }
    }
    Tensor result = tensor;
    if (result.shape().size() != shape.size()) result = try_reshape(result, shape, shape_text);
    if (result.shape().size() == shape.size()) result = try_permute(result, shape, shape_text);
    return try_reshape(result, shape, shape_text);
}

TensorMap coerce_feed(const TensorMap& feed, const TensorMetadata& metadata) {
    const std::vector<std::string> names = feed.keys();
    TensorMap result;
    std::size_t index = 0;
    for (const auto& [name, entry] : metadata) {
        const auto found = find_str_in_list(name, names, index++);
        if (!found) {
            throw InputError("Input tensor: " + name + " | Does not exist in the provided data." +
                             "\nNote: Provided inputs are: " + python_list_repr(names));
        }
        if (*found != name) {
            logger().warning("Input tensor: " + name + " | Buffer name (" + *found +
                             ") does not match expected input name (" + name + ").");
        }
        Tensor buffer = feed.at(*found);
        const std::string wanted_shape = entry.shape ? dyn_shape_to_string(*entry.shape) : "None";
        // Structured bindings cannot be captured by clang before 16: capture plain references.
        const std::string& input_name = name;
        const auto& wanted_dtype = entry.dtype;
        auto mismatch = [&]() {
            return InputError("Input tensor: " + input_name +
                              " | Cannot reuse input data due to mismatch in shape or data type." +
                              "\nNote: Provided input: " + meta_text(buffer.dtype(), shape_to_string(buffer.shape())) +
                              ", Requested input: " + meta_text(wanted_dtype, wanted_shape));
        };

        if (entry.dtype && buffer.dtype() != *entry.dtype) {
            logger().warning("Input tensor: " + name + " | Buffer dtype (" + std::string(dtype_name(buffer.dtype())) +
                             ") does not match expected input dtype (" + std::string(dtype_name(*entry.dtype)) +
                             "), attempting to cast. ");
            if (has_out_of_range_values(buffer, *entry.dtype)) {
                logger().warning("Some values in this input are out of range of " +
                                 std::string(dtype_name(*entry.dtype)) + ". Unexpected behavior may ensue!");
            }
            try {
                buffer = buffer.cast(*entry.dtype);
            } catch (const PolygraphyException&) {
                throw mismatch();
            }
        }
        if (entry.shape && !shape_matches(buffer.shape(), *entry.shape)) {
            logger().warning("Input tensor: " + name + " | Buffer shape (" + shape_to_string(buffer.shape()) +
                             ") does not match expected input shape (" + wanted_shape +
                             "). Attempting to transpose/reshape. ");
            buffer = try_match_shape(buffer, *entry.shape, [](const DynShape& shape) { return py_list(shape); });
        }
        if ((entry.dtype && buffer.dtype() != *entry.dtype) ||
            (entry.shape && !shape_matches(buffer.shape(), *entry.shape))) {
            throw mismatch();
        }
        result.set(name, buffer);
    }
    return result;
}

}  // namespace polygraphy
