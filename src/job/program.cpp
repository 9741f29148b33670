// The printer of a RunJob: the steps of run_job() (run_job.cpp), in the same order, as C++ text.
#include <filesystem>
#include <utility>

#include "common/aggregate_fields.h"
#include "job/job_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/job/saved_data.h"
#include "polygraphy/job/script.h"

namespace polygraphy {
namespace {

// "a, b, c": the designated initializers of an options struct.
std::string join_fields(const std::vector<std::string>& fields) {
    std::string text;
    for (const auto& field : fields) text += (text.empty() ? "" : ", ") + field;
    return text;
}

using job_detail::ModelUse;
using job_detail::Overloaded;

void print_logging(Script& script, const LoggingJob& logging) {
    static const std::pair<Severity, const char*> kNames[] = {{Severity::kUltraVerbose, "kUltraVerbose"},
                                                              {Severity::kSuperVerbose, "kSuperVerbose"},
                                                              {Severity::kExtraVerbose, "kExtraVerbose"},
                                                              {Severity::kVerbose, "kVerbose"},
                                                              {Severity::kInfo, "kInfo"},
                                                              {Severity::kStart, "kStart"},
                                                              {Severity::kFinish, "kFinish"},
                                                              {Severity::kWarning, "kWarning"},
                                                              {Severity::kError, "kError"},
                                                              {Severity::kCritical, "kCritical"},
                                                              {Severity::kSilent, "kSilent"}};
    // Always written: the library is silent until a program enables logging, the command is not.
    for (const auto& [severity, name] : kNames)
        if (severity == logging.severity)
            script.append_prefix(std::string("logger().set_severity(Severity::") + name + ");");
    if (logging.log_file) script.append_prefix("logger().set_log_file(" + Script::quote(*logging.log_file) + ");");
}

// Only options that differ from the defaults are written, as designated initializers.
std::string print_fp16_options(const Fp16Options& options) {
    static_assert(aggregate_field_count<Fp16Options>() == 4,
                  "print_fp16_options prints every field of Fp16Options: print the new one");
    const Fp16Options defaults;
    std::vector<std::string> fields;
    if (options.keep_io_types != defaults.keep_io_types)
        fields.push_back(std::string(".keep_io_types = ") + (options.keep_io_types ? "true" : "false"));
    if (!options.op_block_list.empty())
        fields.push_back(".op_block_list = " + Script::string_vector(options.op_block_list));
    if (!options.node_block_list.empty())
        fields.push_back(".node_block_list = " + Script::string_vector(options.node_block_list));
    if (options.target != defaults.target) fields.push_back(".target = DataType::kBFloat16");
    return fields.empty() ? "" : ", Fp16Options{" + join_fields(fields) + "}";
}

// The loader chain of build_model_loader(); returns the variable holding its last link.
std::string print_model_loader(Script& script, const ModelJob& model) {
    script.add_include("polygraphy/backend/onnx/loader.h");
    std::string expression = "OnnxLoader(OnnxFromPath(" + Script::quote(model.path);
    if (model.external_data_dir || model.ignore_external_data)
        expression +=
            ", " + (model.external_data_dir ? Script::quote(*model.external_data_dir) : std::string("std::nullopt"));
    if (model.ignore_external_data) expression += ", true";
    std::string name = script.add_loader(expression + "))", "load_onnx");
    const auto extend_with = [&](const std::string& statement, const std::string& base_name) {
        script.add_include("polygraphy/backend/onnx/graph.h");
        name = script.add_loader("extend(" + name + ", [](OnnxModel& model) { " + statement + "; })", base_name);
    };
    for (const ModelStep& step : model.steps) {
        std::visit(
            Overloaded{
                [&](const InferShapesStep& infer) {
                    extend_with(std::string("infer_shapes(*model") + (infer.force_fallback ? ", true" : "") + ")",
                                "shape_inferred_onnx");
                },
                [&](const ModifyOutputsStep& modify) {
                    const std::string outputs = modify.outputs.empty()       ? "std::vector<std::string>{}"
                                                : modify.outputs == kMarkAll ? "kMarkAll"
                                                                             : Script::string_vector(modify.outputs);
                    std::string code = "OnnxLoader(ModifyOutputs(" + name + ", " + outputs;
                    if (!modify.exclude_outputs.empty()) code += ", " + Script::string_vector(modify.exclude_outputs);
                    name = script.add_loader(code + "))", "modified_onnx");
                },
                [&](const ConvertToFp16Step& convert) {
                    extend_with("convert_to_fp16(*model" + print_fp16_options(convert.options) + ")", "fp16_onnx");
                },
                [&](const SaveOnnxStep& save) {
                    if (save.external_data)
                        extend_with("save_onnx_with_external_data(*model, " + Script::quote(save.path) +
                                        ", ExternalDataOptions{" + Script::quote(save.external_data->location) + ", " +
                                        std::to_string(save.external_data->size_threshold) + "})",
                                    "saved_onnx");
                    else
                        name = script.add_loader("OnnxLoader(SaveOnnx(" + name + ", " + Script::quote(save.path) + "))",
                                                 "saved_onnx");
                },
            },
            step);
    }
    return name;
}

std::string print_session_options(const ref::SessionOptions& options) {
    static_assert(aggregate_field_count<ref::SessionOptions>() == 5,
                  "print_session_options(ref::SessionOptions) prints every field: print the new one");
    const ref::SessionOptions defaults;
    std::vector<std::string> fields;
    if (options.num_threads != defaults.num_threads)
        fields.push_back(".num_threads = " + std::to_string(options.num_threads));
    if (options.fuse_activations != defaults.fuse_activations)
        fields.push_back(std::string(".fuse_activations = ") + (options.fuse_activations ? "true" : "false"));
    if (options.profile != defaults.profile)
        fields.push_back(std::string(".profile = ") + (options.profile ? "true" : "false"));
    if (options.plan_buffers != defaults.plan_buffers)
        fields.push_back(std::string(".plan_buffers = ") + (options.plan_buffers ? "true" : "false"));
    if (options.max_channel_block != defaults.max_channel_block)
        fields.push_back(".max_channel_block = " + std::to_string(options.max_channel_block));
    return fields.empty() ? "" : ", ref::SessionOptions{" + join_fields(fields) + "}";
}

// Only settings that differ from the defaults are written, as designated initializers.
std::string print_session_options(const onnxrt::SessionOptions& options) {
    static_assert(aggregate_field_count<onnxrt::SessionOptions>() == 7,
                  "print_session_options(onnxrt::SessionOptions) prints every field: print the new one");
    static const char* kLevels[] = {"kDisableAll", "kBasic", "kExtended", "kAll"};
    static const char* kModes[] = {"kSequential", "kParallel"};
    const onnxrt::SessionOptions defaults;
    std::vector<std::string> fields;
    if (options.providers != defaults.providers)
        fields.push_back(".providers = " + Script::string_vector(options.providers));
    if (options.intra_op_num_threads != defaults.intra_op_num_threads)
        fields.push_back(".intra_op_num_threads = " + std::to_string(options.intra_op_num_threads));
    if (options.inter_op_num_threads != defaults.inter_op_num_threads)
        fields.push_back(".inter_op_num_threads = " + std::to_string(options.inter_op_num_threads));
    if (options.graph_optimization_level != defaults.graph_optimization_level)
        fields.push_back(std::string(".graph_optimization_level = onnxrt::GraphOptimizationLevel::") +
                         kLevels[static_cast<int>(options.graph_optimization_level)]);
    if (options.execution_mode != defaults.execution_mode)
        fields.push_back(std::string(".execution_mode = onnxrt::ExecutionMode::") +
                         kModes[static_cast<int>(options.execution_mode)]);
    if (options.optimized_model_path)
        fields.push_back(".optimized_model_path = " + Script::quote(*options.optimized_model_path));
    if (!options.custom_op_libraries.empty())
        fields.push_back(".custom_op_libraries = " + Script::string_vector(options.custom_op_libraries));
    return fields.empty() ? "" : ", onnxrt::SessionOptions{" + join_fields(fields) + "}";
}

// The expression of one runner, as build_runner() makes it.
std::string print_runner(Script& script, const RunnerStep& step, const std::string& model, const ModelUse& use) {
    const auto needs_model = [&] {
        if (model.empty()) throw UsageError("An ONNX model is required, but no model file was provided");
    };
    return std::visit(
        Overloaded{
            [&](const RefRunnerStep& ref) {
                needs_model();
                script.add_include("polygraphy/backend/ref/runner.h");
                std::string ref_model = model;
                if (ref.precision == DataType::kFloat64) {
                    script.add_include("polygraphy/backend/onnx/graph.h");
                    ref_model =
                        script.add_loader("extend(" + model +
                                              ", [](OnnxModel& shared) {\n"
                                              "    auto copy = std::make_shared<onnx::ModelProto>(*shared);\n"
                                              "    convert_to_fp16(*copy, Fp16Options{.target = DataType::kFloat64});\n"
                                              "    return copy;\n"
                                              "})",
                                          "float64_onnx");
                }
                const std::string session =
                    script.add_loader("ref::SessionFromOnnx(" + ref_model + print_session_options(ref.options) + ")",
                                      "build_ref_session");
                return "std::make_unique<ref::RefRunner>(" + session + ")";
            },
            [&](const OnnxrtRunnerStep& onnxrt) {
                script.add_include("polygraphy/backend/onnxrt/runner.h");
                const std::string options = print_session_options(onnxrt.options);
                if (!use.onnxrt_file) needs_model();
                const std::string session = script.add_loader(
                    use.onnxrt_file
                        ? "onnxrt::SessionFromOnnx::from_path(" + Script::quote(*use.onnxrt_file) + options + ")"
                        : "onnxrt::SessionFromOnnx(" + model + options + ")",
                    "build_onnxrt_session");
                return "std::make_unique<onnxrt::OnnxrtRunner>(" + session + ")";
            },
            [&](const CustomRunnerStep& custom) {
                if (!custom.print) throw UnsupportedError("an extension module's runner cannot be printed as C++");
                return custom.print(script, model);
            },
        },
        step);
}

std::string print_shape(const DynShape& shape) {
    std::string code = "DynShape{";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const Dim& dim = shape[i];
        code += i ? ", " : "";
        code += !dim.is_dynamic()    ? "Dim::fixed(" + std::to_string(dim.value) + ")"
                : !dim.param.empty() ? "Dim::named(" + Script::quote(dim.param) + ")"
                                     : std::string("Dim::unknown()");
    }
    return code + "}";
}

std::string print_range(const ValRange& range) {
    return "ValRange{" + Script::number(range.min) + ", " + Script::number(range.max) + "}";
}

// The call that reads the saved inputs or results at `path` (load_saved_inputs() or
// load_saved_results() in run_job()): common's JSON loader for a JSON file, as Polygraphy's scripts
// print it, else the reader by path, which knows the other formats.
std::string print_saved_data_load(Script& script, const std::string& path, const std::string& json_loader,
                                  const std::string& reader, const std::optional<std::string>& model_path) {
    const SavedDataFormat format = saved_data_format(path);
    if (format == SavedDataFormat::kJson) {
        script.add_include("polygraphy/common/run_results.h");
        return json_loader + "(" + Script::quote(path) + ")";
    }
    script.add_include("polygraphy/job/saved_data.h");
    if ((format == SavedDataFormat::kOnnxTestData || format == SavedDataFormat::kDatasetFolder) && model_path)
        return reader + "(" + Script::quote(path) + ", " + Script::quote(*model_path) + ")";
    return reader + "(" + Script::quote(path) + ")";
}

// `loader` restricted to the job's shard (`--shard`), as build_data_loader() does.
std::string sharded(const DataLoaderJob& data, const std::string& loader) {
    if (!data.shard) return loader;
    return fmt::format("shard_data_loader({}, {}, {})", loader, data.shard->index, data.shard->count);
}

// build_data_loader().
void print_data_loader(Script& script, const DataLoaderJob& data) {
    if (!data.load_inputs_paths.empty()) {
        std::string setup = "InputList feeds;\n";
        for (const auto& path : data.load_inputs_paths)
            setup += "for (TensorMap& feed : " +
                     print_saved_data_load(script, path, "load_inputs", "load_saved_inputs", data.model_path) +
                     ") feeds.push_back(std::move(feed));\n";
        script.set_data_loader(setup, sharded(data, "data_loader_from_list(std::move(feeds))"));
        return;
    }
    static_assert(aggregate_field_count<DataLoader::Options>() == 6,
                  "the data loader's printer prints every field of DataLoader::Options: print the new one");
    const DataLoader::Options defaults;
    const DataLoader::Options& options = data.generator;
    std::string setup = "DataLoader::Options data_loader_options;\n";
    if (options.seed != defaults.seed) setup += "data_loader_options.seed = " + std::to_string(options.seed) + ";\n";
    if (options.iterations != defaults.iterations)
        setup += "data_loader_options.iterations = " + std::to_string(options.iterations) + ";\n";
    for (const auto& [name, range] : options.val_range)
        setup += "data_loader_options.val_range.set(" + Script::quote(name) + ", " + print_range(range) + ");\n";
    for (const auto& [name, entry] : options.input_metadata) {
        const std::string dtype =
            entry.dtype ? "dtype_from_name(" + Script::quote(dtype_name(*entry.dtype)) + ")" : "std::nullopt";
        setup += "data_loader_options.input_metadata.add(" + Script::quote(name) + ", " + dtype + ", " +
                 (entry.shape ? print_shape(*entry.shape) : std::string("std::nullopt")) + ");\n";
    }
    if (options.int_range) setup += "data_loader_options.int_range = " + print_range(*options.int_range) + ";\n";
    if (options.float_range) setup += "data_loader_options.float_range = " + print_range(*options.float_range) + ";\n";
    script.set_data_loader(setup, sharded(data, "DataLoader(data_loader_options).as_function()"));
}

// Comparator::run, then --save-outputs.
void print_inference(Script& script, const RunJob& job) {
    script.add_include("polygraphy/comparator/comparator.h");
    script.add_include("polygraphy/common/run_results.h");
    std::string code =
        "std::vector<BaseRunner*> runner_ptrs;\n"
        "for (const auto& runner : runners) runner_ptrs.push_back(runner.get());\n"
        "Comparator::RunOptions run_options;\n";
    if (job.inference.warm_up) code += "run_options.warm_up = " + std::to_string(job.inference.warm_up) + ";\n";
    if (job.inference.save_inputs_path)
        code += "run_options.save_inputs_path = " + Script::quote(*job.inference.save_inputs_path) + ";\n";
    if (job_detail::may_run_in_slices(job))
        code +=
            "// Every output of every runner is held at once here: `polygraphy run` itself runs a layer-wise\n"
            "// comparison in slices when the outputs exceed its memory budget (see run_job()).\n";
    code += "RunResults results = Comparator::run(runner_ptrs, data_loader, run_options);\n";
    if (job.save_outputs_path) code += "results.save(" + Script::quote(*job.save_outputs_path) + ");\n";
    script.append_suffix(code);
}

// build_compare_func(): statements setting up its options, then the call.
std::string print_compare_func(const CompareJob& compare, std::string& code) {
    if (compare.function == CompareJob::Function::kIndices) {
        code += "PerOutput<int64_t> index_tolerance;\n";
        for (const auto& [name, value] : compare.index_tolerance)
            code += "index_tolerance.set(" + Script::quote(name) + ", " + std::to_string(value) + ");\n";
        return std::string("compare_func::indices(index_tolerance") + (compare.fail_fast ? ", true" : "") + ")";
    }
    static const char* kStats[] = {"kElemwise", "kMax", "kMean", "kMedian", "kQuantile"};
    static_assert(aggregate_field_count<SimpleCompareOptions>() == 13,
                  "print_compare_func prints every field of SimpleCompareOptions: print the new one");
    const SimpleCompareOptions& options = compare.simple;
    code += "SimpleCompareOptions compare_options;\n";
    if (!options.check_shapes) code += "compare_options.check_shapes = false;\n";
    for (const auto& [name, value] : options.rtol)
        code += "compare_options.rtol.set(" + Script::quote(name) + ", " + Script::number(value) + ");\n";
    for (const auto& [name, value] : options.atol)
        code += "compare_options.atol.set(" + Script::quote(name) + ", " + Script::number(value) + ");\n";
    for (const auto& [name, value] : options.check_error_stat)
        code += "compare_options.check_error_stat.set(" + Script::quote(name) +
                ", ErrorStat::" + kStats[static_cast<int>(value)] + ");\n";
    for (const auto& [name, value] : options.error_quantile)
        code += "compare_options.error_quantile.set(" + Script::quote(name) + ", " + Script::number(value) + ");\n";
    if (options.infinities_compare_equal) code += "compare_options.infinities_compare_equal = true;\n";
    if (options.collect_distributions) code += "compare_options.collect_distributions = true;\n";
    if (options.collect_error_histograms) code += "compare_options.collect_error_histograms = true;\n";
    if (options.save_heatmaps)
        code += "compare_options.save_heatmaps = " + Script::quote(*options.save_heatmaps) + ";\n";
    if (options.show_heatmaps) code += "compare_options.show_heatmaps = true;\n";
    if (options.save_error_metrics_plot)
        code += "compare_options.save_error_metrics_plot = " + Script::quote(*options.save_error_metrics_plot) + ";\n";
    if (options.show_error_metrics_plot) code += "compare_options.show_error_metrics_plot = true;\n";
    if (compare.fail_fast) code += "compare_options.fail_fast = true;\n";
    return "compare_func::simple(compare_options)";
}

// The reports of run_job(): `--report` (with the graph an HTML report shows) and
// `--model-explorer-node-data`, after a comparison that may not have completed.
std::string print_reports(Script& script, const RunJob& job, const std::string& model, const ModelUse& use,
                          const std::string& divergence) {
    const CompareJob& compare = job.compare;
    std::string code;
    if (compare.report_path) {
        script.add_include("polygraphy/comparator/html_report.h");
        code += "ReportContext report_context;\n";
        if (job.model)
            code +=
                "report_context.title = " + Script::quote(std::filesystem::path(job.model->path).filename().string()) +
                ";\n";
        if (!compare.report_command.empty())
            code += "report_context.command = " + Script::quote(compare.report_command) + ";\n";
        code += "report_context.error = comparison_error;\n";
        if (job_detail::report_needs_graph(job)) {
            std::string graph_model = model + "()";
            if (!use.loaded_by_runners) {
                script.add_include("polygraphy/backend/onnx/structure.h");
                graph_model =
                    "accuracy ? onnx_structure_from_path(" + Script::quote(job.model->path) + ") : " + graph_model;
            }
            code +=
                "// The model in memory (shared: loading it again costs nothing), else its structure alone.\n"
                "const OnnxModel model = " +
                graph_model + ";\nreport_context.graph = &model->graph();\n";
        }
        code += "save_comparison_report(accuracy, " + divergence + ", report_context, " +
                Script::quote(*compare.report_path) + ");\nlogger().info(" +
                Script::quote("Saving accuracy report to " + *compare.report_path) +
                ");\nif (comparison_failure) std::rethrow_exception(comparison_failure);\n";
    }
    if (compare.model_explorer_path) {
        script.add_include("polygraphy/comparator/model_explorer.h");
        code += "save_model_explorer_node_data(accuracy, " + Script::quote(*compare.model_explorer_path) +
                ");\nlogger().info(" +
                Script::quote("Saving Model Explorer node data to " + *compare.model_explorer_path) + ");\n";
    }
    return code;
}

// --load-outputs, --postprocess, the comparison with the divergence search and the reports, --validate.
void print_comparison(Script& script, const RunJob& job, const std::string& model, const ModelUse& use) {
    script.add_include("polygraphy/comparator/comparator.h");
    std::string code;
    for (const auto& path : job.load_outputs_paths)
        code += "results.extend(" +
                print_saved_data_load(script, path, "RunResults::load", "load_saved_results",
                                      job.model ? std::optional(job.model->path) : std::nullopt) +
                ");\n";
    if (!job.postprocess.empty()) {
        if (!code.empty()) script.append_suffix(code);
        code = "PerOutput<TopK> top_k_settings;\n";
        for (const auto& [name, setting] : job.postprocess)
            code += "top_k_settings.set(" + Script::quote(name) + ", TopK{" + Script::integer(setting.k) + ", " +
                    Script::integer(setting.axis) + "});\n";
        script.append_suffix(code + "logger().start(" + Script::quote(job_detail::kApplyingTopK) +
                             ");\nComparator::postprocess(results, postprocess_func::top_k(top_k_settings));\n"
                             "logger().finish(" +
                             Script::quote(job_detail::kFinishedPostprocessing) + ");\n");
        code.clear();
    }
    if (job_compares(job)) {
        const std::string compare_func = print_compare_func(job.compare, code);
        const std::string compare_call =
            "Comparator::compare_accuracy(results, " + compare_func + (job.compare.fail_fast ? ", true" : "") + ")";
        if (job.compare.report_path)
            // A comparison that cannot complete is reported, then rethrown.
            code +=
                "AccuracyResult accuracy;\n"
                "std::exception_ptr comparison_failure;\n"
                "std::string comparison_error;\n"
                "try {\n"
                "    accuracy = " +
                compare_call +
                ";\n"
                "} catch (const PolygraphyException& error) {\n"
                "    comparison_failure = std::current_exception();\n"
                "    comparison_error = error.what();\n"
                "}\n";
        else
            code += "const AccuracyResult accuracy = " + compare_call + ";\n";
        code += "success = static_cast<bool>(accuracy) && success;\n";
        if (job.compare.suggest_tolerances) {
            script.add_include("polygraphy/comparator/dataset_summary.h");
            const std::string rate = Script::number(*job.compare.suggest_tolerances);
            code +=
                "for (const auto& pair : accuracy.pairs)\n"
                "    logger().info(format_suggested_tolerances(pair, suggest_tolerances(pair, " +
                rate + "), " + rate + "));\n";
        }
        std::string divergence = "std::nullopt";
        if (job.model) {
            script.add_include("polygraphy/comparator/divergence.h");
            code +=
                "std::optional<Divergence> divergence;\n"
                "if (!accuracy) {\n"
                "    divergence = find_first_divergence(" +
                model +
                "()->graph(), accuracy);\n"
                "    if (divergence) logger().error(describe_divergence(*divergence));\n"
                "}\n";
            divergence = "divergence";
        }
        code += print_reports(script, job, model, use, divergence);
    }
    if (job.validate) code += "success = Comparator::validate(results, true, true) && success;\n";
    if (!code.empty()) script.append_suffix(code);
}

}  // namespace

