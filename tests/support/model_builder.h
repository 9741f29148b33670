// Builds small ONNX models in code, for tests, examples and benchmarks (no binary files checked in).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy::testing {

/// Example:
///     ModelBuilder builder(17);
///     builder.input("x", DataType::kFloat32, {1, 3});
///     builder.node("Relu", {"x"}, {"y"});
///     builder.output("y", DataType::kFloat32, {1, 3});
///     OnnxModel model = builder.build();
class ModelBuilder {
public:
    explicit ModelBuilder(int64_t opset = 17, std::string graph_name = "test_graph");

    ModelBuilder& input(const std::string& name, DataType dtype, const DynShape& shape);
    ModelBuilder& input(const std::string& name, DataType dtype, const Shape& shape);
    /// Output with unknown shape when `shape` is empty and `known_shape` false.
    ModelBuilder& output(const std::string& name, DataType dtype, const Shape& shape, bool known_shape = true);
    ModelBuilder& output(const std::string& name, DataType dtype, const DynShape& shape);
    ModelBuilder& initializer(const std::string& name, const Tensor& value);
    /// Adds an opset import for another domain.
    ModelBuilder& opset_import(const std::string& domain, int64_t version);
    ModelBuilder& ir_version(int64_t version);

    /// Adds a node; the returned reference stays valid until the next node() call.
    onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "",
                          const std::string& domain = "");

    OnnxModel build() const;
    /// Serializes to `path` (tests write into temporary folders).
    void save(const std::string& path) const;

    onnx::ModelProto& proto() { return model_; }

private:
    onnx::ModelProto model_;
};

void set_attr(onnx::NodeProto& node, const std::string& name, int64_t value);
void set_attr(onnx::NodeProto& node, const std::string& name, float value);
void set_attr(onnx::NodeProto& node, const std::string& name, const std::string& value);
void set_attr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_attr(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values);
void set_attr(onnx::NodeProto& node, const std::string& name, const Tensor& value);

/// A node outside any graph: `op` (default domain) reading `inputs` and writing `outputs`.
onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "");

/// A float32 tensor of `shape` with deterministic pseudo-random values in [lo, hi) (for weights).
Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

/// Saves to `path` the smallest runnable model: float32 `y = Identity(x)` of `shape`, node `identity`
/// (for tests of runners and tools that need any model at all).
void save_identity_model(const std::string& path, const Shape& shape);

/// A fresh empty temporary directory, removed by the destructor.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

/// Result of running the polygraphy CLI in a child process (tests of tools).
struct CommandResult {
    int exit_code = -1;
    std::string output;  ///< stdout and stderr together
};
/// Runs `polygraphy <args>` (the built CLI) and captures its output. Arguments are shell-quoted.
CommandResult run_polygraphy(const std::vector<std::string>& args);
/// Runs the program `program` (a path) with `args` (shell-quoted) and captures its output.
CommandResult run_program(const std::string& program, const std::vector<std::string>& args);
/// The path of a program built into the same folder as the polygraphy CLI (the model generators).
std::string built_program(const std::string& name);
/// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text);
/// Runs an arbitrary shell command and captures its output.
CommandResult run_command(const std::string& command);

}  // namespace polygraphy::testing
