// Emits ONNX nodes the way torch.onnx.export (PyTorch 1.13, opset 17) writes them, for generated models
// that look like exported ones: scoped node names, Constant nodes for scalars and axes, and shape
// arithmetic as Shape/Gather/Unsqueeze/Concat subgraphs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::testing {

/// One dimension of a traced view()/reshape(): the name of a scalar int64 tensor computed in the graph
/// (a traced `x.size(i)`), or a fixed value.
using TracedDim = std::variant<std::string, int64_t>;

/// Adds nodes to a node list (a graph's or a local function's). A node of type Op in scope
/// "/model/layers.0/self_attn" is named "/model/layers.0/self_attn/Op", then "..._1", "..._2" for the
/// next ones of that type in that scope; its outputs are "<node name>_output_<i>", as the exporter
/// names them.
class ExportGraph {
public:
    /// Emits into `nodes`, which must outlive this object.
    explicit ExportGraph(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes) : nodes_(nodes) {}

    /// A node of `op_type` (in `domain`, "" for ONNX) with `output_count` outputs. The reference stays
    /// valid while nodes are added (protobuf keeps elements in place), so attributes may be set on it.
    onnx::NodeProto& node(const std::string& scope, const std::string& op_type, const std::vector<std::string>& inputs,
                          int output_count = 1, const std::string& domain = "");
    /// node() with one output, returning that output's name.
    std::string op(const std::string& scope, const std::string& op_type, const std::vector<std::string>& inputs);

    /// Constant nodes: a float32 and an int64 scalar, and a 1-D int64 tensor.
    /// @{
    std::string scalar(const std::string& scope, float value);
    std::string scalar(const std::string& scope, int64_t value);
    std::string ints(const std::string& scope, const std::vector<int64_t>& values);
    /// @}

    /// `x.size(index)` as a scalar int64: Shape, Constant index, Gather.
    std::string dim(const std::string& scope, const std::string& x, int64_t index);
    /// Unsqueeze with its axes as a Constant input (opset 13 and later).
    std::string unsqueeze(const std::string& scope, const std::string& x, const std::vector<int64_t>& axes);
    /// `x.view(dims...)`: each traced dim unsqueezed, each fixed one a Constant, Concat, Reshape.
    std::string reshape(const std::string& scope, const std::string& x, const std::vector<TracedDim>& dims);
    /// Transpose with `perm`.
    std::string transpose(const std::string& scope, const std::string& x, const std::vector<int64_t>& perm);
    /// `x[..., start:end]` along `axis` as Slice with Constant starts, ends and axes; a traced bound is the
    /// name of a 1-D int64 tensor, a fixed one a value.
    std::string slice(const std::string& scope, const std::string& x, const TracedDim& start, const TracedDim& end,
                      int64_t axis);

    /// Renames `output`, which must be the first output of the last node added, to `name` (a graph output's
    /// or a function's result name). Throws InternalError otherwise.
    void rename_last_output(const std::string& output, const std::string& name);

private:
    std::string bound(const std::string& scope, const TracedDim& value);

    google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes_;
    std::map<std::string, int> used_names_;  ///< "<scope>/<op>" -> nodes named so far
};

}  // namespace polygraphy::testing
