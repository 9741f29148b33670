// Writes the example's model: no_op_reshape.onnx, one Reshape whose new shape equals its input's.
//
//     make_no_op_reshape no_op_reshape.onnx                     x[1,3,5,5] -Reshape([1,3,5,5])-> y
//     make_no_op_reshape real_reshape.onnx --real-reshape       ... then a Reshape to [3,25] (not a no-op)
//     make_no_op_reshape custom_reshape.onnx --custom-op        the no-op as the module's own operator,
//                                                                polygraphy.reshape_destroyer.DestroyedReshape
#include <cstdio>
#include <exception>
#include <string>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/onnx/loader.h"

namespace {

void set_shape(onnx::ValueInfoProto& value, const std::vector<int64_t>& dims) {
    auto* type = value.mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t dim : dims) type->mutable_shape()->add_dim()->set_dim_value(dim);
}

void add_reshape(onnx::GraphProto& graph, const std::string& name, const std::string& input,
                 const std::vector<int64_t>& shape, const std::string& output) {
    onnx::TensorProto* shape_tensor = graph.add_initializer();
    shape_tensor->set_name(name + "_shape");
    shape_tensor->set_data_type(onnx::TensorProto::INT64);
    shape_tensor->add_dims(static_cast<int64_t>(shape.size()));
    for (int64_t dim : shape) shape_tensor->add_int64_data(dim);

    onnx::NodeProto* node = graph.add_node();
    node->set_name(name);
    node->set_op_type("Reshape");
    node->add_input(input);
    node->add_input(shape_tensor->name());
    node->add_output(output);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string variant = argc == 3 ? argv[2] : "";
    if (argc < 2 || argc > 3 || (argc == 3 && variant != "--real-reshape" && variant != "--custom-op")) {
        std::fprintf(stderr, "usage: %s OUTPUT.onnx [--real-reshape | --custom-op]\n", argv[0]);
        return 2;
    }
    const bool real_reshape = variant == "--real-reshape";
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("make_no_op_reshape");
    model.add_opset_import()->set_version(13);
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("no_op_reshape");

    const std::vector<int64_t> shape = {1, 3, 5, 5};
    onnx::ValueInfoProto* input = graph.add_input();
    input->set_name("x");
    set_shape(*input, shape);

    // The no-op: the new shape is a constant equal to the input's (static) shape.
    add_reshape(graph, "reshape", "x", shape, real_reshape ? "reshaped" : "y");
    if (variant == "--custom-op") {
        // The module's own operator in place of the standard Reshape (its kernel: export.cpp).
        graph.mutable_node(0)->set_op_type("DestroyedReshape");
        graph.mutable_node(0)->set_domain("polygraphy.reshape_destroyer");
        auto* custom_import = model.add_opset_import();
        custom_import->set_domain("polygraphy.reshape_destroyer");
        custom_import->set_version(1);
    }
    onnx::ValueInfoProto* output = graph.add_output();
    if (real_reshape) {
        // A Reshape that does change the shape: it stays, and the Identity-only runner refuses it.
        add_reshape(graph, "flatten", "reshaped", {3, 25}, "y");
        output->set_name("y");
        set_shape(*output, {3, 25});
    } else {
        output->set_name("y");
        set_shape(*output, shape);
    }

    try {
        polygraphy::save_onnx(model, argv[1]);  // written to a temporary file, then renamed
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::printf("Wrote %s\n", argv[1]);
    return 0;
}
