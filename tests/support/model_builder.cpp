#include "model_builder.h"

#include "polygraphy/backend/onnx/tensor_proto.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "polygraphy/common/exception.h"
#include "build_paths.h"

namespace polygraphy::testing {
namespace {

void set_type(onnx::ValueInfoProto& value_info, DataType dtype, const DynShape* shape) {
    auto* tensor_type = value_info.mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(dtype_to_onnx(dtype));
    if (!shape) return;
    auto* proto_shape = tensor_type->mutable_shape();
    for (const Dim& dim : *shape) {
        auto* proto_dim = proto_shape->add_dim();
        if (!dim.is_dynamic())
            proto_dim->set_dim_value(dim.value);
        else if (!dim.param.empty())
            proto_dim->set_dim_param(dim.param);
    }
}

// Raw little-endian encoding (strings in string_data), enough for the builder's initializers.
onnx::TensorProto encode_tensor(const Tensor& tensor, const std::string& name) {
    onnx::TensorProto proto;
    proto.set_name(name);
    proto.set_data_type(dtype_to_onnx(tensor.dtype()));
    for (int64_t dim : tensor.shape()) proto.add_dims(dim);
    if (tensor.dtype() == DataType::kInt4 || tensor.dtype() == DataType::kUInt4) {
        return tensor_to_proto(tensor, name);  // two elements per byte in the file, one per byte in memory
    } else if (tensor.dtype() == DataType::kString) {
        for (const auto& text : tensor.strings()) proto.add_string_data(text);
    } else {
        proto.set_raw_data(std::string(static_cast<const char*>(tensor.data()), tensor.nbytes()));
    }
    return proto;
}

}  // namespace

ModelBuilder::ModelBuilder(int64_t opset, std::string graph_name) {
    model_.set_ir_version(8);
    model_.set_producer_name("polygraphy-tests");
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name(std::move(graph_name));
}

ModelBuilder& ModelBuilder::input(const std::string& name, DataType dtype, const DynShape& shape) {
    auto* value_info = model_.mutable_graph()->add_input();
    value_info->set_name(name);
    set_type(*value_info, dtype, &shape);
    return *this;
}

ModelBuilder& ModelBuilder::input(const std::string& name, DataType dtype, const Shape& shape) {
    return input(name, dtype, to_dyn_shape(shape));
}

ModelBuilder& ModelBuilder::output(const std::string& name, DataType dtype, const Shape& shape, bool known_shape) {
    auto* value_info = model_.mutable_graph()->add_output();
    value_info->set_name(name);
    const DynShape dyn = to_dyn_shape(shape);
    set_type(*value_info, dtype, known_shape ? &dyn : nullptr);
    return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, DataType dtype, const DynShape& shape) {
    auto* value_info = model_.mutable_graph()->add_output();
    value_info->set_name(name);
    set_type(*value_info, dtype, &shape);
    return *this;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const Tensor& value) {
    *model_.mutable_graph()->add_initializer() = encode_tensor(value, name);
    return *this;
}

ModelBuilder& ModelBuilder::opset_import(const std::string& domain, int64_t version) {
    auto* import = model_.add_opset_import();
    import->set_domain(domain);
    import->set_version(version);
    return *this;
}

ModelBuilder& ModelBuilder::ir_version(int64_t version) {
    model_.set_ir_version(version);
    return *this;
}

onnx::NodeProto& ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs, const std::string& name,
                                    const std::string& domain) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op_type);
    if (!name.empty()) node->set_name(name);
    if (!domain.empty()) node->set_domain(domain);
    for (const auto& input : inputs) node->add_input(input);
    for (const auto& output : outputs) node->add_output(output);
    return *node;
}

OnnxModel ModelBuilder::build() const { return std::make_shared<onnx::ModelProto>(model_); }

void ModelBuilder::save(const std::string& path) const {
    std::ofstream file(path, std::ios::binary);
    if (!model_.SerializeToOstream(&file)) throw PolygraphyException("Could not write model to " + path);
}

namespace {
onnx::AttributeProto& add_attr(onnx::NodeProto& node, const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(type);
    return *attribute;
}
}  // namespace

void set_attr(onnx::NodeProto& node, const std::string& name, int64_t value) {
    add_attr(node, name, onnx::AttributeProto::INT).set_i(value);
}
void set_attr(onnx::NodeProto& node, const std::string& name, float value) {
    add_attr(node, name, onnx::AttributeProto::FLOAT).set_f(value);
}
void set_attr(onnx::NodeProto& node, const std::string& name, const std::string& value) {
    add_attr(node, name, onnx::AttributeProto::STRING).set_s(value);
}
void set_attr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
    auto& attribute = add_attr(node, name, onnx::AttributeProto::INTS);
    for (int64_t value : values) attribute.add_ints(value);
}
void set_attr(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values) {
    auto& attribute = add_attr(node, name, onnx::AttributeProto::FLOATS);
    for (float value : values) attribute.add_floats(value);
}
void set_attr(onnx::NodeProto& node, const std::string& name, const Tensor& value) {
    *add_attr(node, name, onnx::AttributeProto::TENSOR).mutable_t() = encode_tensor(value, name);
}

void save_identity_model(const std::string& path, const Shape& shape) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, shape);
    builder.node("Identity", {"x"}, {"y"}, "identity");
    builder.output("y", DataType::kFloat32, shape);
    builder.save(path);
}

onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(name);
    for (const auto& input : inputs) node.add_input(input);
    for (const auto& output : outputs) node.add_output(output);
    return node;
}

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo, float hi) {
    Tensor tensor(DataType::kFloat32, shape);
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(lo, hi);
    float* data = tensor.data_as<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = distribution(generator);
    return tensor;
}

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "polygraphy-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw PolygraphyException("Could not create a temporary directory");
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
}

std::string shell_quote(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return result;
    char buffer[4096];
    std::size_t count;
    while ((count = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, count);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

CommandResult run_program(const std::string& program, const std::vector<std::string>& args) {
    std::string command = shell_quote(program);
    for (const auto& arg : args) {
        command += ' ';
        command += shell_quote(arg);
    }
    return run_command(command);
}

CommandResult run_polygraphy(const std::vector<std::string>& args) { return run_program(POLYGRAPHY_CLI_PATH, args); }

std::string built_program(const std::string& name) {
    return (std::filesystem::path(POLYGRAPHY_CLI_PATH).parent_path() / name).string();
}

}  // namespace polygraphy::testing
