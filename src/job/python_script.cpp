// `template onnx-gs -o edit.py`: the Python twin of onnx_edit_program() (program.cpp).
#include <variant>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/job/script.h"

namespace polygraphy {
namespace {

std::string python_bool(bool value) {
    return value ? "True" : "False";
}

// The loader chain as polygraphy.backend.onnx loaders: an expression, and the names it imports.
std::string python_loader(const ModelJob& model, std::vector<std::string>& imports) {
    std::string loader = "OnnxFromPath(" + python_repr(model.path);
    if (model.external_data_dir) loader += ", external_data_dir=" + python_repr(*model.external_data_dir);
    if (model.ignore_external_data) loader += ", ignore_external_data=True";
    loader += ")";
    imports.push_back("OnnxFromPath");
    bool fp16 = false;
    for (const ModelStep& step : model.steps) {
        if (const auto* outputs = std::get_if<ModifyOutputsStep>(&step)) {
            loader = "ModifyOutputs(" + loader;
            if (!outputs->outputs.empty()) loader += ", outputs=" + python_list_repr(outputs->outputs);
            if (!outputs->exclude_outputs.empty())
                loader += ", exclude_outputs=" + python_list_repr(outputs->exclude_outputs);
            loader += ")";
            imports.push_back("ModifyOutputs");
        } else if (const auto* convert = std::get_if<ConvertToFp16Step>(&step)) {
            fp16 = true;
            loader = "(lambda: convert_to_fp16(" + loader +
                     "(), keep_io_types=" + python_bool(convert->options.keep_io_types);
            if (!convert->options.node_block_list.empty())
                loader += ", node_block_list=" + python_list_repr(convert->options.node_block_list);
            if (!convert->options.op_block_list.empty())
                loader += ", op_block_list=" + python_list_repr(convert->options.op_block_list);
            if (convert->options.target == DataType::kBFloat16) loader += ", bf16=True";
            loader += "))";
        } else if (std::holds_alternative<InferShapesStep>(step)) {
            throw UnsupportedError(
                "The Python template cannot infer shapes yet (the bindings have no shape inference): leave out "
                "--shape-inference, or write a C++ program (-o edit.cpp)");
        } else {
            throw UnsupportedError("The Python template cannot save the model before editing it");
        }
    }
    if (fp16) imports.push_back("convert_to_fp16");
    return loader;
}

}  // namespace

std::string onnx_edit_python_script(const ModelJob& model, const std::string& output_model_path,
                                    const std::vector<std::string>& header_comment) {
    std::vector<std::string> imports;
    const std::string loader = python_loader(model, imports);
    imports.push_back("save_onnx");
    std::string script = "#!/usr/bin/env python3\n";
    for (const std::string& line : header_comment) script += line.empty() ? "#\n" : "# " + line + "\n";
    script += "from polygraphy.backend.onnx import ";
    for (std::size_t i = 0; i < imports.size(); ++i) script += (i ? ", " : "") + imports[i];
    script += "\nfrom polygraphy.logger import G_LOGGER\n\n";
    script += "model = " + loader + "()\n";
    script +=
        "G_LOGGER.info(f\"Loaded a graph of {len(model.nodes)} nodes\")\n"
        "\n"
        "# To walk over the nodes (Node views: name, op, domain, inputs, outputs, attrs, set_attr()):\n"
        "#\n"
        "# for node in model.nodes:\n"
        "#     G_LOGGER.info(f\"Node: {node.name}, Op: {node.op}\")\n"
        "#\n"
        "# The edits of `surgeon`: model.add_node(op, inputs, outputs), model.remove_node(name),\n"
        "# model.insert_node(op, inputs, outputs), model.set_outputs(names), model.fold_constants(),\n"
        "# model.extract(inputs, outputs).\n"
        "#\n"
        "# TIP: You may want to clean up and topologically sort the graph before saving:\n"
        "#\n"
        "# model.cleanup()\n"
        "# model.toposort()\n";
    script += "save_onnx(model, " + python_repr(output_model_path) + ")\n";
    script += "G_LOGGER.info(" + python_repr("Saved the edited model to " + output_model_path) + ")\n";
    return script;
}

}  // namespace polygraphy
