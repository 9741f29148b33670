// ai.onnx.ml operators that the ONNX backend tests use: LabelEncoder (opset 1-4), Binarizer,
// ArrayFeatureExtractor and TreeEnsemble (opset 5).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

// ---- LabelEncoder ------------------------------------------------------------------------------------

// Keys and values as a typed list: strings, or numbers (int64 or float) kept as double.
struct Column {
    DataType dtype = DataType::kUndefined;
    std::vector<std::string> strings;
    std::vector<double> numbers;
    std::size_t size() const { return dtype == DataType::kString ? strings.size() : numbers.size(); }
};

Column read_column(const NodeInfo& node, const std::string& prefix) {
    Column column;
    if (const onnx::AttributeProto* a = node.attr(prefix + "_strings"); a && a->strings_size() > 0) {
        column.dtype = DataType::kString;
        column.strings.assign(a->strings().begin(), a->strings().end());
    } else if (const onnx::AttributeProto* i = node.attr(prefix + "_int64s"); i && i->ints_size() > 0) {
        column.dtype = DataType::kInt64;
        for (int64_t v : i->ints()) column.numbers.push_back(static_cast<double>(v));
    } else if (const onnx::AttributeProto* f = node.attr(prefix + "_floats"); f && f->floats_size() > 0) {
        column.dtype = DataType::kFloat32;
        for (float v : f->floats()) column.numbers.push_back(v);
    } else if (std::optional<Tensor> t = node.attr_tensor(prefix + "_tensor")) {
        column.dtype = t->dtype();
        for (int64_t k = 0; k < t->numel(); ++k) {
            if (t->dtype() == DataType::kString)
                column.strings.push_back(t->strings()[k]);
            else
                column.numbers.push_back(t->value_as_double(k));
        }
    }
    return column;
}

class LabelEncoderKernel final : public Kernel {
public:
    explicit LabelEncoderKernel(const NodeInfo& node) {
        if (node.opset() < 2) {
            // Opset 1: classes_strings maps strings to their index, and back.
            const onnx::AttributeProto* classes = node.attr("classes_strings");
            keys_.dtype = DataType::kString;
            if (classes) keys_.strings.assign(classes->strings().begin(), classes->strings().end());
            values_.dtype = DataType::kInt64;
            for (std::size_t i = 0; i < keys_.strings.size(); ++i) values_.numbers.push_back(static_cast<double>(i));
            default_number_ = static_cast<double>(node.attr_int("default_int64", -1));
            default_string_ = node.attr_string("default_string", "_Unused");
            legacy_ = true;
            return;
        }
        keys_ = read_column(node, "keys");
        values_ = read_column(node, "values");
        if (keys_.dtype == DataType::kUndefined || values_.dtype == DataType::kUndefined)
            node.fail("attributes keys_* and values_* are required");
        if (keys_.size() != values_.size())
            node.fail(fmt::format("keys ({}) and values ({}) must have the same length", keys_.size(), values_.size()));
        if (values_.dtype == DataType::kString)
            default_string_ = node.attr_string("default_string", "_Unused");
        else if (values_.dtype == DataType::kInt64)
            default_number_ = static_cast<double>(node.attr_int("default_int64", -1));
        else
            default_number_ = node.attr_float("default_float", -0.0f);
        if (std::optional<Tensor> d = node.attr_tensor("default_tensor")) {
            if (d->numel() != 1) node.fail("attribute 'default_tensor' must hold one value");
            if (d->dtype() == DataType::kString)
                default_string_ = d->strings()[0];
            else
                default_number_ = d->value_as_double(0);
        }
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            if (keys_.dtype == DataType::kString)
                string_index_.emplace(keys_.strings[i], i);
            else if (std::isnan(keys_.numbers[i]))
                nan_index_ = static_cast<int64_t>(i);
            else
                number_index_.emplace(keys_.numbers[i], i);
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (legacy_) {
            compute_legacy(context, x);
            return;
        }
        if ((x.dtype() == DataType::kString) != (keys_.dtype == DataType::kString))
            node.fail(fmt::format("input of data type {} does not match the keys' type {}", dtype_name(x.dtype()),
                                  dtype_name(keys_.dtype)));
        Tensor y(values_.dtype == DataType::kString ? DataType::kString : DataType::kFloat64, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
            int64_t found = -1;
            if (x.dtype() == DataType::kString) {
                auto it = string_index_.find(x.strings()[i]);
                if (it != string_index_.end()) found = static_cast<int64_t>(it->second);
            } else {
                const double key = x.value_as_double(i);
                if (std::isnan(key)) {
                    found = nan_index_;
                } else if (auto it = number_index_.find(key); it != number_index_.end()) {
                    found = static_cast<int64_t>(it->second);
                }
            }
            if (values_.dtype == DataType::kString)
                y.strings()[i] = found >= 0 ? values_.strings[found] : default_string_;
            else
                y.data_as<double>()[i] = found >= 0 ? values_.numbers[found] : default_number_;
        }
        context.set_output(0, values_.dtype == DataType::kString ? y : y.cast(values_.dtype));
    }

private:
    void compute_legacy(KernelContext& context, const Tensor& x) const {
        if (x.dtype() == DataType::kString) {
            Tensor& y = context.allocate_output(0, DataType::kInt64, x.shape());
            for (int64_t i = 0; i < x.numel(); ++i) {
                auto it = std::find(keys_.strings.begin(), keys_.strings.end(), x.strings()[i]);
                y.data_as<int64_t>()[i] =
                    it != keys_.strings.end() ? it - keys_.strings.begin() : static_cast<int64_t>(default_number_);
            }
            return;
        }
        Tensor& y = context.allocate_output(0, DataType::kString, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
            const auto index = static_cast<int64_t>(x.value_as_double(i));
            y.strings()[i] = index >= 0 && index < static_cast<int64_t>(keys_.strings.size()) ? keys_.strings[index]
                                                                                              : default_string_;
        }
    }

