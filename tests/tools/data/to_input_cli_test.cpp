// `polygraphy data to-input` end to end.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::run_polygraphy;
using testing::TempDir;

TEST(DataToInput, MergesInputsAndOutputs) {
    TempDir dir;
    logger().set_severity(Severity::kWarning);
    InputList inputs(1);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    save_inputs(inputs, dir.file("in.json"));
    RunResults results;
    IterationResult iteration;
    iteration.outputs.set("y", Tensor::from_doubles(DataType::kInt64, {1}, {7}));
    results.add({iteration}, "runner");
    results.save(dir.file("out.json"));
    logger().reset();

    auto result = run_polygraphy({"data", "to-input", dir.file("in.json"), dir.file("out.json"), "-o",
                                  dir.file("merged.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("[I] Saving input file containing 1 iteration(s) to " + dir.file("merged.json")));
    const InputList merged = load_inputs(dir.file("merged.json"));
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].keys(), (std::vector<std::string>{"x", "y"}));
    EXPECT_TRUE(merged[0].at("y").equals(Tensor::from_doubles(DataType::kInt64, {1}, {7})));

    // The result is usable with --load-inputs.
    result = run_polygraphy({"inspect", "data", dir.file("merged.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(DataToInput, BadInput) {
    TempDir dir;
    auto result = run_polygraphy({"data", "to-input", dir.file("in.json")});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("the following arguments are required: -o/--output"));

    result = run_polygraphy({"data", "to-input", dir.file("missing.json"), "-o", dir.file("merged.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("missing.json"));
    EXPECT_FALSE(std::filesystem::exists(dir.file("merged.json")));

    std::ofstream(dir.file("bad.json")) << "{\"lst\": 3}";
    result = run_polygraphy({"data", "to-input", dir.file("bad.json"), "-o", dir.file("merged.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("bad.json"));

    // An output path below a file cannot be written: nothing is left behind.
    logger().set_severity(Severity::kWarning);
    InputList inputs(1);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {1}));
    save_inputs(inputs, dir.file("in.json"));
    logger().reset();
    std::ofstream(dir.file("file")) << "x";
    result = run_polygraphy({"data", "to-input", dir.file("in.json"), "-o", dir.file("file") + "/merged.json"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));

    result = run_polygraphy({"data"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("required: subtool"));
}

}  // namespace
}  // namespace polygraphy::tools
