// Graph passes on ONNX models: extract and insert (extract.cpp), clean up and sort (cleanup.cpp),
// infer shapes (shape_inference.cpp), fold constants (fold_constants.cpp), convert to float16
// (fp16.cpp), save with external data (external_data.cpp).
//
// All functions work on the top-level graph of an onnx::ModelProto. Nodes with subgraphs
// (If/Loop/Scan bodies) are kept whole: the outer-scope tensors their bodies read count as inputs
// of the node that owns the body. Passes that compute values (folding, the shape-inference
// fallback) run them on a GraphEvaluator (evaluator.h): the one given, else the default (the
// built-in runtime). Errors are PolygraphyException subclasses with one-line messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/onnx/evaluator.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/ordered_map.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// A boundary tensor of a subgraph to extract: its name and, optionally, the dtype and shape it
/// should be declared with (nullopt: "auto", taken from the model, inferring shapes when unknown).
struct SubgraphTensor {
    std::string name;               ///< tensor name in the graph
    std::optional<DataType> dtype;  ///< declared dtype; nullopt: from the model
    std::optional<DynShape> shape;  ///< declared shape; nullopt: from the model
};

/// Returns a new model whose graph computes `outputs` from `inputs`: only the nodes needed between
/// them, only the initializers those nodes read, `inputs` as graph inputs (in the given order, even
/// when unused) and `outputs` as graph outputs. Model metadata, opsets and functions are kept; the
/// original is not modified. A tensor given as input that was an initializer becomes a real input.
/// Throws PolygraphyException when a name is not a tensor of the graph (with a did-you-mean hint),
/// ModelError when the inputs do not cut the graph (a needed node reads a graph input that is not in
/// `inputs`: the message names the node and the tensor), and PolygraphyException when an input's
/// dtype is "auto" and cannot be found even with shape inference. MalformedNodeError (node_check.h)
/// for nodes that do not fit their operators.
OnnxModel extract_subgraph(const onnx::ModelProto& model, const std::vector<SubgraphTensor>& inputs,
                           const std::vector<SubgraphTensor>& outputs);

/// Inserts `node` (Polygraphy's `surgeon insert`): its inputs and outputs name tensors of the graph,
/// and whatever computed those outputs from those inputs is replaced. An output that is not also an
/// input loses its old producer (whose output is renamed "<name>_polygraphy_surgeon_insert_replaced");
/// an output that is also an input becomes a new tensor "<name>_polygraphy_surgeon_insert_output"
/// whose readers are rewired to it, except for a graph output, which keeps its name while the
/// tensor read as input is renamed. The node goes after the producers of its inputs; then cleanup()
/// and toposort() run. Throws PolygraphyException "Tensor: <name> does not exist in the model."
/// (with a did-you-mean hint) for an unknown name, and what toposort() throws.
void insert_node(onnx::ModelProto& model, onnx::NodeProto node);

/// Options of cleanup().
struct CleanupOptions {
    /// Also remove graph inputs no node reads (Polygraphy's sanitize --cleanup does this); inputs
    /// that are graph outputs are kept.
    bool remove_unused_graph_inputs = false;
};

/// What cleanup() removed.
struct CleanupStats {
    std::size_t nodes_removed = 0;         ///< unused nodes
    std::size_t initializers_removed = 0;  ///< unused initializers
    std::size_t inputs_removed = 0;        ///< unused graph inputs (with remove_unused_graph_inputs)
    std::size_t value_infos_removed = 0;   ///< value_info entries of removed tensors
};

/// Removes nodes whose outputs no graph output depends on, initializers nothing reads, value_info
/// entries for tensors that no longer exist (or that duplicate graph inputs/outputs), and, when asked,
/// unused graph inputs. Node order is kept. Never throws for well-formed protos.
CleanupStats cleanup(onnx::ModelProto& model, const CleanupOptions& options = {});

/// Reorders the nodes so every node comes after the producers of its inputs (stable: a sorted graph
/// keeps its order). Inputs nothing produces are treated as available (outer scope). Throws
/// ModelError "Graph contains a cycle through nodes 'a' -> 'b' -> 'a'" on a cycle, and ModelError
/// when two nodes produce the same tensor.
void toposort(onnx::ModelProto& model);

