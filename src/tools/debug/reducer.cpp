#include "tools/debug/reducer.h"

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {

const std::string Reducer::kDone = "done";

namespace {

std::size_t ceil_log2(std::size_t n) {
    std::size_t bits = 0;
    while ((std::size_t{1} << bits) < n) ++bits;
    return bits;
}

}  // namespace

Reducer::Reducer(std::size_t num_nodes, Options options) : num_nodes_(num_nodes), options_(options) {
    if (num_nodes == 0) throw PolygraphyException("The model has no nodes: there is nothing to reduce");
    phase_ = "original";
    current_ = range(0, num_nodes_);
}

NodeSet Reducer::range(std::size_t begin, std::size_t end) const {
    NodeSet nodes;
    for (std::size_t i = begin; i < end; ++i) nodes.push_back(i);
    return nodes;
}

std::optional<NodeSet> Reducer::candidate() const {
    if (done()) return std::nullopt;
    return current_;
}

void Reducer::start_phase(const std::string& name) {
    phase_ = name;
    if (name == "outputs") {
        lo_ = begin_;  // the empty prefix: taken as passing
        hi_ = end_;    // known to fail
    } else if (name == "inputs") {
        lo_ = begin_;  // known to fail
        hi_ = end_;    // the empty range: taken as passing
    } else if (name == "nodes") {
        position_ = bad_.size() >= 3 ? bad_.size() - 2 : 0;  // interior nodes, last first
    }
}

// Sets current_ for the phase, moving on to the next phase when this one has nothing to try.
void Reducer::next_phase() {
    for (;;) {
        if (phase_ == "outputs" || phase_ == "inputs") {
            if (hi_ - lo_ > 1) {
                std::size_t mid;
                if (options_.mode == ReduceMode::kBisect)
                    mid = lo_ + (hi_ - lo_) / 2;
                else
                    mid = phase_ == "outputs" ? hi_ - 1 : lo_ + 1;
                current_ = phase_ == "outputs" ? range(begin_, mid) : range(mid, end_);
                return;
            }
            if (phase_ == "outputs")
                end_ = hi_;
            else
                begin_ = lo_;
        } else if (phase_ == "nodes") {
            if (position_ >= 1 && position_ + 1 < bad_.size()) {
                current_ = bad_;
                current_.erase(current_.begin() + static_cast<std::ptrdiff_t>(position_));
                return;
            }
        }
        // Next phase in order: outputs, inputs, nodes (linear only), done.
        if (phase_ == "original") phase_ = "before-outputs";
        if (phase_ == "before-outputs") {
            if (options_.reduce_outputs) {
                start_phase("outputs");
                continue;
            }
            phase_ = "outputs";
        }
        if (phase_ == "outputs") {
            if (options_.reduce_inputs) {
                start_phase("inputs");
                continue;
            }
            phase_ = "inputs";
        }
        if (phase_ == "inputs" && options_.mode == ReduceMode::kLinear && options_.reduce_inputs &&
            options_.reduce_outputs) {
            start_phase("nodes");
            continue;
        }
        phase_ = kDone;
        current_.clear();
        return;
    }
}

void Reducer::report(bool success) {
    if (done()) throw InternalError("Reducer::report() called after the search ended");
    ++checks_;
    if (success)
        goods_.push_back(current_);
    else if (current_.size() <= bad_.size() || bad_.empty())
        bad_ = current_;

    if (phase_ == "original") {
        if (success) {
            no_failure_ = true;
            phase_ = kDone;
            current_.clear();
            return;
        }
        begin_ = 0;
        end_ = num_nodes_;
    } else if (phase_ == "outputs") {
        const std::size_t mid = current_.empty() ? lo_ : current_.back() + 1;
        (success ? lo_ : hi_) = mid;
    } else if (phase_ == "inputs") {
        const std::size_t mid = current_.front();
        (success ? hi_ : lo_) = mid;
    } else if (phase_ == "nodes") {
        // On failure bad_ lost the node at position_; either way the next node down is tried.
        --position_;
    }
    next_phase();
}

std::size_t Reducer::remaining() const {
    if (phase_ == "original") return 1;
    if (phase_ == "outputs" || phase_ == "inputs") {
        const std::size_t span = hi_ - lo_;
        return options_.mode == ReduceMode::kBisect ? ceil_log2(span) : span - 1;
    }
    if (phase_ == "nodes") return position_;
    return 0;
}

std::optional<NodeSet> Reducer::best_good() const {
    const NodeSet* smaller = nullptr;  // largest passing set smaller than bad_
    const NodeSet* larger = nullptr;   // smallest passing set at least as large
    for (const auto& good : goods_) {
        if (good.size() < bad_.size()) {
            if (!smaller || good.size() > smaller->size()) smaller = &good;
        } else if (!larger || good.size() < larger->size()) {
            larger = &good;
        }
    }
    if (smaller) return *smaller;
    if (larger) return *larger;
    return std::nullopt;
}

}  // namespace polygraphy::tools
