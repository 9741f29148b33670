#include "tools/args/util.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::tools::args_util {
namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Removes Python's digit-group underscores ("1_000"); nullopt when one is misplaced.
std::optional<std::string> strip_underscores(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '_') {
            out += text[i];
            continue;
        }
        const bool digit_before = i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]));
        const bool digit_after = i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
        if (!digit_before || !digit_after) return std::nullopt;
    }
    return out;
}

std::string strip_quotes(std::string_view text) {
    // Python's str.strip("\"'"): every leading and trailing quote character.
    while (!text.empty() && (text.front() == '"' || text.front() == '\'')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == '"' || text.back() == '\'')) text.remove_suffix(1);
    return std::string(text);
}

Literal scalar_literal(std::string_view text) {
    Literal literal;
    text = trim(text);
    literal.text = std::string(text);
    if (auto value = parse_int(text)) {
        literal.kind = Literal::Kind::kInt;
        literal.int_value = *value;
    } else if (auto number = parse_float(text)) {
        literal.kind = Literal::Kind::kFloat;
        literal.float_value = *number;
    } else {
        literal.kind = Literal::Kind::kString;
        literal.text = strip_quotes(text);
    }
    return literal;
}

std::string literal_repr(const Literal& literal) {
    switch (literal.kind) {
        case Literal::Kind::kString:
            return python_repr(literal.text);
        case Literal::Kind::kList: {
            std::string out = "[";
            for (std::size_t i = 0; i < literal.items.size(); ++i) {
                if (i) out += ", ";
                out += literal_repr(literal.items[i]);
            }
            return out + "]";
        }
        default:
            return literal.text;
    }
}

std::string format_number(double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%g", value);
    return buffer;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text) {
    text = trim(text);
    auto digits = strip_underscores(text);
    if (!digits || digits->empty()) return std::nullopt;
    std::size_t start = 0;
    if ((*digits)[0] == '+' || (*digits)[0] == '-') start = 1;
    if (start == digits->size()) return std::nullopt;
    for (std::size_t i = start; i < digits->size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>((*digits)[i]))) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(digits->c_str(), &end, 10);
    if (errno == ERANGE || end != digits->c_str() + digits->size()) return std::nullopt;
    return static_cast<int64_t>(value);
}

std::optional<double> parse_float(std::string_view text) {
    text = trim(text);
    auto cleaned = strip_underscores(text);
    if (!cleaned || cleaned->empty()) return std::nullopt;
    std::string body = *cleaned;
    double sign = 1.0;
    std::string unsigned_body = body;
    if (body[0] == '+' || body[0] == '-') {
        sign = body[0] == '-' ? -1.0 : 1.0;
        unsigned_body = body.substr(1);
    }
    const std::string word = lower(unsigned_body);
    if (word == "inf" || word == "infinity") return sign * std::numeric_limits<double>::infinity();
    if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
    // Only what Python's float() accepts: digits, one '.', an exponent. No hex, no "in", no "0x".
    bool seen_digit = false, seen_dot = false, seen_exp = false;
    for (std::size_t i = 0; i < unsigned_body.size(); ++i) {
        const char c = unsigned_body[i];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            seen_digit = true;
        } else if (c == '.' && !seen_dot && !seen_exp) {
            seen_dot = true;
        } else if ((c == 'e' || c == 'E') && seen_digit && !seen_exp) {
            seen_exp = true;
            if (i + 1 < unsigned_body.size() && (unsigned_body[i + 1] == '+' || unsigned_body[i + 1] == '-')) ++i;
            if (i + 1 >= unsigned_body.size()) return std::nullopt;
        } else {
            return std::nullopt;
        }
    }
    if (!seen_digit) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const double value = std::strtod(body.c_str(), &end);
    if (end != body.c_str() + body.size()) return std::nullopt;
    return value;  // overflow gives +-inf, as Python does
}

std::optional<double> parse_number_option(const std::optional<std::string>& text, const std::string& flag,
                                          bool non_negative) {
    if (!text) return std::nullopt;
    const auto value = parse_float(*text);
    if (!value || std::isnan(*value) || (non_negative && !(*value >= 0)))
        throw UsageError(flag + ": expected a number" + (non_negative ? " of 0 or more" : "") + ", got " +
                         python_repr(*text));
    return value;
}

