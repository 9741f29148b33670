// Custom data loaders for the Comparator: a list of feed dicts, a generator that reads the
// input_metadata the Comparator provides, and a plain function (seed 002's "Data Loaders").
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/comparator/comparator.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

// Outputs of an identity model equal the inputs fed to it.
static void expect_identity(const RunResults& results, const InputList& feeds) {
    const auto& iterations = results.lst.at(0).second;
    expect(iterations.size() == feeds.size(), "one iteration per feed");
    for (std::size_t i = 0; i < feeds.size(); ++i)
        expect(iterations[i].outputs.at("y").equals(feeds[i].at("x")), "output equals the fed input");
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        ref::RefRunner runner(ref::SessionFromOnnx(OnnxFromPath(models + "/identity.onnx")));
        const Shape shape{1, 1, 2, 2};

        // 1. The simplest data loader: a list of feed dicts.
        const InputList feeds = {{{"x", Tensor::from_doubles(DataType::kFloat32, shape, {1, 2, 3, 4})}},
                                 {{"x", Tensor::from_doubles(DataType::kFloat32, shape, {5, 6, 7, 8})}}};
        expect_identity(Comparator::run({&runner}, data_loader_from_list(feeds)), feeds);

        // 2. A generator that does not know the inputs in advance: it reads the input_metadata set
        // by the Comparator (names, dtypes, shapes of the first runner's inputs).
        InputList generated;
        int calls = 0;
        auto generator = [&](const TensorMetadata& input_metadata) -> std::optional<TensorMap> {
            if (calls++ == 3) return std::nullopt;  // exhausted after three feeds
            TensorMap feed;
            for (const auto& [name, entry] : input_metadata) {
                Shape static_shape;
                for (const Dim& dim : *entry.shape) static_shape.push_back(dim.is_dynamic() ? 1 : dim.value);
                Tensor tensor(*entry.dtype, static_shape);
                for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data_as<float>()[i] = static_cast<float>(calls * i);
                feed.set(name, tensor);
            }
            generated.push_back(feed);
            return feed;
        };
        expect_identity(Comparator::run({&runner}, data_loader_from_generator(generator)), generated);
        expect(generated.size() == 3, "the generator ran until exhausted");

        // 3. Any function (iteration, input_metadata) -> optional feed is a data loader.
        InputList ones;
        DataLoaderFn two_ones = [&](std::size_t iteration, const TensorMetadata&) -> std::optional<TensorMap> {
            if (iteration >= 2) return std::nullopt;
            ones.push_back({{"x", Tensor::from_doubles(DataType::kFloat32, shape, {1, 1, 1, 1})}});
            return ones.back();
        };
        expect_identity(Comparator::run({&runner}, two_ones), ones);

        // The default loader generates seeded random data; with the same seed, the same data
        // (and the same data as Polygraphy's numpy-based DataLoader).
        DataLoader::Options options;
        options.seed = 7;
        options.val_range.set("x", ValRange{-1.0, 1.0});
        const TensorMetadata metadata = TensorMetadata().add("x", DataType::kFloat32, to_dyn_shape(shape));
        expect(
            DataLoader(options).generate(0, metadata).at("x").equals(DataLoader(options).generate(0, metadata).at("x")),
            "the default loader is deterministic");
        std::printf("Custom data loaders work!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
