// Linear algebra beyond MatMul/Gemm: Einsum (any equation: implicit or explicit output, ellipsis,
// repeated letters for diagonals; a direct loop over the index space, computed in double or
// int64) and Det (LU with partial pivoting, in double).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// ---- Einsum ------------------------------------------------------------------------------------------

struct EinsumTerm {
    std::string letters;  // may hold one '.' standing for the ellipsis
};

class EinsumKernel final : public Kernel {
public:
    explicit EinsumKernel(const NodeInfo& node) {
        std::string equation;
        for (char c : node.attr_string("equation", "")) {
            if (c != ' ') equation += c;
        }
        if (equation.empty()) node.fail("attribute 'equation' is required");
        const auto arrow = equation.find("->");
        const std::string lhs = equation.substr(0, arrow);
        explicit_output_ = arrow != std::string::npos;
        if (explicit_output_) output_ = parse_term(node, equation.substr(arrow + 2));
        std::size_t start = 0;
        while (true) {
            const auto comma = lhs.find(',', start);
            inputs_.push_back(
                parse_term(node, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        if (!explicit_output_) {
            // Implicit output: the ellipsis, then letters used exactly once, alphabetically.
            std::map<char, int> uses;
            bool ellipsis = false;
            for (const auto& term : inputs_)
                for (char c : term.letters) {
                    if (c == '.')
                        ellipsis = true;
                    else
                        ++uses[c];
                }
            if (ellipsis) output_.letters += '.';
            for (const auto& [c, count] : uses)
                if (count == 1) output_.letters += c;
        }
        if (static_cast<int>(inputs_.size()) != node.proto().input_size())
            node.fail(fmt::format("equation '{}' has {} operands, but the node has {} inputs", equation, inputs_.size(),
                                  node.proto().input_size()));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        std::vector<Tensor> operands;
        DataType dtype = DataType::kUndefined;
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const Tensor& t = context.required_input(i);
            if (dtype == DataType::kUndefined) dtype = t.dtype();
            if (t.dtype() != dtype)
                node.fail(fmt::format("inputs must share one data type, but they are {} and {}", dtype_name(dtype),
                                      dtype_name(t.dtype())));
            operands.push_back(t);
        }
        if (dtype == DataType::kString || dtype == DataType::kBool) unsupported_dtype(node, dtype);
        // Expand the ellipsis into upper-case placeholder letters (right-aligned, broadcast).
        int64_t ellipsis_rank = 0;
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const auto named = static_cast<int64_t>(inputs_[i].letters.size()) - (has_ellipsis(inputs_[i]) ? 1 : 0);
            if (has_ellipsis(inputs_[i])) {
                if (operands[i].rank() < named)
                    node.fail(fmt::format("operand {} of shape {} has fewer dims than the equation names", i,
                                          shape_to_string(operands[i].shape())));
                ellipsis_rank = std::max(ellipsis_rank, operands[i].rank() - named);
            } else if (operands[i].rank() != named) {
                node.fail(fmt::format("operand {} has rank {}, but the equation gives it {} letters", i,
                                      operands[i].rank(), named));
            }
        }
        std::map<char, int64_t> sizes;
        std::vector<std::string> terms;
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const std::string letters =
                expand(inputs_[i], operands[i].rank() - static_cast<int64_t>(inputs_[i].letters.size()) + 1);
            terms.push_back(letters);
            for (std::size_t d = 0; d < letters.size(); ++d) {
                const int64_t dim = operands[i].shape()[d];
                auto [found, inserted] = sizes.emplace(letters[d], dim);
                if (!inserted && found->second != dim) {
                    if (found->second == 1 && is_placeholder(letters[d]))
                        found->second = dim;
                    else if (!(dim == 1 && is_placeholder(letters[d])))
                        node.fail(fmt::format("letter '{}' stands for dims {} and {}", letters[d], found->second, dim));
                }
            }
        }
        const std::string out_letters = expand(output_, ellipsis_rank);
        for (char c : out_letters)
            if (!sizes.contains(c)) node.fail(fmt::format("output letter '{}' appears in no operand", c));
        std::string all = out_letters;
        for (const auto& [c, size] : sizes)
            if (all.find(c) == std::string::npos) all += c;
        std::vector<int64_t> extent;
        for (char c : all) extent.push_back(sizes[c]);
        // Strides of each operand per loop letter (0 for letters it lacks or broadcast dims of 1).
        std::vector<std::vector<int64_t>> strides(operands.size(), std::vector<int64_t>(all.size(), 0));
        for (std::size_t i = 0; i < operands.size(); ++i) {
            int64_t stride = 1;
            for (std::size_t d = terms[i].size(); d-- > 0;) {
                const auto position = all.find(terms[i][d]);
                if (operands[i].shape()[d] != 1) strides[i][position] += stride;
                stride *= operands[i].shape()[d];
            }
        }
        Shape out_shape;
        for (char c : out_letters) out_shape.push_back(sizes[c]);
        const bool floating = dtype_is_floating(dtype);
        std::vector<Tensor> wide;
        for (const Tensor& t : operands) wide.push_back(t.cast(floating ? DataType::kFloat64 : DataType::kInt64));
        Tensor y(floating ? DataType::kFloat64 : DataType::kInt64, out_shape);
        int64_t total = 1;
        for (int64_t e : extent) total *= e;
        std::vector<int64_t> index(all.size(), 0), offsets(operands.size(), 0);
        const std::size_t out_rank = out_letters.size();
        for (int64_t step = 0; step < total; ++step) {
            int64_t out_offset = 0;
            for (std::size_t d = 0; d < out_rank; ++d) out_offset = out_offset * extent[d] + index[d];
            if (floating) {
                double product = 1;
                for (std::size_t i = 0; i < wide.size(); ++i) product *= wide[i].data_as<double>()[offsets[i]];
                y.data_as<double>()[out_offset] += product;
            } else {
                int64_t product = 1;
                for (std::size_t i = 0; i < wide.size(); ++i) product *= wide[i].data_as<int64_t>()[offsets[i]];
                y.data_as<int64_t>()[out_offset] += product;
            }
            for (std::size_t d = all.size(); d-- > 0;) {
                ++index[d];
                for (std::size_t i = 0; i < offsets.size(); ++i) offsets[i] += strides[i][d];
                if (index[d] < extent[d]) break;
                for (std::size_t i = 0; i < offsets.size(); ++i) offsets[i] -= strides[i][d] * extent[d];
                index[d] = 0;
            }
        }
        context.set_output(0, y.cast(dtype));
    }

private:
    static EinsumTerm parse_term(const NodeInfo& node, const std::string& text) {
        EinsumTerm term;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text.compare(i, 3, "...") == 0) {
                if (term.letters.find('.') != std::string::npos)
                    node.fail(fmt::format("equation term '{}' has more than one ellipsis", text));
                term.letters += '.';
                i += 2;
            } else if (std::islower(static_cast<unsigned char>(text[i])) ||
                       std::isupper(static_cast<unsigned char>(text[i]))) {
                term.letters += text[i];
            } else {
                node.fail(fmt::format("equation term '{}' has an invalid character '{}'", text, text[i]));
            }
        }
        return term;
    }
    static bool is_placeholder(char c) { return c >= 1 && c <= kMaxEllipsis + 1; }
    static bool has_ellipsis(const EinsumTerm& term) { return term.letters.find('.') != std::string::npos; }
    // Replaces the ellipsis by `count` placeholder letters (control characters, right-aligned so that
    // the ellipsis dims of all operands line up and broadcast).
    std::string expand(const EinsumTerm& term, int64_t count) const {
        std::string result;
        for (char c : term.letters) {
            if (c != '.') {
                result += c;
                continue;
            }
            for (int64_t k = 0; k < count; ++k) result += static_cast<char>(1 + (kMaxEllipsis - count + k));
        }
        return result;
    }

    static constexpr int64_t kMaxEllipsis = 40;
    std::vector<EinsumTerm> inputs_;
    EinsumTerm output_;
    bool explicit_output_ = false;
};

