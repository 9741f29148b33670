// Builds a loader chain for an ONNX identity model, saves the model on the way, runs it with the
// built-in runtime; then loads the saved copy back from bytes and runs it again (seed 003's
// build_and_run.py and load_and_run.py, with the built-in runtime in place of TensorRT).
#include <cstdio>
#include <exception>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        // Lazy loaders compose: nothing is read until the outermost loader is called. SaveOnnx writes
        // the model it receives and passes it on, so it can sit in the middle of a chain.
        // NOTE: `build_session` is a callable that returns a session, not the session itself; the
        // immediately evaluated functions (examples/api/04_immediate_eval_api) return objects directly.
        ref::SessionFromOnnx build_session(SaveOnnx(OnnxFromPath(models + "/identity.onnx"), "identity_copy.onnx"));

        Tensor input = Tensor::from_doubles(DataType::kFloat32, {1, 1, 2, 2}, {1, 1, 1, 1});
        {
            ref::RefRunner runner(build_session);
            RunnerActivation active(runner);  // the seeds' `with TrtRunner(...) as runner:`
            // NOTE: runners own their output buffers and may reuse them between infer() calls; use
            // clone(outputs) to keep outputs of several inferences.
            TensorMap outputs = runner.infer({{"x", input}});
            expect(outputs.at("y").equals(input), "identity output equals its input");
            expect(runner.last_inference_time().has_value(), "inference time is recorded");
        }
        std::printf("Inference succeeded!\n");

        // load_and_run: read the saved file as bytes, deserialize it, run it.
        ref::RefRunner runner(ref::SessionFromOnnx(OnnxFromBytes(BytesFromPath("identity_copy.onnx"))));
        RunnerActivation active(runner);
        TensorMap outputs = runner.infer({{"x", input}});
        expect(outputs.at("y").equals(input), "the saved model is an identity too");
        std::printf("Inference of the saved model succeeded!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