    Column keys_, values_;
    std::string default_string_ = "_Unused";
    double default_number_ = -1;
    std::map<std::string, std::size_t> string_index_;
    std::map<double, std::size_t> number_index_;
    int64_t nan_index_ = -1;
    bool legacy_ = false;
};

// ---- Binarizer and ArrayFeatureExtractor -------------------------------------------------------------

class BinarizerKernel final : public Kernel {
public:
    explicit BinarizerKernel(const NodeInfo& node) : threshold_(node.attr_float("threshold", 0.0f)) {}
    void compute(KernelContext& context) const override {
        const Tensor& x = context.required_input(0);
        if (x.dtype() == DataType::kString || x.dtype() == DataType::kBool)
            unsupported_dtype(context.node(), x.dtype());
        Tensor y(DataType::kFloat64, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) y.data_as<double>()[i] = x.value_as_double(i) > threshold_ ? 1.0 : 0.0;
        context.set_output(0, y.cast(x.dtype()));
    }

private:
    double threshold_;
};

class ArrayFeatureExtractorKernel final : public Kernel {
public:
    explicit ArrayFeatureExtractorKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const std::vector<int64_t> indices = read_ints(node, context.required_input(1), "Y");
        if (x.rank() < 1) node.fail("input X must have rank 1 or more, but it is a scalar");
        const int64_t last = x.shape().back();
        for (int64_t index : indices)
            if (index < 0 || index >= last)
                node.fail(fmt::format("index {} is out of range for a last dimension of {}", index, last));
        Shape shape = x.rank() == 1 ? Shape{1} : Shape(x.shape().begin(), x.shape().end() - 1);
        shape.push_back(static_cast<int64_t>(indices.size()));
        Tensor& y = context.allocate_output(0, x.dtype(), shape);
        const int64_t rows = last > 0 ? x.numel() / last : 0;
        const std::size_t element = dtype_size(x.dtype());
        for (int64_t r = 0; r < rows; ++r)
            for (std::size_t k = 0; k < indices.size(); ++k) {
                const int64_t from = r * last + indices[k],
                              to = r * static_cast<int64_t>(indices.size()) + static_cast<int64_t>(k);
                if (x.dtype() == DataType::kString)
                    y.strings()[to] = x.strings()[from];
                else
                    std::memcpy(static_cast<unsigned char*>(y.data()) + to * element,
                                static_cast<const unsigned char*>(x.data()) + from * element, element);
            }
    }
};

// ---- TreeEnsemble ------------------------------------------------------------------------------------