// ---- Det ---------------------------------------------------------------------------------------------

class DetKernel final : public Kernel {
public:
    explicit DetKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() < 2 || x0.shape()[x0.rank() - 1] != x0.shape()[x0.rank() - 2])
            node.fail(fmt::format("input must be square matrices (shape [*, M, M]), but it has shape {}",
                                  shape_to_string(x0.shape())));
        const Tensor x = x0.cast(DataType::kFloat64);
        const int64_t m = x.shape().back();
        const Shape out_shape(x.shape().begin(), x.shape().end() - 2);
        Tensor y(DataType::kFloat64, out_shape);
        std::vector<double> a(static_cast<std::size_t>(m * m));
        for (int64_t b = 0; b < y.numel(); ++b) {
            std::copy_n(x.data_as<double>() + b * m * m, m * m, a.begin());
            double det = 1;
            for (int64_t c = 0; c < m && det != 0; ++c) {
                int64_t pivot = c;
                for (int64_t r = c + 1; r < m; ++r)
                    if (std::fabs(a[r * m + c]) > std::fabs(a[pivot * m + c])) pivot = r;
                if (a[pivot * m + c] == 0) {
                    det = 0;
                    break;
                }
                if (pivot != c) {
                    for (int64_t k = 0; k < m; ++k) std::swap(a[c * m + k], a[pivot * m + k]);
                    det = -det;
                }
                det *= a[c * m + c];
                for (int64_t r = c + 1; r < m; ++r) {
                    const double factor = a[r * m + c] / a[c * m + c];
                    for (int64_t k = c; k < m; ++k) a[r * m + k] -= factor * a[c * m + k];
                }
            }
            y.data_as<double>()[b] = det;
        }
        context.set_output(0, y.cast(x0.dtype()));
    }
};

}  // namespace

void register_linalg_ops(OpRegistry& registry) {
    registry.add("", "Einsum", 12, kMaxOpset, make_factory<EinsumKernel>());
    registry.add("", "Det", 11, kMaxOpset, make_factory<DetKernel>());
}

}  // namespace polygraphy::ref