void check_destination(const std::optional<std::string>& path, const std::string& flag) {
    if (!path) return;
    std::error_code error;
    if (std::filesystem::is_directory(*path, error))
        throw UsageError(flag + ": " + *path + " is a folder; give a file path");
    try {
        AtomicFile probe(*path);  // removed again: never committed
    } catch (const PolygraphyException& failure) {
        throw UsageError(flag + ": " + failure.what());
    }
}

KeyValue split_key_value(std::string_view arg) {
    const auto colon = arg.rfind(':');
    if (colon == std::string_view::npos) return KeyValue{"", std::string(arg)};
    return KeyValue{std::string(arg.substr(0, colon)), std::string(arg.substr(colon + 1))};
}

Literal parse_literal(const std::string& flag, std::string_view text) {
    const std::string_view stripped = trim(text);
    const bool opens = !stripped.empty() && stripped.front() == '[';
    const bool closes = !stripped.empty() && stripped.back() == ']';
    if (!opens && !closes) {
        if (stripped.find_first_of("[]") != std::string_view::npos)
            throw UsageError("Invalid value in " + flag + ": " + python_repr(text) + ". Unbalanced brackets");
        return scalar_literal(stripped);
    }
    if (!opens || !closes || stripped.size() < 2)
        throw UsageError("Invalid value in " + flag + ": " + python_repr(text) +
                         ". Lists must be written as [item,item,...]");
    const std::string_view inner = stripped.substr(1, stripped.size() - 2);
    if (inner.find_first_of("[]") != std::string_view::npos)
        throw UsageError("Invalid value in " + flag + ": " + python_repr(text) + ". Nested lists are not allowed");
    Literal list;
    list.kind = Literal::Kind::kList;
    list.text = std::string(stripped);
    if (trim(inner).empty()) return list;
    std::size_t start = 0;
    while (true) {
        const auto comma = inner.find(',', start);
        const std::string_view item =
            trim(inner.substr(start, comma == std::string_view::npos ? inner.npos : comma - start));
        if (item.empty())
            throw UsageError("Invalid value in " + flag + ": " + python_repr(text) + ". The list has an empty item");
        list.items.push_back(scalar_literal(item));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return list;
}

OrderedMap<double> parse_per_key_numbers(const std::string& flag, const std::vector<std::string>& args,
                                         std::optional<double> min_value, std::optional<double> max_value) {
    OrderedMap<double> result;
    for (const auto& arg : args) {
        const KeyValue kv = split_key_value(arg);
        const auto value = parse_float(kv.value);
        if (!value || std::isnan(*value))
            throw UsageError("Invalid value in " + flag + ": " + python_repr(arg) +
                             ". Expected [<name>:]<number>, but " + python_repr(kv.value) + " is not a number");
        if ((min_value && *value < *min_value) || (max_value && *value > *max_value)) {
            std::string range;
            if (min_value && max_value)
                range = "between " + format_number(*min_value) + " and " + format_number(*max_value);
            else if (min_value)
                range = "at least " + format_number(*min_value);
            else
                range = "at most " + format_number(*max_value);
            throw UsageError("Invalid value in " + flag + ": " + python_repr(arg) + ". The value must be " + range);
        }
        result.set(kv.key, *value);
    }
    return result;
}

OrderedMap<int64_t> parse_per_key_ints(const std::string& flag, const std::vector<std::string>& args,
                                       int64_t min_value) {
    OrderedMap<int64_t> result;
    for (const auto& arg : args) {
        const KeyValue kv = split_key_value(arg);
        const auto value = parse_int(kv.value);
        if (!value)
            throw UsageError("Invalid value in " + flag + ": " + python_repr(arg) +
                             ". Expected [<name>:]<integer>, but " + python_repr(kv.value) + " is not an integer");
        if (*value < min_value)
            throw UsageError("Invalid value in " + flag + ": " + python_repr(arg) + ". The value must be at least " +
                             std::to_string(min_value));
        result.set(kv.key, *value);
    }
    return result;
}

OrderedMap<std::string> parse_per_key_strings(const std::string& /*flag*/, const std::vector<std::string>& args) {
    OrderedMap<std::string> result;
    for (const auto& arg : args) {
        KeyValue kv = split_key_value(arg);
        result.set(kv.key, kv.value);
    }
    return result;
}

DynShape parse_shape(const std::string& flag, std::string_view text) {
    const Literal literal = parse_literal(flag, text);
    if (literal.kind != Literal::Kind::kList)
        throw UsageError("Invalid shape in " + flag + ": " + python_repr(text) +
                         ". Expected a list of dimensions such as [1,3,224,224]");
    DynShape shape;
    for (const auto& item : literal.items) {
        switch (item.kind) {
            case Literal::Kind::kInt:
                if (item.int_value == -1) {
                    shape.push_back(Dim::unknown());
                } else if (item.int_value < 0) {
                    throw UsageError("Invalid shape in " + flag + ": " + python_repr(text) + ". Dimension " +
                                     std::to_string(item.int_value) + " is negative (use -1 for a dynamic dimension)");
                } else {
                    shape.push_back(Dim::fixed(item.int_value));
                }
                break;
            case Literal::Kind::kString:
                if (item.text.empty())
                    throw UsageError("Invalid shape in " + flag + ": " + python_repr(text) + ". A dimension is empty");
                shape.push_back(Dim::named(item.text));
                break;
            default:
                throw UsageError("Invalid shape in " + flag + ": " + python_repr(text) + ". Dimension " + item.text +
                                 " is not an integer");
        }
    }
    return shape;
}

TensorMetadata parse_input_shapes(const std::string& flag, const std::vector<std::string>& args) {
    TensorMetadata metadata;
    for (const auto& arg : args) {
        const KeyValue kv = split_key_value(arg);
        if (kv.key.empty())
            throw UsageError("Invalid value in " + flag + ": " + python_repr(arg) +
                             ". Expected <name>:<shape>, for example: " + flag + " input0:[1,3,224,224]");
        if (metadata.contains(kv.key))
            throw UsageError("Invalid value in " + flag + ": input " + python_repr(kv.key) +
                             " is given more than once");
        const std::string value(trim(kv.value));
        if (lower(value) == "auto") {
            metadata.add(kv.key, std::nullopt, std::nullopt);
            continue;
        }
        metadata.add(kv.key, std::nullopt, parse_shape(flag, value));
    }
    return metadata;
}

OrderedMap<ValRange> parse_val_ranges(const std::string& flag, const std::vector<std::string>& args) {
    OrderedMap<ValRange> ranges;
    for (const auto& arg : args) {
        const KeyValue kv = split_key_value(arg);
        const std::string who = kv.key.empty() ? "the default range" : "input: " + kv.key;
        const Literal literal = parse_literal(flag, kv.value);
        if (literal.kind != Literal::Kind::kList)
            throw UsageError("In " + flag + ", for " + who +
                             ", expected a range of the form [min,max], but received: " + python_repr(kv.value));
        if (literal.items.size() != 2)
            throw UsageError("In " + flag + ", for " + who + ", expected to receive exactly 2 values, but received " +
                             std::to_string(literal.items.size()) + ".\nNote: Option was parsed as: " + who +
                             ", range: " + literal_repr(literal));
        for (const auto& item : literal.items)
            if (!item.is_number() || std::isnan(item.as_double()))
                throw UsageError("In " + flag + ", for " + who +
                                 ", one or more elements of the range could not be parsed as a number.\n"
                                 "Note: Option was parsed as: " +
                                 who + ", range: " + literal_repr(literal));
        const ValRange range{literal.items[0].as_double(), literal.items[1].as_double()};
        if (range.min > range.max)
            throw UsageError("In " + flag + ", for " + who + ", the minimum (" + literal.items[0].text +
                             ") is greater than the maximum (" + literal.items[1].text + ")");
        ranges.set(kv.key, range);
    }
    return ranges;
}

int64_t parse_num_bytes(const std::string& flag, std::string_view text) {
    std::string upper(trim(text));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    double multiplier = 1.0;
    if (!upper.empty()) {
        const char suffix = upper.back();
        if (suffix == 'K' || suffix == 'M' || suffix == 'G') {
            multiplier = suffix == 'K' ? 1024.0 : suffix == 'M' ? 1024.0 * 1024.0 : 1024.0 * 1024.0 * 1024.0;
            upper.pop_back();
        }
    }
    const auto number = parse_float(upper);
    const double bytes = number ? *number * multiplier : 0.0;
    if (!number || !std::isfinite(bytes) || bytes < 0 || bytes >= 9.2e18)
        throw UsageError("Could not convert " + python_repr(text) + " in " + flag +
                         " to a number of bytes. Please use either an integer (e.g. 16000000), scientific notation "
                         "(e.g. 16e6), or a number with a valid suffix: K, M, or G (e.g. 16M)");
    return static_cast<int64_t>(bytes);
}

std::size_t parse_memory_budget(const std::string& flag, std::string_view text) {
    const int64_t bytes = parse_num_bytes(flag, text);
    if (bytes == 0) throw UsageError(flag + " must be more than 0 bytes\nNote: given: " + std::string(text));
    return static_cast<std::size_t>(bytes);
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
    const auto match = closest_match(name, candidates);
    return match ? " Did you mean " + python_repr(*match) + "?" : std::string();
}

DatasetShard parse_shard(const std::string& text) {
    auto count_of = [](const std::optional<int64_t>& value) { return value && *value >= 1; };
    std::optional<int64_t> index, count;
    std::string source = "--shard " + text;
    if (text == "auto") {
        auto variable = [](const char* name) -> std::optional<std::string> {
            const char* value = std::getenv(name);
            return value && *value ? std::optional<std::string>(value) : std::nullopt;
        };
        if (const auto task = variable("SLURM_ARRAY_TASK_ID")) {
            index = parse_int(*task);
            count = variable("SLURM_ARRAY_TASK_COUNT") ? parse_int(*variable("SLURM_ARRAY_TASK_COUNT")) : std::nullopt;
            if (const auto first = variable("SLURM_ARRAY_TASK_MIN"); first && index && parse_int(*first))
                *index -= *parse_int(*first);
            source = fmt::format("--shard auto (Slurm: SLURM_ARRAY_TASK_ID={}, SLURM_ARRAY_TASK_COUNT={})", *task,
                                 variable("SLURM_ARRAY_TASK_COUNT").value_or("unset"));
        } else if (const auto completion = variable("JOB_COMPLETION_INDEX")) {
            index = parse_int(*completion);
            count = variable("JOB_COMPLETIONS") ? parse_int(*variable("JOB_COMPLETIONS")) : std::nullopt;
            source = fmt::format("--shard auto (Kubernetes: JOB_COMPLETION_INDEX={}, JOB_COMPLETIONS={})", *completion,
                                 variable("JOB_COMPLETIONS").value_or("unset"));
        } else {
            throw UsageError(
                "--shard auto: this is neither a Slurm job array task (SLURM_ARRAY_TASK_ID) nor a Kubernetes "
                "Indexed Job pod (JOB_COMPLETION_INDEX); give the shard as --shard INDEX/COUNT");
        }
    } else {
        const auto slash = text.find('/');
        if (slash != std::string::npos) {
            index = parse_int(text.substr(0, slash));
            count = parse_int(text.substr(slash + 1));
        }
        if (!index || !count)
            throw UsageError("Invalid value for --shard: " + python_repr(text) +
                             ". Expected INDEX/COUNT (e.g. 0/4, shards numbered from 0) or auto");
    }
    if (!index || !count_of(count))
        throw UsageError(source + ": expected a shard index and a shard count of at least 1");
    if (*index < 0 || *index >= *count)
        throw UsageError(fmt::format("{}: shard {} of {} is out of range (shards are numbered from 0 to {})", source,
                                     *index, *count, *count - 1));
    return DatasetShard{static_cast<std::size_t>(*index), static_cast<std::size_t>(*count)};
}

}  // namespace polygraphy::tools::args_util
