// The search of `debug reduce`, independent of models and processes: which sets of nodes to try,
// given the verdict on each. Nodes are numbered in topological order.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace polygraphy::tools {

enum class ReduceMode {
    kBisect,  ///< binary search: about log2(N) checks per phase
    kLinear,  ///< one node at a time: about N checks, may find smaller models
};

/// Indices of nodes (ascending) that make up one candidate model.
using NodeSet = std::vector<std::size_t>;

/// Reduction of a failing model made of `num_nodes` nodes in topological order.
///
/// The first candidate is the whole model: it must fail (else there is nothing to reduce and
/// the search ends at once with no_failure()). Then, as Polygraphy's `debug reduce` does:
/// - phase "outputs" drops nodes from the end: it finds the shortest failing prefix [0, k)
///   (a prefix of a topological order keeps every producer its nodes need, so the model keeps
///   its original inputs);
/// - phase "inputs" drops nodes from the start: it finds the shortest failing range [j, k).
///   Tensors that a range consumes but does not produce become inputs of the candidate;
/// - linear mode then tries to drop each remaining node on its own (phase "nodes"), which helps
///   with models whose failure needs nodes that are apart in the order.
/// Bisect assumes that failing is monotonic along each phase (a candidate that contains a failing
/// one fails): it uses at most 1 + 2 * ceil(log2 N) checks. Linear uses at most 1 + N + |result|.
///
/// Usage: while (auto c = reducer.candidate()) reducer.report(check(*c) passed);
class Reducer {
public:
    /// How to search.
    struct Options {
        ReduceMode mode = ReduceMode::kBisect;  ///< `--mode`
        bool reduce_outputs = true;             ///< false: keep the model's outputs (no "outputs" phase)
        bool reduce_inputs = true;              ///< false: keep the model's inputs (no "inputs"/"nodes" phase)
    };

    /// A search over a graph of `num_nodes` top-level nodes.
    Reducer(std::size_t num_nodes, Options options);

    /// The set to check next, or nullopt when the search is over.
    std::optional<NodeSet> candidate() const;
    /// "original", "outputs", "inputs" or "nodes": the phase of candidate().
    const std::string& phase() const { return phase_; }
    /// The verdict on candidate(): true when it passed.
    void report(bool success);

    /// Whether the search is over.
    bool done() const { return phase_ == kDone; }
    /// The original model passed: nothing to reduce (valid once done()).
    bool no_failure() const { return no_failure_; }
    /// Estimated checks left in the current phase.
    std::size_t remaining() const;
    /// Checks reported so far.
    std::size_t checks() const { return checks_; }

    /// Smallest failing set found (the whole model until something smaller fails).
    const NodeSet& best_bad() const { return bad_; }
    /// A passing set close in size to best_bad(): the largest passing set smaller than it, else
    /// the smallest passing one (Polygraphy's --min-good rule). nullopt when nothing passed.
    std::optional<NodeSet> best_good() const;

    /// phase() once the search is over.
    static const std::string kDone;

private:
    NodeSet range(std::size_t begin, std::size_t end) const;
    void start_phase(const std::string& name);
    void next_phase();

    std::size_t num_nodes_;
    Options options_;
    std::string phase_;
    std::size_t checks_ = 0;
    bool no_failure_ = false;

    NodeSet bad_;                 // current smallest failing set
    std::vector<NodeSet> goods_;  // every passing candidate
    // Range phases: the failing range is [begin_, end_); bisection bounds in lo_/hi_.
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    std::size_t lo_ = 0;
    std::size_t hi_ = 0;
    // Phase "nodes": position in bad_ of the node tried next (counting down).
    std::size_t position_ = 0;
    NodeSet current_;  // the candidate under check
};

}  // namespace polygraphy::tools