std::string onnx_edit_program(const ModelJob& model, const std::string& output_model_path,
                              const std::vector<std::string>& header_comment) {
    Script script;
    script.set_without_inference();
    script.append_prefix("logger().set_severity(Severity::kInfo);  // the library logs nothing until told to");
    script.add_include("polygraphy/backend/onnx/graph.h");
    const std::string loader = print_model_loader(script, model);
    script.append_suffix(
        "OnnxModel model = " + loader +
        "();\n"
        "onnx::GraphProto& graph = *model->mutable_graph();\n"
        "logger().info(\"Loaded a graph of \" + std::to_string(graph.node_size()) + \" nodes\");\n"
        "\n"
        "// To edit inputs or outputs: graph.mutable_input(), graph.mutable_output() (onnx::ValueInfoProto).\n"
        "//\n"
        "// To walk over the nodes:\n"
        "//\n"
        "// for (const onnx::NodeProto& node : graph.node())\n"
        "//     logger().info(\"Node: \" + node.name() + \", Op: \" + node.op_type());\n"
        "//\n"
        "// The graph API (polygraphy/backend/onnx/graph.h) has the edits of `surgeon`: insert_node(*model, node),\n"
        "// extract_subgraph(*model, inputs, outputs), fold_constants(*model), cleanup(*model), toposort(*model),\n"
        "// override_input_shapes(*model, shapes), convert_to_fp16(*model, options).\n"
        "//\n"
        "// TIP: You may want to clean up and topologically sort the graph before saving:\n"
        "//\n"
        "// cleanup(*model);\n"
        "// toposort(*model);\n"
        "save_onnx(*model, " +
        Script::quote(output_model_path) + ");\nlogger().info(" +
        Script::quote("Saved the edited model to " + output_model_path) + ");\n");
    return script.to_string(header_comment);
}

std::string job_program(const RunJob& job, const std::vector<std::string>& header_comment) {
    // The summary's fingerprints come from the job itself (job/run_summary.cpp), which a program
    // does not hold.
    if (job.compare.summary_path) throw UnsupportedError("--save-summary cannot be printed as a C++ program");
    Script script;
    print_logging(script, job.logging);
    const ModelUse use = job_detail::plan_model_use(job);
    std::string model;
    if (job.model && use.needed) {
        model = print_model_loader(script, *job.model);
        if (use.shared)
            script.append_loader_statement(model + " = load_once(" + model +
                                           ");  // loaded once, shared by the runners and the divergence search");
    }
    for (const RunnerStep& step : job.runners) script.add_runner(print_runner(script, step, model, use));
    print_data_loader(script, job.data_loader);
    print_inference(script, job);
    print_comparison(script, job, model, use);
    return script.to_string(header_comment);
}

}  // namespace polygraphy
