// String and text operators: StringNormalizer, StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer.
//
// StringNormalizer changes case with its own UTF-8 case table instead of the C library's locale
// (which would need en_US.UTF-8 installed): ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
// letters map one-to-one; other code points are kept as they are. RegexFullMatch uses std::regex
// (ECMAScript grammar), which covers the RE2 subset the ONNX tests use (classes, groups,
// alternation, anchors, bounded repetition).
#include <map>
#include <regex>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

const Tensor& string_input(const KernelContext& context, std::size_t index) {
    const Tensor& tensor = context.required_input(index);
    if (tensor.dtype() != DataType::kString)
        context.node().fail(
            fmt::format("input {} must be a string tensor, but it is {}", index, dtype_name(tensor.dtype())));
    return tensor;
}

// ---- UTF-8 case mapping ------------------------------------------------------------------------------

// Decodes the code point at `text[i]` into `code` and advances `i`; returns false (advancing one
// byte) on bytes that do not start a valid sequence, which callers copy unchanged.
bool decode_utf8(const std::string& text, std::size_t& i, char32_t& code) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const int extra = byte >= 0xF0 && byte < 0xF8   ? 3
                      : byte >= 0xE0 && byte < 0xF0 ? 2
                      : byte >= 0xC0 && byte < 0xE0 ? 1
                                                    : 0;
    if (byte < 0x80) {
        code = byte;
        ++i;
        return true;
    }
    if (extra == 0 || i + static_cast<std::size_t>(extra) >= text.size()) {
        ++i;
        return false;
    }
    code = byte & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80) {
            ++i;
            return false;
        }
        code = (code << 6) | (next & 0x3F);
    }
    i += static_cast<std::size_t>(extra) + 1;
    return true;
}

void encode_utf8(char32_t code, std::string& out) {
    if (code < 0x80) {
        out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (code >> 6)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (code >> 12)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (code >> 18)));
        out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
}

// Latin Extended-A alternates upper (even or odd) and lower case in these ranges.
bool extended_a_pair(char32_t code, bool& upper_is_even) {
    if ((code >= 0x100 && code <= 0x12F) || (code >= 0x132 && code <= 0x137) || (code >= 0x14A && code <= 0x177)) {
        upper_is_even = true;
        return true;
    }
    if ((code >= 0x139 && code <= 0x148) || (code >= 0x179 && code <= 0x17E)) {
        upper_is_even = false;
        return true;
    }
    return false;
}

char32_t to_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c == 0x178) return 0xFF;
    bool upper_is_even = false;
    if (extended_a_pair(c, upper_is_even)) return (c % 2 == 0) == upper_is_even ? c + 1 : c;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

char32_t to_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    bool upper_is_even = false;
    if (extended_a_pair(c, upper_is_even)) return (c % 2 == 0) == upper_is_even ? c : c - 1;
    if (c == 0x3C2) return 0x3A3;  // final sigma
    if (c >= 0x3B1 && c <= 0x3C9) return c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    return c;
}

enum class CaseChange { kNone, kLower, kUpper };

std::string change_case(const std::string& text, CaseChange change) {
    if (change == CaseChange::kNone) return text;
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t at = i;
        char32_t code = 0;
        if (decode_utf8(text, i, code))
            encode_utf8(change == CaseChange::kLower ? to_lower(code) : to_upper(code), out);
        else
            out.push_back(text[at]);
    }
    return out;
}

// ---- StringNormalizer --------------------------------------------------------------------------------