/// Options of constant folding (`surgeon sanitize --fold-constants`).
struct FoldConstantsOptions {
    /// Passes of folding + shape inference; nullopt: repeat until a pass changes nothing.
    std::optional<int> num_passes;
    /// Results larger than this many bytes are not folded (the node stays); nullopt: no limit.
    std::optional<std::size_t> size_threshold;
    /// Fold Shape/Size of tensors whose shape is static (after shape inference), and Gathers of
    /// static dims from the Shape of a partly dynamic tensor, so shape-only subgraphs such as
    /// Shape->Gather->Concat become constants.
    bool fold_shapes = true;
    /// Run shape inference (infer_shapes) before each pass.
    bool infer_shapes = true;
    /// With infer_shapes: also before the first pass (false when the caller has just inferred them).
    bool infer_shapes_before_first_pass = true;
    /// When a node fails to evaluate, warn and leave it (true) or rethrow (false).
    bool error_ok = true;
    /// Evaluates the nodes (and infers shapes); nullptr: default_graph_evaluator().
    const GraphEvaluator* evaluator = nullptr;
};

/// What constant folding did.
struct FoldConstantsStats {
    int passes = 0;                ///< passes run
    std::size_t nodes_folded = 0;  ///< nodes replaced by initializers (Constant nodes included)
};

/// Evaluates every node whose inputs are all constant (initializers that are not graph inputs,
/// Constant nodes, earlier folded results) on the evaluator, one node at a time (evaluate_node()),
/// and replaces it by initializers holding its outputs; operators the evaluator does not support
/// stay; then removes what became unused (cleanup without touching
/// graph inputs). Random ops and nodes with subgraphs are never folded. Initializers whose data is
/// external and not loaded count as non-constant.
/// The nodes that stay get origin tags (tag_node_origins(), proto_fields.h).
/// MalformedNodeError (node_check.h) for nodes that do not fit their operators.
FoldConstantsStats fold_constants(onnx::ModelProto& model, const FoldConstantsOptions& options = {});

/// Which shape inference infer_shapes used.
enum class ShapeInferenceMethod {
    kNone,     ///< nothing could be inferred (a warning was logged)
    kOnnx,     ///< libonnx's shape inference (opset <= 17, IR version <= 8)
    kRuntime,  ///< a GraphEvaluator executed the graph on generated inputs of the static input shapes
};

/// Fills graph.value_info (and the dtype/shape of graph outputs that lack them) with inferred types.
/// Uses libonnx's inference where it knows the model's IR version and opset; otherwise (or when it
/// fails) runs the graph on `evaluator` (nullptr: default_graph_evaluator(), the built-in runtime)
/// with generated inputs of the declared static shapes
/// (dims that differ between two runs with different input values are left dynamic). Never throws
/// because an IR version or opset is unknown to libonnx: when nothing applies it logs a warning and
/// returns kNone. Throws MalformedNodeError (node_check.h) for nodes that do not fit their operators,
/// which libonnx's inference functions cannot take. Existing value_info entries for tensors that are inferred are
/// replaced. `force_runtime` skips libonnx (Polygraphy's --force-fallback-shape-inference).
ShapeInferenceMethod infer_shapes(onnx::ModelProto& model, bool force_runtime = false,
                                  const GraphEvaluator* evaluator = nullptr);

/// Sets the declared shapes of graph inputs, then drops stale value_info and output shapes and
/// re-infers shapes. Throws PolygraphyException for a name that is not a graph input (or is an
/// initializer) and for a shape whose rank differs from the declared rank of that input.
void override_input_shapes(onnx::ModelProto& model, const OrderedMap<DynShape>& shapes);

/// The dtype and shape of every graph output of `model`, in order, when its inputs have
/// `input_shapes` (inputs not listed keep their declared shapes): libonnx's shape inference on a
/// copy without the large weights, so the model is neither changed nor run. Outputs it cannot
/// infer, and all of them where libonnx does not know the model's IR version or opset, have no
/// shape (never the runtime fallback, which would run the whole graph), and so have all of them when
/// a node does not fit its operator (node_check.h). Never throws for what
/// inference cannot do.
TensorMetadata infer_output_metadata(const onnx::ModelProto& model, const OrderedMap<Shape>& input_shapes);