class TreeEnsembleKernel final : public Kernel {
public:
    explicit TreeEnsembleKernel(const NodeInfo& node) {
        feature_ = node.attr_ints("nodes_featureids");
        true_ids_ = node.attr_ints("nodes_truenodeids");
        false_ids_ = node.attr_ints("nodes_falsenodeids");
        true_leaf_ = node.attr_ints("nodes_trueleafs");
        false_leaf_ = node.attr_ints("nodes_falseleafs");
        missing_true_ = node.attr_ints("nodes_missing_value_tracks_true");
        roots_ = node.attr_ints("tree_roots");
        leaf_targets_ = node.attr_ints("leaf_targetids");
        targets_ = node.attr_int("n_targets", 0);
        aggregate_ = node.attr_int("aggregate_function", 1);
        post_ = node.attr_int("post_transform", 0);
        auto values = [&](std::string_view name) {
            std::vector<double> out;
            if (std::optional<Tensor> t = node.attr_tensor(name))
                for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->value_as_double(i));
            return out;
        };
        splits_ = values("nodes_splits");
        weights_ = values("leaf_weights");
        const std::vector<double> modes = values("nodes_modes");
        const std::vector<double> membership = values("membership_values");
        const std::size_t count = feature_.size();
        if (count == 0 || splits_.size() != count || modes.size() != count || true_ids_.size() != count ||
            false_ids_.size() != count || true_leaf_.size() != count || false_leaf_.size() != count)
            node.fail(fmt::format("the nodes_* attributes must all have one value per node ({})", count));
        if (weights_.size() != leaf_targets_.size())
            node.fail(fmt::format("leaf_weights ({}) and leaf_targetids ({}) must have the same length",
                                  weights_.size(), leaf_targets_.size()));
        if (targets_ <= 0) node.fail(fmt::format("attribute 'n_targets' must be positive, but it is {}", targets_));
        if (aggregate_ < 0 || aggregate_ > 3)
            node.fail(fmt::format("attribute 'aggregate_function' must be in [0, 3], but it is {}", aggregate_));
        if (post_ != 0)
            throw UnsupportedError(
                fmt::format("Node '{}' (TreeEnsemble): post_transform {} is not supported", node.name(), post_));
        for (int64_t target : leaf_targets_)
            if (target < 0 || target >= targets_) node.fail(fmt::format("leaf target id {} is out of range", target));
        std::size_t next_set = 0;
        for (std::size_t i = 0; i < count; ++i) {
            modes_.push_back(static_cast<int>(modes[i]));
            if (modes_.back() < 0 || modes_.back() > 6)
                node.fail(fmt::format("nodes_modes value {} is not a known mode (0 to 6)", modes_.back()));
            std::vector<double> set;
            if (modes_.back() == 6) {
                while (next_set < membership.size() && !std::isnan(membership[next_set]))
                    set.push_back(membership[next_set++]);
                ++next_set;  // the NaN separator
            }
            sets_.push_back(std::move(set));
            for (int64_t id : {true_ids_[i], false_ids_[i]})
                if (id < 0) node.fail(fmt::format("node id {} is negative", id));
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() != 2)
            node.fail(fmt::format("input X must have rank 2, but it has shape {}", shape_to_string(x0.shape())));
        const int64_t rows = x0.shape()[0], features = x0.shape()[1];
        const Tensor x = x0.cast(DataType::kFloat64);
        Tensor y(DataType::kFloat64, {rows, targets_});
        std::vector<double> scores(static_cast<std::size_t>(targets_));
        std::vector<bool> hit(static_cast<std::size_t>(targets_));
        for (int64_t r = 0; r < rows; ++r) {
            const double* row = x.data_as<double>() + r * features;
            std::fill(scores.begin(), scores.end(), 0.0);
            std::fill(hit.begin(), hit.end(), false);
            for (int64_t root : roots_) {
                int64_t current = root;
                std::size_t guard = 0;
                while (true) {
                    if (current < 0 || current >= static_cast<int64_t>(feature_.size()) || ++guard > feature_.size())
                        node.fail(fmt::format("tree walk reached an invalid node id {}", current));
                    const int64_t f = feature_[current];
                    if (f < 0 || f >= features) node.fail(fmt::format("feature id {} is out of range", f));
                    const bool take_true = decide(current, row[f]);
                    const int64_t next = take_true ? true_ids_[current] : false_ids_[current];
                    const bool leaf = (take_true ? true_leaf_[current] : false_leaf_[current]) != 0;
                    if (!leaf) {
                        current = next;
                        continue;
                    }
                    if (next >= static_cast<int64_t>(weights_.size()))
                        node.fail(fmt::format("leaf id {} is out of range", next));
                    const int64_t target = leaf_targets_[next];
                    const double w = weights_[next];
                    if (aggregate_ == 2)
                        scores[target] = hit[target] ? std::min(scores[target], w) : w;
                    else if (aggregate_ == 3)
                        scores[target] = hit[target] ? std::max(scores[target], w) : w;
                    else
                        scores[target] += w;
                    hit[target] = true;
                    break;
                }
            }
            for (int64_t t = 0; t < targets_; ++t)
                y.data_as<double>()[r * targets_ + t] =
                    aggregate_ == 0 && !roots_.empty() ? scores[t] / static_cast<double>(roots_.size()) : scores[t];
        }
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    bool decide(int64_t node, double value) const {
        if (std::isnan(value) && node < static_cast<int64_t>(missing_true_.size()) && missing_true_[node]) return true;
        const double split = splits_[node];
        switch (modes_[node]) {
            case 0:
                return value <= split;
            case 1:
                return value < split;
            case 2:
                return value >= split;
            case 3:
                return value > split;
            case 4:
                return value == split;
            case 5:
                return value != split;
            default:
                return std::find(sets_[node].begin(), sets_[node].end(), value) != sets_[node].end();
        }
    }

    std::vector<int64_t> feature_, true_ids_, false_ids_, true_leaf_, false_leaf_, missing_true_, roots_, leaf_targets_;
    std::vector<double> splits_, weights_;
    std::vector<int> modes_;
    std::vector<std::vector<double>> sets_;
    int64_t targets_ = 0, aggregate_ = 1, post_ = 0;
};

}  // namespace

void register_ml_ops(OpRegistry& registry) {
    registry.add(kMl, "LabelEncoder", 1, 5, make_factory<LabelEncoderKernel>());
    registry.add(kMl, "Binarizer", 1, 5, make_factory<BinarizerKernel>());
    registry.add(kMl, "ArrayFeatureExtractor", 1, 5, make_factory<ArrayFeatureExtractorKernel>());
    registry.add(kMl, "TreeEnsemble", 5, 5, make_factory<TreeEnsembleKernel>());
}

}  // namespace polygraphy::ref