class StringNormalizerKernel final : public Kernel {
public:
    explicit StringNormalizerKernel(const NodeInfo& node) {
        const std::string action = node.attr_string("case_change_action", "NONE");
        if (action == "NONE")
            change_ = CaseChange::kNone;
        else if (action == "LOWER")
            change_ = CaseChange::kLower;
        else if (action == "UPPER")
            change_ = CaseChange::kUpper;
        else
            node.fail(
                fmt::format("attribute 'case_change_action' must be LOWER, UPPER or NONE, but it is '{}'", action));
        const int64_t sensitive = node.attr_int("is_case_sensitive", 0);
        if (sensitive != 0 && sensitive != 1)
            node.fail(fmt::format("attribute 'is_case_sensitive' must be 0 or 1, but it is {}", sensitive));
        case_sensitive_ = sensitive == 1;
        if (node.has_attr("stopwords")) {
            const onnx::AttributeProto* attribute = node.attr("stopwords");
            for (const auto& word : attribute->strings())
                stopwords_.insert(case_sensitive_ ? word : change_case(word, CaseChange::kLower));
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = string_input(context, 0);
        if (x.rank() != 1 && !(x.rank() == 2 && x.shape()[0] == 1))
            node.fail(
                fmt::format("input must have shape [C] or [1, C], but it has shape {}", shape_to_string(x.shape())));
        std::vector<std::string> kept;
        for (const std::string& text : x.strings()) {
            const std::string key = case_sensitive_ ? text : change_case(text, CaseChange::kLower);
            if (stopwords_.contains(key)) continue;
            kept.push_back(change_case(text, change_));
        }
        if (kept.empty()) kept.emplace_back();  // all removed: a single empty string
        const auto count = static_cast<int64_t>(kept.size());
        Tensor& y = context.allocate_output(0, DataType::kString, x.rank() == 1 ? Shape{count} : Shape{1, count});
        y.strings() = std::move(kept);
    }

private:
    CaseChange change_ = CaseChange::kNone;
    bool case_sensitive_ = false;
    std::unordered_set<std::string> stopwords_;
};

// ---- StringConcat ------------------------------------------------------------------------------------

class StringConcatKernel final : public Kernel {
public:
    explicit StringConcatKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const Tensor& a = string_input(context, 0);
        const Tensor& b = string_input(context, 1);
        const Shape out = broadcast_shapes(context.node(), {a.shape(), b.shape()});
        Tensor& y = context.allocate_output(0, DataType::kString, out);
        const std::vector<int64_t> sa = broadcast_strides(a.shape(), out);
        const std::vector<int64_t> sb = broadcast_strides(b.shape(), out);
        std::vector<int64_t> index(out.size(), 0);
        for (int64_t flat = 0; flat < y.numel(); ++flat) {
            int64_t ia = 0, ib = 0;
            for (std::size_t d = 0; d < out.size(); ++d) {
                ia += index[d] * sa[d];
                ib += index[d] * sb[d];
            }
            y.strings()[flat] = a.strings()[ia] + b.strings()[ib];
            for (std::size_t d = out.size(); d-- > 0;) {
                if (++index[d] < out[d]) break;
                index[d] = 0;
            }
        }
    }
};

// ---- StringSplit -------------------------------------------------------------------------------------

class StringSplitKernel final : public Kernel {
public:
    explicit StringSplitKernel(const NodeInfo& node)
        : delimiter_(node.attr_string("delimiter", "")), maxsplit_(node.attr_int("maxsplit", -1)) {
        if (node.has_attr("maxsplit") && maxsplit_ < 0)
            node.fail(fmt::format("attribute 'maxsplit' must not be negative, but it is {}", maxsplit_));
    }

    void compute(KernelContext& context) const override {
        const Tensor& x = string_input(context, 0);
        std::vector<std::vector<std::string>> parts(static_cast<std::size_t>(x.numel()));
        std::size_t widest = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
            parts[i] = delimiter_.empty() ? split_whitespace(x.strings()[i]) : split_on(x.strings()[i]);
            widest = std::max(widest, parts[i].size());
        }
        Shape shape = x.shape();
        shape.push_back(static_cast<int64_t>(widest));
        Tensor& y = context.allocate_output(0, DataType::kString, shape);
        Tensor& lengths = context.allocate_output(1, DataType::kInt64, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
            lengths.data_as<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
            for (std::size_t k = 0; k < parts[i].size(); ++k) y.strings()[i * widest + k] = std::move(parts[i][k]);
        }
    }

private:
    bool may_split(std::size_t done) const { return maxsplit_ < 0 || static_cast<int64_t>(done) < maxsplit_; }

    // Python's str.split(delimiter, maxsplit): empty fields between consecutive delimiters are kept.
    std::vector<std::string> split_on(const std::string& text) const {
        std::vector<std::string> result;
        std::size_t start = 0;
        while (may_split(result.size())) {
            const std::size_t found = text.find(delimiter_, start);
            if (found == std::string::npos) break;
            result.push_back(text.substr(start, found - start));
            start = found + delimiter_.size();
        }
        result.push_back(text.substr(start));
        return result;
    }

    // Python's str.split(None, maxsplit): runs of whitespace separate, no empty fields.
    std::vector<std::string> split_whitespace(const std::string& text) const {
        auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
        std::vector<std::string> result;
        std::size_t i = 0;
        while (true) {
            while (i < text.size() && space(text[i])) ++i;
            if (i >= text.size()) break;
            if (!may_split(result.size())) {
                result.push_back(text.substr(i));  // like Python, the remainder keeps trailing spaces
                break;
            }
            std::size_t end = i;
            while (end < text.size() && !space(text[end])) ++end;
            result.push_back(text.substr(i, end - i));
            i = end;
        }
        return result;
    }

    std::string delimiter_;
    int64_t maxsplit_;
};

