// Writes a custom runner (seed 002's "Writing A Custom Runner") and compares it with the built-in
// runtime through the Comparator.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/comparator/comparator.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

// A "backend" that computes y = x for a float32 input `x` of shape (1, 1, 2, 2), like identity.onnx.
// Only infer_impl() and get_input_metadata_impl() are required; activate_impl()/deactivate_impl()
// hold the expensive set-up and tear-down (here: an output buffer), so that nothing is allocated
// until the runner is activated.
class IdentityRunner : public BaseRunner {
public:
    IdentityRunner() : BaseRunner("identity-runner") {}
    int activations = 0;

protected:
    void activate_impl() override {
        ++activations;
        output_ = Tensor(DataType::kFloat32, {1, 1, 2, 2});
    }
    void deactivate_impl() override { output_ = Tensor(); }

    TensorMetadata get_input_metadata_impl() override {
        TensorMetadata metadata;
        // Dynamic dimensions would be Dim::named("batch") or Dim::unknown().
        metadata.add("x", DataType::kFloat32, to_dyn_shape({1, 1, 2, 2}));
        return metadata;
    }

    TensorMap infer_impl(const TensorMap& feed) override {
        // BaseRunner::infer has already checked the feed against get_input_metadata().
        const Tensor& x = feed.at("x");
        for (int64_t i = 0; i < x.numel(); ++i) output_.data_as<float>()[i] = x.data_as<float>()[i];
        // The same buffer is returned every time: callers clone() what they keep (the Comparator does).
        return {{"y", output_}};
    }

private:
    Tensor output_;
};

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        IdentityRunner custom;
        ref::RefRunner reference(ref::SessionFromOnnx(OnnxFromPath(models + "/identity.onnx")));

        DataLoader::Options data_options;
        data_options.iterations = 2;
        RunResults results = Comparator::run({&custom, &reference}, DataLoader(data_options).as_function());
        expect(custom.activations == 1 && !custom.is_active(), "the Comparator activated and deactivated it once");
        expect(results.lst[0].second.size() == 2, "two iterations ran");
        expect(!results.lst[0].second[0].outputs.at("y").equals(results.lst[0].second[1].outputs.at("y")),
               "the Comparator kept a copy of each iteration's outputs despite the reused buffer");
        expect(static_cast<bool>(Comparator::compare_accuracy(results)), "the custom runner matches the reference");

        // Bad feeds are refused before infer_impl() runs, with a typed exception naming the input.
        RunnerActivation active(custom);
        try {
            custom.infer({{"x", Tensor(DataType::kFloat32, {2, 2})}});
            expect(false, "a wrong shape is refused");
        } catch (const InputError& error) {
            std::printf("Refused as expected: %s\n", error.what());
        }
        std::printf("Custom runner works!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
