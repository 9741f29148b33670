// `polygraphy debug precision` and the block lists of `convert` as the CLI: the planted fp16 faults of
// precision_models.h are named, the saved block lists convert the model again, and bad input gets one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"
#include "precision_models.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

class DebugPrecision : public ::testing::Test {
protected:
    void SetUp() override { save_onnx(testing::fp16_trouble_model(), model_); }

    // The value ranges of fp16_trouble_samples(): u and v near 1000, where fp16 cancels their difference.
    std::vector<std::string> data_args() const {
        return {"--iterations", "3", "--val-range", "x:[0,1]", "u:[1000,1000.5]", "v:[999.5,1000]"};
    }

    TempDir dir_;
    std::string model_ = dir_.file("model.onnx");
};

TEST_F(DebugPrecision, NamesThePlantedNodesAndSavesTheMixedModelAndTheBlockLists) {
    std::vector<std::string> args = {"debug",
                                     "precision",
                                     model_,
                                     "--atol",
                                     "1e-2",
                                     "--rtol",
                                     "1e-2",
                                     "-o",
                                     dir_.file("mixed.onnx"),
                                     "--save-block-list",
                                     dir_.file("lists.json")};
    for (const auto& arg : data_args()) args.push_back(arg);
    const auto result = run_polygraphy(args);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("Searching which of 7 node(s) to keep in float32 so that the fp16 model passes "
                          "on 3 sample(s)"));
    EXPECT_THAT(result.output, HasSubstr("Keep 2 of 7 node(s) in float32: /scale/Mul, /delta/Sub"));
    EXPECT_THAT(result.output, HasSubstr("evaluation(s) on 3 sample(s) each"));
    EXPECT_THAT(result.output,
                HasSubstr("1-minimal: each kept one, given back alone to low precision, fails the check"));
    EXPECT_THAT(read_file(dir_.file("lists.json")), HasSubstr("\"node_block_list\": [\n        \"/scale/Mul\",\n"
                                                              "        \"/delta/Sub\"\n    ]"));

    // The block lists convert the model into one that passes where the plain fp16 model fails.
    ASSERT_EQ(run_polygraphy({"convert", model_, "--fp-to-fp16", "--block-list-file", dir_.file("lists.json"), "-o",
                              dir_.file("converted.onnx")})
                  .exit_code,
              0);
    ASSERT_EQ(run_polygraphy({"convert", model_, "--fp-to-fp16", "-o", dir_.file("fp16.onnx")}).exit_code, 0);
    auto compare = [&](const std::string& model) {
        std::vector<std::string> run = {
            "run", model, "--ref", "--load-outputs", dir_.file("reference.json"), "--atol", "1e-2", "--rtol", "1e-2"};
        for (const auto& arg : data_args()) run.push_back(arg);
        return run_polygraphy(run);
    };
    std::vector<std::string> reference = {"run", model_, "--ref", "--save-outputs", dir_.file("reference.json")};
    for (const auto& arg : data_args()) reference.push_back(arg);
    ASSERT_EQ(run_polygraphy(reference).exit_code, 0);
    EXPECT_EQ(compare(dir_.file("converted.onnx")).exit_code, 0);
    EXPECT_EQ(compare(dir_.file("mixed.onnx")).exit_code, 0);
    EXPECT_EQ(compare(dir_.file("fp16.onnx")).exit_code, 1);
}

TEST_F(DebugPrecision, BadInputGetsOneLine) {
    auto expect_line = [](const std::vector<std::string>& args, const std::string& message) {
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, HasSubstr("[!] " + message)) << result.output;
        EXPECT_THAT(result.output, Not(HasSubstr("Unexpected"))) << result.output;
    };
    // A check command that passes once only (the model itself), so fails even with every node kept; then
    // one that fails the model itself.
    const std::string marker = dir_.file("checked_once");
    expect_line({"debug", "precision", model_, "--check", "sh", "-c",
                 "if [ -e " + marker + " ]; then exit 1; fi; touch " + marker},
                "The check fails even with every candidate kept in higher precision");
    expect_line({"debug", "precision", model_, "--check", "false"},
                "The model already fails the check at full precision");
    expect_line({"debug", "precision", model_, "--precision", "int8"},
                "The model has no activation quantized by a QuantizeLinear -> DequantizeLinear pair");
    expect_line({"debug", "precision", model_, "--op-block-list", "Conv"},
                "The op block list names 'Conv', which no node of the model is");
    expect_line({"convert", model_, "--fp-to-fp16", "--node-block-list", "/nowhere/Mul", "-o", dir_.file("o.onnx")},
                "The node block list names '/nowhere/Mul', which no node of the model has");
    expect_line({"convert", model_, "--node-block-list", "/scale/Mul", "-o", dir_.file("o.onnx")},
                "--node-block-list, --op-block-list and --block-list-file apply to --fp-to-fp16 or --fp-to-bf16");
    // Destinations that cannot be written are refused before the search, not after it.
    for (const char* flag : {"-o", "--save-block-list"}) {
        const auto refused = run_polygraphy({"debug", "precision", model_, flag, dir_.path()});
        EXPECT_EQ(refused.exit_code, 1) << refused.output;
        EXPECT_THAT(refused.output, HasSubstr(" is a folder; give a file path"));
        EXPECT_THAT(refused.output, Not(HasSubstr("Evaluation")));
    }
    expect_line({"debug", "precision", model_, "--check-sqnr", "nan"}, "--check-sqnr: expected a number, got 'nan'");
    expect_line({"debug", "precision", model_, "--atol", "-1"}, "--atol: expected a number of 0 or more, got '-1'");
    write_file_atomically(dir_.file("bad.json"), "[1, 2]");
    expect_line(
        {"convert", model_, "--fp-to-fp16", "--block-list-file", dir_.file("bad.json"), "-o", dir_.file("o.onnx")},
        dir_.file("bad.json"));
    EXPECT_FALSE(std::filesystem::exists(dir_.file("o.onnx")));
}

}  // namespace
}  // namespace polygraphy
