// Context-parallel sharding of attention models (`polygraphy template shard-hints` and
// `polygraphy multi-device shard`): Polygraphy's hints file and its rewrite of a single-device model
// into a multi-device one with DistCollective nodes (reduce-scatter, all-gather) that TensorRT runs.
//
// An attention layer is the canonical MatMul(Q, K) -> Softmax -> MatMul(., V) subgraph. Sharding
// reduce-scatters the hinted inputs along their sequence dimension, all-gathers each layer's K and V
// (and Q when hinted), and all-gathers the hinted outputs unless some Q was gathered. A sequence
// dimension other than the first gets a Transpose before and after its collective, so the collective
// always works on dimension 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// A tensor to reduce-scatter (a hint input) or all-gather (a hint output): Polygraphy's ShardTensor.
struct ShardTensor {
    std::string name;             ///< tensor name in the model
    int64_t seq_len_idx = 0;      ///< the dimension that is the sequence length
    std::optional<int64_t> rank;  ///< the tensor's rank, when the model does not declare it
};

/// One attention layer to shard: Polygraphy's AttentionLayerHint.
struct AttentionLayerHint {
    std::string q;          ///< the layer's Q tensor (first input of its first MatMul)
    bool gather_kv = true;  ///< all-gather K and V
    bool gather_q = false;  ///< all-gather Q (the model then stays single-device at its outputs)
};

/// The hints file: Polygraphy's ShardHints, JSON with "polygraphy_class" markers.
struct ShardHints {
    std::string parallelism = "CP";                    ///< only context parallelism ("CP") exists
    int64_t group_size = 0;                            ///< GPUs the model runs on; 0: all of them
    int64_t root = 0;                                  ///< root rank of the collectives
    std::vector<int64_t> groups;                       ///< NCCL group indices; empty: all ranks, no grouping
    std::vector<AttentionLayerHint> attention_layers;  ///< the layers to shard
    std::vector<ShardTensor> inputs;                   ///< tensors to reduce-scatter
    std::vector<ShardTensor> outputs;                  ///< tensors to all-gather at the end
    int64_t k_seq_len_idx = 0;                         ///< sequence dimension of every K
    int64_t v_seq_len_idx = 0;                         ///< sequence dimension of every V
    std::optional<int64_t> kv_rank;                    ///< rank of K and V when the model does not declare it
    std::string reduce_scatter_reduce_op = "max";      ///< sum, prod, min, max or avg
};

/// The reduce operations a reduce-scatter may use (Polygraphy's choices).
extern const std::vector<std::string> kShardReduceOps;

/// Reads a hints file's text. FormatError "<source>: ..." for JSON errors, a missing or mistyped
/// field, an unknown field or "polygraphy_class", a parallelism other than CP, an unknown reduce op,
/// and negative group sizes, roots, ranks or sequence indices.
ShardHints shard_hints_from_json(std::string_view text, const std::string& source);

/// The hints as Polygraphy's `template shard-hints` writes them (json.dumps, indent 4, markers).
std::string shard_hints_to_json(const ShardHints& hints);

/// One canonical attention layer of the top-level graph.
struct AttentionLayer {
    std::string q;                  ///< the first MatMul's first input
    std::string k;                  ///< the first MatMul's second input
    std::string v;                  ///< the second MatMul's second input
    std::size_t first_matmul = 0;   ///< node index of MatMul(Q, K)
    std::size_t softmax = 0;        ///< node index of the Softmax
    std::size_t second_matmul = 0;  ///< node index of MatMul(., V)
};

/// Every MatMul -> Softmax -> MatMul of the top-level graph whose inner tensors nothing else reads,
/// in node order.
std::vector<AttentionLayer> find_attention_layers(const onnx::ModelProto& model);

/// Options of suggest_shard_hints(): the flags of `template shard-hints`.
struct ShardHintOptions {
    std::string parallelism = "CP";      ///< --parallelism
    int64_t root = 0;                    ///< --root
    int64_t gpus = 0;                    ///< --gpus (the hints' group_size)
    std::vector<int64_t> groups;         ///< --groups
    std::string cp_type = "native";      ///< --cp-type: native (gather K and V), ring_attention, fused
    bool suggest_io = true;              ///< false: --no-suggest-io
    int64_t input_seq_len_idx = 0;       ///< --i-idx
    int64_t output_seq_len_idx = 0;      ///< --o-idx
    int64_t k_seq_len_idx = 0;           ///< --k-idx
    int64_t v_seq_len_idx = 0;           ///< --v-idx
    std::optional<int64_t> input_rank;   ///< --i-rank
    std::optional<int64_t> output_rank;  ///< --o-rank
    std::optional<int64_t> kv_rank;      ///< --kv-rank
    std::string scatter_op = "max";      ///< --scatter-op
};

/// The hints Polygraphy's template suggests: one layer per attention layer (Q gathered never, K and
/// V with the native CP type), and, unless suggest_io is off, the graph inputs each layer depends on
/// and the graph outputs that depend on it, each once, in the order the layers reach them. A
/// tensor's sequence index is that of its dim named "sequence_length" or "seq_len", else the
/// option's; its rank is the declared one, else the option's. The KV rank is the first layer's K
/// (else V) rank. UsageError for an unknown parallelism, CP type or reduce op.
ShardHints suggest_shard_hints(const onnx::ModelProto& model, const ShardHintOptions& options);

/// What shard_model() inserted.
struct ShardStats {
    std::size_t reduce_scatters = 0;  ///< DistCollective nodes with collective_operation reduce_scatter
    std::size_t all_gathers = 0;      ///< DistCollective nodes with collective_operation all_gather
    std::size_t transposes = 0;       ///< Transposes around collectives on another dimension than 0
};

/// Polygraphy's `multi-device shard`. Each hint input T is reduce-scattered (T -> DistCollective ->
/// "T_md", whose readers were T's); then each hinted layer's Q (gather_q), K and V (gather_kv) are
/// all-gathered (the producer of T now writes "T_md", which an all-gather turns back into T), each
/// tensor once; then, when no Q was gathered, each hint output. Collectives are named
/// "DistCollective_<n>" in that order, with attributes collective_operation, reduce_op (all-gather:
/// "sum"), root, group_size and groups; a sequence index n > 0 puts Transposes swapping dims 0 and n
/// ("TransposePre_/TransposePost_<collective>") around it. Then cleanup() and toposort().
/// ModelError naming the hint for a hints file that does not fit the model: a tensor that is not in
/// the graph, a tensor listed twice, a layer whose Q is the Q of no attention layer, a gathered tensor
/// that nothing computes (a graph input not reduce-scattered, an initializer), a sequence index
/// outside the tensor's rank, or one above 0 on a tensor of unknown rank without a "rank" hint.
ShardStats shard_model(onnx::ModelProto& model, const ShardHints& hints);

}  // namespace polygraphy
