// 2:4 structured sparsity of ONNX weights: which initializers it applies to, whether they follow
// it, and pruning them to it (`polygraphy inspect sparsity`, `surgeon prune`; Polygraphy's
// tools/sparse.py SparsityPruner).
//
// 2:4 means: along the weight's reduction axis, every aligned group of four values holds at least
// two zeros. Only the top-level graph is walked; the log lines are Polygraphy's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// An initializer that 2:4 sparsity applies to, and the axis whose groups of four are checked.
struct SparsityCandidate {
    std::string name;  ///< initializer name
    int64_t axis = 0;  ///< the reduction axis of the op that reads it (as the initializer is stored)
};

/// The initializers eligible for 2:4 sparsity, in the order the graph first reads them: weights of
/// MatMul (A: axis 1, B: axis 0), Gemm (A: axis 1, or 0 with transA; B: axis 0, or 1 with transB)
/// and Conv (W: axis 1), found through QuantizeLinear/DequantizeLinear/Cast (same axis) and
/// Transpose (the axis maps through `perm`). A later reader of the same initializer decides its axis.
/// Skipped, with Polygraphy's messages: names in `skip` (a warning), types other than float32,
/// float16 and bfloat16 (a warning), and an axis whose length is not a multiple of 4 (verbose).
/// Logs "Found: N weight tensor(s) eligible for pruning.". Never throws for a well-formed model.
std::vector<SparsityCandidate> find_sparsity_candidates(const onnx::ModelProto& model,
                                                        const std::set<std::string>& skip = {});

/// Whether every aligned group of four values along `axis` holds at least two zeros (NaN is not a
/// zero). PolygraphyException when `axis` is out of range or its length is not a multiple of 4.
bool is_2_4_sparse(const Tensor& tensor, int64_t axis);

/// Zeroes, in every aligned group of four values along `axis`, the two of smallest magnitude (the
/// first ones on ties), in place. Floating-point tensors only (PolygraphyException otherwise, and
/// like is_2_4_sparse for the axis).
void prune_2_4(Tensor& tensor, int64_t axis);

/// Checks every candidate (find_sparsity_candidates) and returns the names of those that follow 2:4
/// sparsity, logging "Found sparse tensor: X" / "[W] Found non-sparse tensor: X" between
/// "Checking the sparsity pattern of N tensors." and "Finished checking N tensors. ".
/// Throws what tensor_from_proto throws for an initializer whose data cannot be read.
std::set<std::string> check_sparsity(const onnx::ModelProto& model);

/// Prunes every candidate not in `skip` to 2:4 sparsity in place. Each pruned initializer is
/// rewritten as raw data (its name, dims and type kept). When anything was pruned, the model's
/// producer becomes "polygraphy surgeon prune", as Polygraphy's rebuilt model says. Returns the
/// number of initializers pruned.
std::size_t prune_model_2_4(onnx::ModelProto& model, const std::set<std::string>& skip = {});

}  // namespace polygraphy
