#include "polygraphy/comparator/divergence.h"
#include "polygraphy/comparator/dataset_summary.h"

#include <cstdio>

#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"

namespace polygraphy {
namespace {

bool failed(const IterationCompareResult& results, const std::string& tensor) {
    const OutputCompareResult* result = results.find(tensor);
    return result && !result->passed;
}

std::string format_figure(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.5g", value);
    return text;
}

void write_figures(json::Writer& writer, const OutputCompareResult& result) {
    writer.begin_object();
    writer.key("passed").value(result.passed);
    writer.key("compared_with").value(result.other_name);
    writer.key("max_abs_diff").value(result.max_absdiff);
    writer.key("max_rel_diff").value(result.max_reldiff);
    writer.key("mean_abs_diff").value(result.mean_absdiff);
    writer.key("mean_rel_diff").value(result.mean_reldiff);
    writer.key("median_abs_diff").value(result.median_absdiff);
    writer.key("median_rel_diff").value(result.median_reldiff);
    writer.key("required_atol").value(result.required_atol);
    writer.key("required_rtol").value(result.required_rtol);
    if (!result.error.empty()) writer.key("error").value(result.error);
    writer.end_object();
}

}  // namespace

std::optional<Divergence> find_first_divergence(const onnx::GraphProto& graph, const IterationCompareResult& results) {
    for (int index = 0; index < graph.node_size(); ++index) {
        const onnx::NodeProto& node = graph.node(index);
        for (const std::string& output : node.output()) {
            if (output.empty() || !failed(results, output)) continue;
            bool inputs_agree = true;
            for (const std::string& input : node.input())
                if (!input.empty() && failed(results, input)) inputs_agree = false;
            if (!inputs_agree) continue;
            Divergence divergence;
            divergence.tensor = output;
            divergence.node_name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
            divergence.op_type = node.op_type();
            divergence.figures = results.at(output);
            return divergence;
        }
    }
    return std::nullopt;
}

std::optional<Divergence> find_first_divergence(const onnx::GraphProto& graph, const AccuracyResult& accuracy) {
    for (const auto& pair : accuracy.pairs) {
        for (std::size_t iteration = 0; iteration < pair.iterations.size(); ++iteration) {
            auto divergence = find_first_divergence(graph, pair.iterations[iteration]);
            if (!divergence) continue;
            divergence->first_runner = pair.first_runner;
            divergence->second_runner = pair.second_runner;
            divergence->iteration = iteration;
            return divergence;
        }
    }
    return std::nullopt;
}

std::string describe_divergence(const Divergence& divergence) {
    const auto& figures = divergence.figures;
    return "First divergence: node '" + divergence.node_name + "' (" + divergence.op_type + "), output '" +
           divergence.tensor + "' | " + divergence.first_runner + " vs. " + divergence.second_runner +
           " | Iteration: " + std::to_string(divergence.iteration) +
           "\nmax abs diff=" + format_figure(figures.max_absdiff) +
           ", max rel diff=" + format_figure(figures.max_reldiff) +
           ", mean abs diff=" + format_figure(figures.mean_absdiff) +
           ", required tolerance: [abs=" + format_figure(figures.required_atol) +
           "] OR [rel=" + format_figure(figures.required_rtol) + "]";
}

void save_accuracy_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                          const std::string& path, const std::string& error) {
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out);
        writer.begin_object();
        writer.key("passed").value(error.empty() && static_cast<bool>(accuracy));
        if (!error.empty()) writer.key("error").value(error);
        writer.key("first_divergence");
        if (divergence) {
            writer.begin_object();
            writer.key("runners").begin_array().value(divergence->first_runner).value(divergence->second_runner).end_array();
            writer.key("iteration").value(static_cast<int64_t>(divergence->iteration));
            writer.key("node").value(divergence->node_name);
            writer.key("op_type").value(divergence->op_type);
            writer.key("tensor").value(divergence->tensor);
            writer.key("figures");
            write_figures(writer, divergence->figures);
            writer.end_object();
        } else {
            writer.null();
        }
        writer.key("comparisons").begin_array();
        for (const auto& pair : accuracy.pairs) {
            writer.begin_object();
            writer.key("runners").begin_array().value(pair.first_runner).value(pair.second_runner).end_array();
            writer.key("iterations").begin_array();
            for (const auto& iteration : pair.iterations) {
                writer.begin_object();
                writer.key("outputs").begin_object();
                for (const auto& [name, result] : iteration) {
                    writer.key(name);
                    write_figures(writer, result);
                }
                writer.end_object();
                writer.end_object();
            }
            writer.end_array();
            writer.key("dataset").begin_object();
            for (const OutputDatasetSummary& output : summarize_dataset(pair)) {
                writer.key(output.output).begin_object();
                write_output_figures(writer, output);
                writer.end_object();
            }
            writer.end_object();
            writer.end_object();
        }
        writer.end_array();
        writer.end_object();
        writer.finish();
    });
}

}  // namespace polygraphy
