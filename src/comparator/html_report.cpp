#include "polygraphy/comparator/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/text_util.h"
#include "comparator/graph_layout.h"
#include "comparator/report_assets.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/comparator/dataset_summary.h"
#include "polygraphy/comparator/error_profile.h"
#include "polygraphy/comparator/histogram.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy {
namespace {

constexpr std::size_t kMaxAttributeText = 80;  // characters of one attribute value shown in the report

// The page's data: compact JSON. JavaScript's JSON has no NaN or Infinity, so non-finite numbers
// travel as the strings "NaN", "Infinity" and "-Infinity" (the page reads them with Number()).
class DataWriter {
public:
    explicit DataWriter(std::string* out) : writer_(out, json::Writer::kCompact) {}
    json::Writer& json() { return writer_; }

    void number(double value) {
        if (std::isnan(value)) {
            writer_.value("NaN");
        } else if (std::isinf(value)) {
            writer_.value(value > 0 ? "Infinity" : "-Infinity");
        } else {
            char text[32];
            std::snprintf(text, sizeof(text), "%.4g", value);  // the page shows 4 significant digits
            writer_.value(std::strtod(text, nullptr));
        }
    }
    void number(std::string_view key, double value) {
        writer_.key(key);
        number(value);
    }
    void text(std::string_view key, std::string_view value) { writer_.key(key).value(value); }