// ---- RegexFullMatch ----------------------------------------------------------------------------------

class RegexFullMatchKernel final : public Kernel {
public:
    explicit RegexFullMatchKernel(const NodeInfo& node) {
        if (!node.has_attr("pattern")) node.fail("attribute 'pattern' is required");
        const std::string pattern = node.attr_string("pattern", "");
        try {
            regex_ = std::regex(pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& error) {
            node.fail(
                fmt::format("attribute 'pattern' is not a valid regular expression: '{}' ({})", pattern, error.what()));
        }
    }
    void compute(KernelContext& context) const override {
        const Tensor& x = string_input(context, 0);
        Tensor& y = context.allocate_output(0, DataType::kBool, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) y.data_as<bool>()[i] = std::regex_match(x.strings()[i], regex_);
    }

private:
    std::regex regex_;
};

// ---- TfIdfVectorizer ---------------------------------------------------------------------------------

// N-grams of the pool as a trie keyed by item (ints are keyed by their decimal text); a node's id
// is the 1-based position of the n-gram ending there (0: none).
struct NgramTrie {
    std::map<std::string, NgramTrie> children;
    int64_t id = 0;
};

class TfIdfVectorizerKernel final : public Kernel {
public:
    explicit TfIdfVectorizerKernel(const NodeInfo& node)
        : min_gram_(node.attr_int("min_gram_length", 0)),
          max_gram_(node.attr_int("max_gram_length", 0)),
          max_skip_(node.attr_int("max_skip_count", 0)),
          ngram_counts_(node.attr_ints("ngram_counts")),
          ngram_indexes_(node.attr_ints("ngram_indexes")),
          weights_(node.attr_floats("weights")) {
        const std::string mode = node.attr_string("mode", "");
        if (mode == "TF")
            mode_ = 0;
        else if (mode == "IDF")
            mode_ = 1;
        else if (mode == "TFIDF")
            mode_ = 2;
        else
            node.fail(fmt::format("attribute 'mode' must be TF, IDF or TFIDF, but it is '{}'", mode));
        if (min_gram_ < 1 || max_gram_ < min_gram_)
            node.fail(
                fmt::format("attributes 'min_gram_length' {} and 'max_gram_length' {} must satisfy 1 <= min <= max",
                            min_gram_, max_gram_));
        if (max_skip_ < 0)
            node.fail(fmt::format("attribute 'max_skip_count' must not be negative, but it is {}", max_skip_));
        std::vector<std::string> pool;
        if (const onnx::AttributeProto* strings = node.attr("pool_strings")) {
            pool.assign(strings->strings().begin(), strings->strings().end());
            string_pool_ = true;
        } else {
            for (int64_t value : node.attr_ints("pool_int64s")) pool.push_back(std::to_string(value));
        }
        if (pool.empty()) node.fail("attribute 'pool_strings' or 'pool_int64s' is required");
        int64_t id = 0;
        for (std::size_t group = 0; group < ngram_counts_.size(); ++group) {
            const int64_t n = static_cast<int64_t>(group) + 1;
            const int64_t begin = ngram_counts_[group];
            const int64_t end =
                group + 1 < ngram_counts_.size() ? ngram_counts_[group + 1] : static_cast<int64_t>(pool.size());
            if (begin < 0 || end > static_cast<int64_t>(pool.size()) || begin > end || (end - begin) % n != 0)
                node.fail(
                    fmt::format("attribute 'ngram_counts' does not split the pool of {} items into {}-grams "
                                "(group {} spans [{}, {}))",
                                pool.size(), n, group, begin, end));
            for (int64_t start = begin; start < end; start += n) {
                NgramTrie* trie = &root_;
                for (int64_t k = 0; k < n; ++k) trie = &trie->children[pool[start + k]];
                trie->id = ++id;
            }
        }
        if (static_cast<int64_t>(ngram_indexes_.size()) != id)
            node.fail(fmt::format("attribute 'ngram_indexes' must have one entry per n-gram ({}), but it has {}", id,
                                  ngram_indexes_.size()));
        for (int64_t index : ngram_indexes_) {
            if (index < 0)
                node.fail(fmt::format("attribute 'ngram_indexes' values must not be negative, but one is {}", index));
            output_size_ = std::max(output_size_, index + 1);
        }
        if (!weights_.empty() && weights_.size() != ngram_indexes_.size())
            node.fail(fmt::format("attribute 'weights' must have {} values, but it has {}", ngram_indexes_.size(),
                                  weights_.size()));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const bool strings = x.dtype() == DataType::kString;
        if (strings != string_pool_ || (!strings && x.dtype() != DataType::kInt32 && x.dtype() != DataType::kInt64))
            node.fail(fmt::format("input of data type {} does not match the {} pool", dtype_name(x.dtype()),
                                  string_pool_ ? "string" : "int64"));
        if (x.rank() != 1 && x.rank() != 2)
            node.fail(fmt::format("input must have rank 1 or 2, but it has shape {}", shape_to_string(x.shape())));
        const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
        const int64_t length = x.shape().back();
        std::vector<std::string> items(static_cast<std::size_t>(x.numel()));
        for (int64_t i = 0; i < x.numel(); ++i)
            items[i] = strings ? x.strings()[i] : std::to_string(static_cast<int64_t>(x.value_as_double(i)));
        Tensor y(DataType::kFloat32, x.rank() == 2 ? Shape{rows, output_size_} : Shape{output_size_});
        std::vector<double> counts(static_cast<std::size_t>(output_size_ * rows), 0.0);
        for (int64_t row = 0; row < rows; ++row) {
            const std::string* data = items.data() + row * length;
            double* frequencies = counts.data() + row * output_size_;
            int64_t start_size = min_gram_;
            for (int64_t skip = 1; skip <= max_skip_ + 1; ++skip) {
                for (int64_t start = 0; start < length; ++start) {
                    if (start + skip * (start_size - 1) >= length) break;
                    const NgramTrie* trie = &root_;
                    int64_t size = 1;
                    for (int64_t item = start; item < length && size <= max_gram_; item += skip, ++size) {
                        auto found = trie->children.find(data[item]);
                        if (found == trie->children.end()) break;
                        trie = &found->second;
                        if (size >= start_size && trie->id != 0) frequencies[ngram_indexes_[trie->id - 1]] += 1;
                    }
                }
                // Unigrams do not depend on the skip distance: count them once.
                if (start_size == 1) {
                    ++start_size;
                    if (start_size > max_gram_) break;
                }
            }
        }
        // Weight per output index (ngram_indexes maps n-gram ids to output positions).
        std::vector<double> weight(static_cast<std::size_t>(output_size_), 1.0);
        for (std::size_t k = 0; k < weights_.size(); ++k) weight[ngram_indexes_[k]] = weights_[k];
        float* out = y.data_as<float>();
        for (int64_t i = 0; i < rows * output_size_; ++i) {
            const double count = counts[i], w = weight[i % output_size_];
            out[i] = static_cast<float>(mode_ == 0 ? count : mode_ == 1 ? (count > 0 ? w : 0.0) : count * w);
        }
        context.set_output(0, y);
    }

private:
    int64_t min_gram_, max_gram_, max_skip_;
    std::vector<int64_t> ngram_counts_, ngram_indexes_;
    std::vector<float> weights_;
    int mode_ = 0;
    bool string_pool_ = false;
    NgramTrie root_;
    int64_t output_size_ = 0;
};

}  // namespace

void register_string_ops(OpRegistry& registry) {
    registry.add("", "StringNormalizer", 10, kMaxOpset, make_factory<StringNormalizerKernel>());
    registry.add("", "StringConcat", 20, kMaxOpset, make_factory<StringConcatKernel>());
    registry.add("", "StringSplit", 20, kMaxOpset, make_factory<StringSplitKernel>());
    registry.add("", "RegexFullMatch", 20, kMaxOpset, make_factory<RegexFullMatchKernel>());
    registry.add("", "TfIdfVectorizer", 9, kMaxOpset, make_factory<TfIdfVectorizerKernel>());
}

}  // namespace polygraphy::ref