/// Options of convert_to_fp16() (`--fp-to-fp16`, `--fp-to-bf16`).
struct Fp16Options {
    /// Keep float32 graph inputs and outputs (Casts at the boundary); false: declare them in the target type.
    bool keep_io_types = true;
    /// Op types to keep in float32, in addition to kFp16DefaultBlockList.
    std::vector<std::string> op_block_list = {};
    /// Nodes (by name) to keep in float32: onnxconverter-common's `node_block_list`. A name that no
    /// node of the graph has is a UsageError.
    std::vector<std::string> node_block_list = {};
    /// The type: DataType::kFloat16 or DataType::kBFloat16; or DataType::kFloat64, a reference truer than
    /// float32 (`--ref-precision float64`), where kFp16DefaultBlockList does not apply (only quantization
    /// ops stay in float32).
    DataType target = DataType::kFloat16;
};

/// Ops that compute in float32 after conversion (fp16 unsupported or too inaccurate for them).
extern const std::vector<std::string> kFp16DefaultBlockList;

/// What convert_to_fp16() changed.
struct Fp16Stats {
    std::size_t initializers_converted = 0;  ///< float32 initializers now 16-bit
    std::size_t nodes_in_fp32 = 0;           ///< blocked nodes (kept in float32)
    std::size_t casts_inserted = 0;          ///< Cast nodes added at float32/16-bit boundaries
    std::size_t casts_removed = 0;           ///< Casts that became no-ops or cancelled a Cast before them
};

/// Converts float32 weights and activations to float16 or bfloat16 (Polygraphy's --fp-to-fp16;
/// onnxconverter-common's block lists). Types come from infer_shapes(). Blocked nodes (the default op
/// list, the extra ops, the named nodes, other domains, nodes with subgraphs) stay in float32 with
/// Casts around them; tensors read by subgraph bodies stay float32. A tensor crossing between the
/// two precisions gets one Cast, shared by all its readers. Cast(to=float) becomes a Cast to the
/// target, Constant and ConstantOfShape values are converted. Then Casts that do nothing (to the type
/// their input has) or undo a widening Cast before them (16-bit to float32 and back) are removed.
/// Initializers that are also graph inputs keep their type. The model's nodes get origin tags
/// (tag_node_origins(), proto_fields.h); the Casts it inserts get none.
Fp16Stats convert_to_fp16(onnx::ModelProto& model, const Fp16Options& options = {});

/// The block lists of convert_to_fp16() as a JSON file, in the shape onnxconverter-common's
/// convert_float_to_float16() takes: {"node_block_list": [names], "op_block_list": [op types]}.
struct Fp16BlockLists {
    std::vector<std::string> node_block_list;  ///< nodes kept in float32, by name
    std::vector<std::string> op_block_list;    ///< op types kept in float32
};

/// Reads a block-list file (either list may be missing; other keys are ignored). FormatError naming
/// the file for what is not such an object; PolygraphyException when it cannot be read.
Fp16BlockLists read_fp16_block_lists(const std::string& path);

/// Writes a block-list file atomically (PolygraphyException naming the path when it cannot).
void save_fp16_block_lists(const Fp16BlockLists& lists, const std::string& path);

/// Options for saving with external data (`--save-external-data`, `--external-data-size-threshold`).
struct ExternalDataOptions {
    /// File (relative to the model's folder, or a bare name) that receives the tensors' data;
    /// empty: "<model file name>.data".
    std::string location;
    /// Tensors smaller than this many bytes stay inside the model; 0: every tensor with data.
    std::size_t size_threshold = 1024;
};

/// Saves `model` with the data of its large initializers (and Constant/attribute tensors) in one
/// external file next to it. Both files are written atomically (temp file + rename); `model` itself
/// is not modified. Throws PolygraphyException naming the path on I/O failure.
void save_onnx_with_external_data(const onnx::ModelProto& model, const std::string& path,
                                  const ExternalDataOptions& options = {});

/// Every tensor name of the top-level graph (inputs, initializers, node outputs), each once.
std::vector<std::string> onnx_tensor_names(const onnx::GraphProto& graph);

}  // namespace polygraphy