    // `with_range` false: only the counts, for a histogram on the bins of the one written before it.
    void histogram(std::string_view key, const Histogram& histogram, bool with_range = true) {
        writer_.key(key).begin_object();
        if (with_range) {
            writer_.key("log").value(histogram.log_scale);
            number("lo", histogram.low);
            number("hi", histogram.high);
        }
        writer_.key("c").begin_array();
        for (const int64_t count : histogram.counts) writer_.value(count);
        writer_.end_array();
        if (histogram.non_positive) writer_.key("z").value(histogram.non_positive);
        if (histogram.nan) writer_.key("n").value(histogram.nan);
        if (histogram.infinite) writer_.key("i").value(histogram.infinite);
        writer_.end_object();
    }

private:
    json::Writer writer_;
};

std::string shape_text(const Shape& shape) {
    return shape_to_string(shape);
}

std::string truncated(std::string text) {
    if (text.size() > kMaxAttributeText) text = text.substr(0, kMaxAttributeText - 3) + "...";
    return text;
}

template <typename Items, typename Format>
std::string list_text(const Items& items, Format format) {
    std::string text = "[";
    int shown = 0;
    for (const auto& item : items) {
        if (shown == 16) {
            text += ", ...";
            break;
        }
        text += (shown++ ? ", " : "") + format(item);
    }
    return text + "]";
}

std::string attribute_text(const onnx::AttributeProto& attribute) {
    switch (attribute.type()) {
        case onnx::AttributeProto::INT:
            return std::to_string(attribute.i());
        case onnx::AttributeProto::FLOAT:
            return python_float_repr(attribute.f());
        case onnx::AttributeProto::STRING:
            return truncated(python_repr(attribute.s()));
        case onnx::AttributeProto::INTS:
            return truncated(list_text(attribute.ints(), [](int64_t v) { return std::to_string(v); }));
        case onnx::AttributeProto::FLOATS:
            return truncated(list_text(attribute.floats(), [](float v) { return python_float_repr(v); }));
        case onnx::AttributeProto::STRINGS:
            return truncated(list_text(attribute.strings(), [](const std::string& v) { return python_repr(v); }));
        case onnx::AttributeProto::TENSOR: {
            Shape dims(attribute.t().dims().begin(), attribute.t().dims().end());
            return "tensor " + std::string(dtype_name(dtype_from_onnx(attribute.t().data_type()))) + " " +
                   shape_text(dims);
        }
        case onnx::AttributeProto::GRAPH:
            return "graph of " + std::to_string(attribute.g().node_size()) + " nodes";
        case onnx::AttributeProto::GRAPHS:
            return std::to_string(attribute.graphs_size()) + " graphs";
        default:
            return "(attribute of type " + std::to_string(static_cast<int>(attribute.type())) + ")";
    }
}

void write_header(DataWriter& out, std::string_view kind, const ReportContext& context) {
    out.text("kind", kind);
    out.text("title", context.title.empty() ? std::string("polygraphy report") : context.title);
    out.text("command", context.command);
    out.text("error", context.error);
}

// Each runner pair's samples summarised per output (dataset_summary.h), for pairs compared on two
// samples or more: the counts, the quantiles, the worst sample and every sample's largest absolute
// difference (the page draws samples passing against the tolerance). With a graph, its outputs only
// (a layer-wise comparison has thousands of tensors).
void write_dataset(DataWriter& out, const AccuracyResult& accuracy, const ReportContext& context) {
    json::Writer& json = out.json();
    json.key("dataset").begin_array();
    std::set<std::string> graph_outputs;
    if (context.graph)
        for (const auto& output : context.graph->output()) graph_outputs.insert(output.name());
    for (const auto& pair : accuracy.pairs) {
        if (pair.iterations.size() < 2) continue;
        json.begin_object();
        out.text("first", pair.first_runner);
        out.text("second", pair.second_runner);
        json.key("samples").value(static_cast<int64_t>(pair.iterations.size()));
        json.key("outputs").begin_array();
        for (const OutputDatasetSummary& output : summarize_dataset(pair)) {
            if (!graph_outputs.empty() && !graph_outputs.contains(output.output)) continue;
            json.begin_object();
            out.text("t", output.output);
            json.key("ps").value(static_cast<int64_t>(output.passed));
            json.key("fs").value(static_cast<int64_t>(output.failed));
            json.key("w").value(static_cast<int64_t>(output.worst_sample));
            json.key("q").begin_array();
            for (double figure : {output.max_abs.min, output.max_abs.median, output.max_abs.p90, output.max_abs.max})
                out.number(figure);
            json.end_array();
            json.key("ma").begin_array();
            for (const auto& iteration : pair.iterations) {
                const auto* result = iteration.find(output.output);
                out.number(result && result->error.empty() ? result->max_absdiff : std::nan(""));
            }
            json.end_array();
            json.end_object();
        }
        json.end_array();
        json.end_object();
    }
    json.end_array();
}

// One compared output. Defaults are left out to keep reports small: "o" (the other name) when it is
// the same, "op"/"nn" when the graph has the node (the page takes them from there), "e", "fd", "fg"
// when empty or false, the second type and shape when the same; "mk" (how the tensor was paired)
// unless the context gives one.
void write_entry(DataWriter& out, const ProfileEntry& entry, const ReportContext& context) {
    const OutputCompareResult& r = entry.result;
    json::Writer& json = out.json();
    json.begin_object();
    out.text("t", entry.tensor);
    if (r.other_name != entry.tensor) out.text("o", r.other_name);
    if (const auto how = context.pairing.find(entry.tensor); how != context.pairing.end()) out.text("mk", how->second);
    json.key("n").value(entry.node_index);
    if (entry.node_index < 0 && !entry.op_type.empty()) {
        out.text("op", entry.op_type);
        out.text("nn", entry.node);
    }
    json.key("p").value(r.passed);
    if (!r.error.empty()) out.text("e", r.error);
    out.number("ma", r.max_absdiff);
    out.number("ea", r.mean_absdiff);
    out.number("da", r.median_absdiff);
    out.number("mr", r.max_reldiff);
    out.number("er", r.mean_reldiff);
    out.number("dr", r.median_reldiff);
    out.number("ra", r.required_atol);
    out.number("rr", r.required_rtol);
    out.number("at", r.atol);
    out.number("rt", r.rtol);
    out.text("st", error_stat_name(r.check_error_stat));
    out.number("lv", entry.error_level);
    out.number("g", entry.growth);
    if (entry.first_divergence) json.key("fd").value(true);
    if (entry.fastest_growing_rank) json.key("fg").value(entry.fastest_growing_rank);
    if (const auto& d = r.distributions) {
        const std::string first = std::string(dtype_name(d->first_dtype)) + " " + shape_text(d->first_shape);
        const std::string second = std::string(dtype_name(d->second_dtype)) + " " + shape_text(d->second_shape);
        out.text("ty", first);
        if (second != first) out.text("ty2", second);
        out.histogram("va", d->first_values);
        out.histogram("vb", d->second_values, false);
        out.histogram("ha", d->absdiff);
        out.histogram("hr", d->reldiff);
    }
    json.end_object();
}

void write_graph(DataWriter& out, const onnx::GraphProto& graph) {
    const layout::GraphLayout placed = layout::layout_graph(graph);
    json::Writer& json = out.json();
    json.key("graph").begin_object();
    out.number("w", placed.width);
    out.number("h", placed.height);
    out.number("nw", layout::kNodeWidth);
    out.number("nh", layout::kNodeHeight);
    auto column = [&](std::string_view key, auto value_of) {
        json.key(key).begin_array();
        for (int i = 0; i < graph.node_size(); ++i) value_of(i);
        json.end_array();
    };
    column("name", [&](int i) {
        const auto& node = graph.node(i);
        json.value(node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name());
    });
    column("op", [&](int i) { json.value(graph.node(i).op_type()); });
    column("x", [&](int i) { json.value(static_cast<int64_t>(std::lround(placed.x[static_cast<std::size_t>(i)]))); });
    column("y", [&](int i) { json.value(static_cast<int64_t>(std::lround(placed.y[static_cast<std::size_t>(i)]))); });
    column("in", [&](int i) {
        json.begin_array();
        for (const auto& name : graph.node(i).input()) json.value(name);
        json.end_array();
    });
    column("out", [&](int i) {
        json.begin_array();
        for (const auto& name : graph.node(i).output()) json.value(name);
        json.end_array();
    });
    column("attr", [&](int i) {
        json.begin_array();
        for (const auto& attribute : graph.node(i).attribute())
            json.begin_array().value(attribute.name()).value(attribute_text(attribute)).end_array();
        json.end_array();
    });
    json.key("e").begin_array();
    for (const auto& [from, to] : placed.edges) json.value(from).value(to);
    json.end_array();

    // Declared types and shapes of the graph's tensors, for the node panel.
    std::map<std::string, std::string> tensors;
    auto declare = [&](const onnx::ValueInfoProto& info) {
        if (!info.type().has_tensor_type()) return;
        const auto& type = info.type().tensor_type();
        std::string text(dtype_name(dtype_from_onnx(type.elem_type())));
        if (type.has_shape()) {
            text += " (";
            for (int d = 0; d < type.shape().dim_size(); ++d) {
                const auto& dim = type.shape().dim(d);
                text += (d ? ", " : "") + (dim.has_dim_value() ? std::to_string(dim.dim_value()) : dim.dim_param());
            }
            text += type.shape().dim_size() == 1 ? ",)" : ")";
        }
        tensors[info.name()] = text;
    };
    for (const auto& info : graph.input()) declare(info);
    for (const auto& info : graph.value_info()) declare(info);
    for (const auto& info : graph.output()) declare(info);
    for (const auto& initializer : graph.initializer()) {
        Shape dims(initializer.dims().begin(), initializer.dims().end());
        tensors[initializer.name()] =
            "initializer " + std::string(dtype_name(dtype_from_onnx(initializer.data_type()))) + " " + shape_text(dims);
    }
    json.key("tensors").begin_object();
    for (const auto& [name, text] : tensors) json.key(name).value(text);
    json.end_object();
    json.end_object();
}

std::string comparison_data(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                            const ReportContext& context) {
    std::string text;
    DataWriter out(&text);
    json::Writer& json = out.json();
    json.begin_object();
    write_header(out, "comparison", context);
    json.key("passed").value(context.error.empty() && static_cast<bool>(accuracy));
    json.key("runners").begin_array();
    for (std::size_t i = 0; i < accuracy.pairs.size(); ++i) {
        if (i == 0) json.value(accuracy.pairs[i].first_runner);
        json.value(accuracy.pairs[i].second_runner);
    }
    json.end_array();
    json.key("divergence");
    if (divergence) {
        json.begin_object();
        out.text("node", divergence->node_name);
        out.text("op", divergence->op_type);
        out.text("tensor", divergence->tensor);
        out.text("first", divergence->first_runner);
        out.text("second", divergence->second_runner);
        json.key("iteration").value(static_cast<int64_t>(divergence->iteration));
        json.end_object();
    } else {
        json.null();
    }
    json.key("comparisons").begin_array();
    for (const ErrorProfile& profile : build_error_profiles(accuracy, context.graph)) {
        json.begin_object();
        out.text("first", profile.first_runner);
        out.text("second", profile.second_runner);
        json.key("iteration").value(static_cast<int64_t>(profile.iteration));
        json.key("outputs").begin_array();
        for (const ProfileEntry& entry : profile.entries) write_entry(out, entry, context);
        json.end_array();
        json.end_object();
    }
    json.end_array();
    write_dataset(out, accuracy, context);
    if (context.graph) write_graph(out, *context.graph);
    json.end_object();
    json.finish();
    return text;
}

void write_tensor_summary(DataWriter& out, const std::string& name, const Tensor& tensor) {
    json::Writer& json = out.json();
    json.begin_object();
    out.text("t", name);
    out.text("dt", dtype_name(tensor.dtype()));
    out.text("sh", shape_text(tensor.shape()));
    const bool numeric = tensor.dtype() != DataType::kString && tensor.dtype() != DataType::kComplex64 &&
                         tensor.dtype() != DataType::kComplex128 && tensor.defined();
    if (numeric) {
        const stats::ArrayStats figures = stats::compute_stats(tensor);
        out.number("mean", figures.mean);
        out.number("std", figures.std_dev);
        out.number("min", figures.min);
        out.number("max", figures.max);
        out.number("med", figures.median);
        const ValueRange range = value_range(tensor);
        json.key("nan").value(range.nan);
        json.key("inf").value(range.infinite);
        const double low = range.min.value_or(0), high = range.max.value_or(0);
        out.histogram("va", linear_histogram(tensor, low, high, kReportHistogramBins));
    }
    json.end_object();
}

std::string data_report_data(const RunResults& results, const ReportContext& context) {
    std::string text;
    DataWriter out(&text);
    json::Writer& json = out.json();
    json.begin_object();
    write_header(out, "data", context);
    json.key("runs").begin_array();
    for (const auto& [runner, iterations] : results.lst)
        for (std::size_t iteration = 0; iteration < iterations.size(); ++iteration) {
            json.begin_object();
            out.text("runner", runner);
            json.key("iteration").value(static_cast<int64_t>(iteration));
            json.key("tensors").begin_array();
            for (const auto& [name, tensor] : iterations[iteration].outputs) write_tensor_summary(out, name, tensor);
            json.end_array();
            json.end_object();
        }
    json.end_array();
    json.end_object();
    json.finish();
    return text;
}

// The page: data in a JSON script element ('<' escaped, so no name can close the element), then the
// page's own script and styles. The policy forbids every network request.
std::string html_page(const std::string& title, const std::string& data) {
    std::string safe_data;
    safe_data.reserve(data.size());
    for (const char c : data) {
        if (c == '<')
            safe_data += "\\u003c";
        else
            safe_data += c;
    }
    return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
           "style-src 'unsafe-inline'; img-src data:\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
           text::markup_escape(title) + "</title>\n<style>\n" + std::string(report_assets::css()) +
           "</style>\n</head>\n<body>\n<noscript>This report needs JavaScript.</noscript>\n<div id=\"app\"></div>\n"
           "<script type=\"application/json\" id=\"report-data\">" +
           safe_data + "</script>\n<script>\n" + std::string(report_assets::script()) + "</script>\n</body>\n</html>\n";
}

std::string page_title(const ReportContext& context, const std::string& what) {
    return context.title.empty() ? what : what + ": " + context.title;
}

}  // namespace

bool is_html_report_path(const std::string& path) {
    std::string lower = path;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    auto ends_with = [&](const std::string& suffix) {
        return lower.size() >= suffix.size() && lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends_with(".html") || ends_with(".htm");
}

void save_html_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                      const ReportContext& context, const std::string& path) {
    write_file_atomically(path,
                          html_page(page_title(context, "Comparison"), comparison_data(accuracy, divergence, context)));
}

void save_comparison_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                            const ReportContext& context, const std::string& path) {
    if (is_html_report_path(path))
        save_html_report(accuracy, divergence, context, path);
    else
        save_accuracy_report(accuracy, divergence, path, context.error);
}

void save_data_report(const RunResults& results, const ReportContext& context, const std::string& path) {
    write_file_atomically(path, html_page(page_title(context, "Data"), data_report_data(results, context)));
}

void save_data_report(const InputList& inputs, const ReportContext& context, const std::string& path) {
    RunResults as_results;
    std::vector<IterationResult> iterations;
    for (const TensorMap& feed : inputs) {
        IterationResult iteration;
        iteration.outputs = feed;
        iterations.push_back(std::move(iteration));
    }
    as_results.add(std::move(iterations), "inputs");
    save_data_report(as_results, context, path);
}

}  // namespace polygraphy
