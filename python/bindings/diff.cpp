// polygraphy.comparator's two-graph calls (match_graphs, diff_graphs) over job/diff_job.h, and the
// convert_to_fp16 of polygraphy.backend.onnx, which makes a second graph to compare with.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/job/diff_job.h"
#include "polygraphy/job/precision_job.h"

namespace polygraphy::python {
namespace {

using namespace pybind11::literals;

py::dict figures_dict(const ErrorFigures& figures) {
    py::dict result;
    result["passed"] = figures.passed;
    result["size"] = figures.size;
    result["max_abs_diff"] = figures.max_abs;
    result["mean_abs_diff"] = figures.mean_abs;
    result["max_rel_diff"] = figures.max_rel;
    result["mean_rel_diff"] = figures.mean_rel;
    result["cosine_similarity"] = figures.cosine;
    result["sqnr_db"] = figures.sqnr_db;
    result["relative_rms"] = figures.relative_rms;
    result["gain_error"] = figures.gain_error;
    result["failing_elements"] = figures.failing;
    if (!figures.error.empty()) result["error"] = figures.error;
    return result;
}

py::dict pair_dict(const TensorPair& pair) {
    py::dict result;
    result["a"] = pair.a;
    result["b"] = pair.b;
    result["how"] = std::string(match_kind_name(pair.how));
    result["confidence"] = pair.confidence;
    result["detail"] = pair.detail;
    return result;
}

RunnerStep backend_step(const std::string& name) {
    if (name == "ref") return RefRunnerStep{};
    if (name == "onnxrt") return OnnxrtRunnerStep{};
    throw UsageError("backend: expected 'ref' or 'onnxrt', got '" + name + "'");
}

// `input_map` as the library takes it.
std::vector<std::pair<std::string, std::string>> input_map(
    const std::optional<std::map<std::string, std::string>>& map) {
    std::vector<std::pair<std::string, std::string>> pairs;
    if (map)
        for (const auto& [a, b] : *map) pairs.emplace_back(a, b);
    return pairs;
}

}  // namespace

void bind_diff(py::module_& module) {
    module.def(
        "convert_to_fp16",
        [](const OnnxModel& model, bool keep_io_types, std::vector<std::string> node_block_list,
           std::vector<std::string> op_block_list, bool bf16) {
            auto converted = std::make_shared<onnx::ModelProto>(*model);
            Fp16Options options;
            options.keep_io_types = keep_io_types;
            options.node_block_list = std::move(node_block_list);
            options.op_block_list = std::move(op_block_list);
            if (bf16) options.target = DataType::kBFloat16;
            convert_to_fp16(*converted, options);
            return converted;
        },
        "model"_a, "keep_io_types"_a = true, "node_block_list"_a = std::vector<std::string>{},
        "op_block_list"_a = std::vector<std::string>{}, "bf16"_a = false, py::call_guard<py::gil_scoped_release>(),
        "A copy of `model` with its float32 weights and activations converted to float16 (`--fp-to-fp16`; "
        "`bf16`: bfloat16, `--fp-to-bf16`); the nodes named in `node_block_list` and the ops of `op_block_list` "
        "stay in float32, as onnxconverter-common's lists of the same names.");

    module.def(
        "find_precision",
        [](const std::string& model, const std::string& precision, double atol, double rtol, int64_t seed,
           int64_t iterations, const std::string& search, std::optional<std::string> output,
           std::optional<std::string> block_list) {
            PrecisionJob job;
            job.model = ModelJob{model};
            if (precision != "fp16" && precision != "bf16" && precision != "int8")
                throw UsageError("precision: expected 'fp16', 'bf16' or 'int8', got '" + precision + "'");
            job.precision = precision == "bf16"   ? LowPrecision::kBf16
                            : precision == "int8" ? LowPrecision::kInt8
                                                  : LowPrecision::kFp16;
            job.check.tolerances = {atol, rtol};
            job.data_loader.generator.seed = seed;
            job.data_loader.generator.iterations = iterations;
            if (search != "bisect" && search != "greedy" && search != "node-order")
                throw UsageError("search: expected 'bisect', 'greedy' or 'node-order', got '" + search + "'");
            job.search = search == "greedy"       ? PrecisionSearch::kGreedy
                         : search == "node-order" ? PrecisionSearch::kNodeOrder
                                                  : PrecisionSearch::kBisect;
            job.output_path = std::move(output);
            job.block_list_path = std::move(block_list);
            PrecisionResult found;
            {
                py::gil_scoped_release release;
                found = run_precision_job(job);
            }
            py::dict result;
            result["kept"] = found.kept;
            result["kept_tensors"] = found.kept_tensors;
            result["node_block_list"] = found.block_lists.node_block_list;
            result["op_block_list"] = found.block_lists.op_block_list;
            result["ranking"] = found.ranking;
            result["candidates"] = found.candidates;
            result["samples"] = found.samples;
            result["evaluations"] = found.evaluations;
            result["seconds"] = found.seconds;
            result["one_minimal"] = found.one_minimal;
            result["summary"] = format_precision_result(found, job.precision);
            return result;
        },
        "model"_a, "precision"_a = "fp16", "atol"_a = 1e-3, "rtol"_a = 1e-3, "seed"_a = 1, "iterations"_a = 1,
        "search"_a = "bisect", "output"_a = py::none(), "block_list"_a = py::none(),
        "What `polygraphy debug precision MODEL` does (job/precision_job.h): the nodes to keep in higher precision "
        "so that the fp16/bf16 (or, for a QDQ model, int8) model passes atol/rtol on every generated sample. A dict "
        "with 'kept' (ONNX node names), 'kept_tensors' (int8), 'node_block_list', 'op_block_list', 'ranking', "
        "'candidates', 'samples', 'evaluations', 'seconds', 'one_minimal' and 'summary'; `output` saves the "
        "mixed model, `block_list` the JSON block lists.");

    module.def(
        "match_graphs",
        [](const std::string& a, const std::string& b, std::optional<std::map<std::string, std::string>> inputs) {
            OnnxModel model_a, model_b;
            GraphMatching matching;
            {
                py::gil_scoped_release release;
                model_a = onnx_from_path(a);
                model_b = onnx_from_path(b);
                GraphMatchOptions options;
                options.input_map = input_map(inputs);
                matching = match_graphs(model_a->graph(), model_b->graph(), options);
            }
            py::dict result;
            py::list pairs, graph_inputs;
            for (const TensorPair& pair : matching.inputs) graph_inputs.append(pair_dict(pair));
            for (const TensorPair& pair : matching.pairs) {
                py::dict entry = pair_dict(pair);
                py::list a_nodes, b_nodes;
                for (int n : pair.a_nodes) a_nodes.append(node_display_name(model_a->graph(), n));
                for (int n : pair.b_nodes) b_nodes.append(node_display_name(model_b->graph(), n));
                entry["a_nodes"] = a_nodes;
                entry["b_nodes"] = b_nodes;
                pairs.append(entry);
            }
            result["inputs"] = graph_inputs;
            result["pairs"] = pairs;
            result["unmatched_a"] = matching.unmatched_a;
            result["unmatched_b"] = matching.unmatched_b;
            return result;
        },
        "a"_a, "b"_a, "input_map"_a = py::none(),
        "Pairs the tensors of two ONNX models of one network (graph_match.h): a dict with 'inputs', 'pairs' "
        "(each with 'a', 'b', 'how', 'confidence', 'detail', 'a_nodes', 'b_nodes'), 'unmatched_a' and "
        "'unmatched_b'. `input_map`: {A input name: B input name} for inputs named differently.");

    module.def(
        "diff_graphs",
        [](const std::string& a, const std::string& b, double atol, double rtol, const std::string& backend_a,
           const std::string& backend_b, int64_t seed, int64_t iterations,
           std::optional<std::map<std::string, std::string>> inputs, std::optional<std::string> match_file,
           std::optional<std::string> report, const std::string& blame_by) {
            DiffJob job;
            job.a = ModelJob{a};
            job.b = ModelJob{b};
            job.runner_a = backend_step(backend_a);
            job.runner_b = backend_step(backend_b);
            job.tolerances = {atol, rtol};
            job.data_loader.generator.seed = seed;
            job.data_loader.generator.iterations = iterations;
            job.matching.input_map = input_map(inputs);
            if (match_file) job.matching.user = read_match_file(*match_file);
            job.report_path = std::move(report);
            if (blame_by != "error" && blame_by != "gain")
                throw UsageError("blame_by: expected 'error' or 'gain', got '" + blame_by + "'");
            job.blame_by = blame_by == "gain" ? BlameFigure::kGain : BlameFigure::kError;
            DiffResult diff;
            {
                py::gil_scoped_release release;
                diff = run_diff_job(job);
            }
            py::dict result;
            py::list pairs, blame;
            for (const PairDiff& pair : diff.pairs) {
                py::dict entry = pair_dict(pair.pair);
                entry["a_nodes"] = pair.a_node_names;
                entry["b_nodes"] = pair.b_node_names;
                entry["b_ops"] = pair.b_op_types;
                entry["figures"] = figures_dict(pair.total);
                entry["local"] = pair.local ? py::object(figures_dict(*pair.local)) : py::object(py::none());
                if (!pair.local_error.empty()) entry["local_error"] = pair.local_error;
                pairs.append(entry);
            }
            for (std::size_t index : diff.blame) blame.append(pairs[index]);
            result["passed"] = diff.passed;
            result["pairs"] = pairs;
            result["blame"] = blame;
            result["first_divergence"] =
                diff.first_divergence ? py::object(pairs[*diff.first_divergence]) : py::object(py::none());
            result["unmatched_a"] = diff.matching.unmatched_a;
            result["unmatched_b"] = diff.matching.unmatched_b;
            result["blame_table"] = format_blame_table(diff, 10);
            return result;
        },
        "a"_a, "b"_a, "atol"_a = 1e-5, "rtol"_a = 1e-5, "backend_a"_a = "ref", "backend_b"_a = "ref", "seed"_a = 1,
        "iterations"_a = 1, "input_map"_a = py::none(), "match_file"_a = py::none(), "report"_a = py::none(),
        "blame_by"_a = "error",
        "What `polygraphy debug diff A B` does (job/diff_job.h): a dict with 'passed', 'pairs' (each with its "
        "'figures' and 'local' figures), 'blame' (the pairs, largest local error first), 'first_divergence', "
        "'unmatched_a', 'unmatched_b' and 'blame_table' (the text the CLI prints).");
}

}  // namespace polygraphy::python
