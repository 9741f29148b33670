// Extends lazy loaders with user code that sees (and may change or replace) what they load
// (seed 003's "TensorRT API and Polygraphy interoperation" script with `func.extend`, and Polygraphy's
// examples/api/03_interoperating_with_tensorrt, using the ONNX protobuf API and the built-in runtime).
#include <cstdio>
#include <exception>
#include <memory>
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
        // The extension receives what the extended loader returns: here the ONNX model, which we may
        // modify with the backend's own API (protobuf). No need to return anything.
        std::string seen_name;
        auto load_network = extend(OnnxFromPath(models + "/identity.onnx"), [&](OnnxModel& model) {
            model->mutable_graph()->set_name("MyIdentity");
            seen_name = model->graph().name();
            std::printf("Network name: %s\n", seen_name.c_str());
        });

        // Loaders of any kind can be extended: here the built-in runtime's session, to look at the
        // prepared graph before it runs.
        std::size_t nodes = 0;
        auto build_session = extend(ref::SessionFromOnnx(load_network), [&](std::shared_ptr<ref::Session>& session) {
            nodes = session->execution_order().size();
        });
        expect(seen_name.empty(), "nothing runs before the loader is called (it is lazy)");

        ref::RefRunner runner(build_session);  // we pass the loader; we do not call it ourselves
        {
            RunnerActivation active(runner);
            Tensor input = Tensor::from_doubles(DataType::kFloat32, {1, 1, 2, 2}, {1, 1, 1, 1});
            TensorMap outputs = runner.infer({{"x", input}});
            expect(outputs.at("y").equals(input), "identity output equals its input");
        }
        expect(seen_name == "MyIdentity", "the model extension ran");
        expect(nodes == 1, "the session extension saw the one Identity node");

        // An extension that returns a value replaces the result: here the model with another output.
        auto load_logits = extend(OnnxFromPath(models + "/example_cnn.onnx"),
                                  [](OnnxModel& model) { return modify_outputs(model, {"logits"}); });
        expect(load_logits()->graph().output(0).name() == "logits", "the returned model replaced the loaded one");
        std::printf("Inference succeeded!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
