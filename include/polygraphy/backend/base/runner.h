// BaseRunner: the interface every backend implements (activate -> infer -> deactivate).
#pragma once

#include <optional>
#include <string>

#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// A generated runner name without its time stamp: `ref-runner-N0-11/21/26-09:30:00` gives
/// `ref-runner-N0`, which names the same runner in every process of a sharded run. Other names are
/// returned unchanged.
std::string runner_name_without_time(const std::string& name);

/// A runner loads a model (through a loader) and runs inference on it.
///
/// Public methods are non-virtual and do the checks once for every backend; backends override the
/// protected `*_impl` methods. Lifecycle: activate() (expensive: builds sessions, packs weights),
/// then any number of infer() calls, then deactivate(). Prefer the RAII guard RunnerActivation.
///
/// IMPORTANT: runners may reuse their output buffers between infer() calls. To keep outputs of
/// several inferences, clone() the tensors (Tensor copies are shallow).
class BaseRunner {
public:
    /// `name_prefix` such as "ref-runner"; when `name` is empty a unique name like
    /// `ref-runner-N0-11/21/26-09:30:00` is generated (N counts per prefix within the process).
    explicit BaseRunner(const std::string& name_prefix, std::optional<std::string> name = std::nullopt);
    virtual ~BaseRunner();
    BaseRunner(const BaseRunner&) = delete;
    BaseRunner& operator=(const BaseRunner&) = delete;

    /// Unique name, used in logs and as the RunResults entry name.
    const std::string& name() const { return name_; }
    /// Whether activate() was called without a matching deactivate().
    bool is_active() const { return active_; }

    /// Throws PolygraphyException when already active.
    void activate();
    /// Throws PolygraphyException when not active.
    void deactivate();

    /// Names, dtypes and (possibly dynamic) shapes of the inputs. Requires an active runner.
    TensorMetadata get_input_metadata();

    /// Runs one inference. Requires an active runner. With `check_inputs`, the feed must contain
    /// exactly the runner's inputs with matching dtypes and compatible shapes, else InputError
    /// naming the input. Records the inference time (see last_inference_time()).
    TensorMap infer(const TensorMap& feed, bool check_inputs = true);

    /// Seconds taken by the last infer() (backend's own measurement when it provides one), or
    /// nullopt before the first inference.
    std::optional<double> last_inference_time() const { return last_inference_time_; }

protected:
    /// Expensive set-up (sessions, buffers); nothing should be allocated before it. Default: nothing.
    virtual void activate_impl() {}
    /// Releases what activate_impl() created. Default: nothing.
    virtual void deactivate_impl() {}
    /// Inputs of the active model: names, dtypes, shapes (Dim::named/unknown for dynamic dims).
    virtual TensorMetadata get_input_metadata_impl() = 0;
    /// Runs one inference on a feed already checked by infer(); returns the outputs by name.
    virtual TensorMap infer_impl(const TensorMap& feed) = 0;
    /// Backends that can time inference more precisely (excluding copies) call this from infer_impl.
    void set_inference_time(double seconds) { backend_inference_time_ = seconds; }

private:
    std::string name_;
    bool active_ = false;
    std::optional<double> last_inference_time_;
    std::optional<double> backend_inference_time_;
};

/// Deep copy of every tensor of `outputs` (the seeds' `copy.deepcopy(outputs)`). Runners may reuse
/// their output buffers between infer() calls: keep outputs of several inferences through this. A
/// plain TensorMap copy is cheap (Tensor copies share buffers) but sees later inferences' values.
TensorMap clone(const TensorMap& outputs);

/// Activates a runner for the guard's lifetime (the seeds' `with runner:`).
class RunnerActivation {
public:
    /// Activates `runner`; deactivates it when the guard is destroyed (if still active).
    explicit RunnerActivation(BaseRunner& runner) : runner_(runner) { runner_.activate(); }
    ~RunnerActivation() {
        if (runner_.is_active()) runner_.deactivate();
    }
    RunnerActivation(const RunnerActivation&) = delete;
    RunnerActivation& operator=(const RunnerActivation&) = delete;

private:
    BaseRunner& runner_;
};

}  // namespace polygraphy
