// The model generators make_decoder_model and make_encoder_model (examples/models, built on
// tests/support/decoder_model.h and encoder_model.h), in small configurations: the documented node
// counts, the local functions, external data read back, and agreement of the built-in runtime with
// ONNX-Runtime at two sequence lengths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "decoder_model.h"
#include "encoder_model.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Sizes of the small models: 2 layers, hidden 64 in 4 heads, vocabulary 100.
const std::vector<std::string> kSmallSizes = {"--layers",       "2",   "--hidden", "64",  "--heads",         "4",
                                              "--intermediate", "128", "--vocab",  "100", "--max-positions", "64"};

// The small sizes of kSmallSizes, with `layers` layers.
template <typename Options>
Options small(int64_t layers = 2) {
    Options options;
    options.layers = layers;
    options.hidden = 64;
    options.heads = 4;
    options.intermediate = 128;
    options.vocab = 100;
    options.max_positions = 64;
    return options;
}

std::vector<std::string> concat(std::vector<std::string> first, const std::vector<std::string>& second) {
    first.insert(first.end(), second.begin(), second.end());
    return first;
}

CommandResult generate(const std::string& generator, const std::string& path, const std::vector<std::string>& extra) {
    return run_program(built_program(generator), concat(concat({path}, kSmallSizes), extra));
}

std::map<std::string, int64_t> op_histogram(const onnx::GraphProto& graph) {
    std::map<std::string, int64_t> counts;
    for (const auto& node : graph.node()) ++counts[node.op_type()];
    return counts;
}

const onnx::FunctionProto* find_function(const onnx::ModelProto& model, const std::string& name) {
    for (const auto& function : model.functions())
        if (function.name() == name) return &function;
    return nullptr;
}

// Nodes after inlining every call of a local function (recursively).
int64_t inlined_node_count(const onnx::ModelProto& model,
                           const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
    int64_t count = 0;
    for (const auto& node : nodes) {
        const onnx::FunctionProto* function = node.domain().empty() ? nullptr : find_function(model, node.op_type());
        count += function ? inlined_node_count(model, function->node()) : 1;
    }
    return count;
}

onnx::ModelProto build_inline(const DecoderOptions& options) {
    WeightWriter weights;
    return build_decoder_model(options, weights);
}

onnx::ModelProto build_inline(const EncoderOptions& options) {
    WeightWriter weights;
    return build_encoder_model(options, weights);
}

class GeneratedModelCli : public ::testing::Test {
protected:
    void SetUp() override {
        if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
    }
    // `polygraphy run` with the given runner and data flags at two sequence lengths (dynamic shapes),
    // inputs drawn over the whole vocabulary; every run must pass (`--validate`: no NaN or Inf either).
    void expect_runs_pass(const std::string& model, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& flags) {
        for (const std::string shape : {"[1,5]", "[2,13]"}) {
            std::vector<std::string> args = {"run", model, "--val-range", "input_ids:[0,99]", "--input-shapes"};
            for (const auto& input : inputs) args.push_back(input + ":" + shape);
            const CommandResult result = run_polygraphy(concat(args, flags));
            EXPECT_EQ(result.exit_code, 0) << result.output;
            EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched")) << shape;
            EXPECT_THAT(result.output, HasSubstr("PASSED | Output Validation")) << shape;
        }
    }
};

// ---- decoder --------------------------------------------------------------------------------------------

TEST(DecoderModel, NodeCountsFollowTheDocumentedFormula) {
    for (int64_t layers : {1, 2, 3}) {
        DecoderOptions options = small<DecoderOptions>(layers);
        const onnx::ModelProto plain = build_inline(options);
        EXPECT_EQ(plain.graph().node_size(), 122 * layers + 30);
        EXPECT_EQ(plain.graph().node_size(), decoder_node_count(options));
        auto ops = op_histogram(plain.graph());
        EXPECT_EQ(ops["MatMul"], 9 * layers + 1);  // q, k, v, o, scores, context, gate, up, down; lm_head
        EXPECT_EQ(ops["Softmax"], layers);
        EXPECT_EQ(ops["Pow"], 2 * layers + 1);  // one per RMSNorm
        EXPECT_EQ(ops["Neg"], 2 * layers);      // rotate_half of q and k
        EXPECT_EQ(ops["Range"], 1);

        options.functions = true;
        const onnx::ModelProto with_functions = build_inline(options);
        EXPECT_EQ(with_functions.graph().node_size(), 99 * layers + 21);
        EXPECT_EQ(with_functions.graph().node_size(), decoder_node_count(options));
        EXPECT_EQ(inlined_node_count(with_functions, with_functions.graph().node()), plain.graph().node_size());
    }
    DecoderOptions full;
    EXPECT_EQ(decoder_node_count(full), 1494);
    EXPECT_EQ(decoder_weight_bytes(full), 2971869184u);
}

TEST(DecoderModel, QuantizedWeightsReplaceEveryProjectionByMatMulNBits) {
    for (int64_t bits : {4, 8}) {
        DecoderOptions options = small<DecoderOptions>(2);
        options.nbits = bits;
        options.nbits_block_size = 16;
        WeightWriter weights;
        const onnx::ModelProto model = build_decoder_model(options, weights);
        EXPECT_EQ(model.graph().node_size(), decoder_node_count(options));
        auto ops = op_histogram(model.graph());
        EXPECT_EQ(ops["MatMulNBits"], 7 * 2 + 1);  // q, k, v, o, gate, up, down; lm_head
        EXPECT_EQ(ops["MatMul"], 2 * 2);           // scores and context stay float products
        EXPECT_EQ(weights.tensor_bytes(), decoder_weight_bytes(options));
        for (const auto& node : model.graph().node()) {
            if (node.op_type() != "MatMulNBits") continue;
            EXPECT_EQ(node.domain(), "com.microsoft");
            ASSERT_EQ(node.input_size(), 4);  // A, codes, scales, packed zero points
        }
    }
}

TEST(DecoderModel, LocalFunctionsHaveTheirOwnImportsAnAttributeReferenceAndNest) {
    DecoderOptions options = small<DecoderOptions>();
    options.functions = true;
    const onnx::ModelProto model = build_inline(options);
    EXPECT_EQ(model.ir_version(), 8);
    ASSERT_EQ(model.functions_size(), 3);
    for (const auto& function : model.functions()) {
        EXPECT_EQ(function.domain(), "custom");
        ASSERT_GE(function.opset_import_size(), 1);
        EXPECT_EQ(function.opset_import(0).domain(), "");
        EXPECT_EQ(function.opset_import(0).version(), 17);
    }
    const onnx::FunctionProto* rms_norm = find_function(model, "RMSNorm");
    ASSERT_NE(rms_norm, nullptr);
    ASSERT_EQ(rms_norm->attribute_size(), 1);
    EXPECT_EQ(rms_norm->attribute(0), "epsilon");
    int references = 0;
    for (const auto& node : rms_norm->node())
        for (const auto& attribute : node.attribute()) references += attribute.ref_attr_name() == "epsilon";
    EXPECT_EQ(references, 1);

    const onnx::FunctionProto* mlp = find_function(model, "LlamaMLP");
    ASSERT_NE(mlp, nullptr);
    ASSERT_EQ(mlp->opset_import_size(), 2);
    EXPECT_EQ(mlp->opset_import(1).domain(), "custom");
    int silu_calls = 0;
    for (const auto& node : mlp->node()) silu_calls += node.op_type() == "SiLU" && node.domain() == "custom";
    EXPECT_EQ(silu_calls, 1);

    int norm_calls = 0;
    for (const auto& node : model.graph().node()) {
        if (node.op_type() != "RMSNorm") continue;
        ++norm_calls;
        ASSERT_EQ(node.attribute_size(), 1);
        EXPECT_EQ(node.attribute(0).name(), "epsilon");
        EXPECT_FLOAT_EQ(node.attribute(0).f(), 1e-6f);
    }
    EXPECT_EQ(norm_calls, 2 * options.layers + 1);
}

TEST(MakeDecoderModel, StreamsAlignedExternalDataThatReadsBack) {
    TempDir dir;
    const std::string path = dir.file("decoder.onnx");
    const CommandResult result = generate("make_decoder_model", path, {"--seed", "5"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("274 nodes"));
    ASSERT_TRUE(fs::exists(dir.file("decoder.onnx.data")));

    DecoderOptions options = small<DecoderOptions>();
    OnnxModel unloaded = onnx_from_path(path, std::nullopt, /*ignore_external_data=*/true);
    uint64_t bytes = 0;
    int external = 0;
    for (const auto& initializer : unloaded->graph().initializer()) {
        if (initializer.data_location() != onnx::TensorProto::EXTERNAL) {
            bytes += initializer.raw_data().size();
            continue;
        }
        ++external;
        for (const auto& entry : initializer.external_data()) {
            if (entry.key() == "offset") {
                EXPECT_EQ(std::stoull(entry.value()) % 4096, 0u) << initializer.name();
            } else if (entry.key() == "length") {
                bytes += std::stoull(entry.value());
            } else if (entry.key() == "location") {
                EXPECT_EQ(entry.value(), "decoder.onnx.data");
            }
        }
    }
    EXPECT_EQ(bytes, decoder_weight_bytes(options));
    EXPECT_GE(external, 18);  // every matrix and table; the 256-byte norm weights stay inline

    OnnxModel loaded = onnx_from_path(path);
    std::map<std::string, Tensor> weights;
    for (const auto& initializer : loaded->graph().initializer())
        weights.emplace(initializer.name(), tensor_from_proto(initializer));
    const std::string down = "model.layers.1.mlp.down_proj.weight";
    const float bound = 1.0f / std::sqrt(128.0f);
    std::vector<float> expected(64 * 128);
    uniform_fill(tensor_seed(5, down), -bound, bound)(expected.data(), 0, static_cast<int64_t>(expected.size()));
    EXPECT_EQ(elements_of<float>(weights.at(down)), expected);
    const std::vector<float> mask = elements_of<float>(weights.at("model.causal_mask"));
    EXPECT_EQ(mask[0 * 64 + 1], std::numeric_limits<float>::lowest());  // above the diagonal
    EXPECT_EQ(mask[1 * 64 + 0], 0.0f);
    EXPECT_EQ(mask[5 * 64 + 5], 0.0f);
    EXPECT_EQ(elements_of<float>(weights.at("model.rotary_emb.cos_cached"))[3], 1.0f);  // position 0
}

TEST_F(GeneratedModelCli, DecoderOnTheBuiltInRuntimeMatchesOnnxRuntimeWithFiniteLogits) {
    TempDir dir;
    ASSERT_EQ(generate("make_decoder_model", dir.file("decoder.onnx"), {}).exit_code, 0);
    expect_runs_pass(dir.file("decoder.onnx"), {"input_ids"}, {"--ref", "--onnxrt", "--validate"});
}

// The int4 decoder (com.microsoft.MatMulNBits, blocks of 32) of the benchmarks, on both runtimes.
TEST_F(GeneratedModelCli, DecoderWithInt4WeightsOnTheBuiltInRuntimeMatchesOnnxRuntime) {
    TempDir dir;
    ASSERT_EQ(generate("make_decoder_model", dir.file("int4.onnx"), {"--nbits", "4", "--block-size", "32"}).exit_code,
              0);
    expect_runs_pass(dir.file("int4.onnx"), {"input_ids"}, {"--ref", "--onnxrt", "--validate"});
    // The model tools know the contrib operator: the built-in runtime runs every node, and lint passes.
    const CommandResult capability = run_polygraphy({"inspect", "capability", dir.file("int4.onnx")});
    EXPECT_THAT(capability.output, HasSubstr("Graph is fully supported by the built-in runtime"));
    const CommandResult lint = run_polygraphy({"check", "lint", dir.file("int4.onnx")});
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
}

TEST_F(GeneratedModelCli, DecoderWithLocalFunctionsRunsOnOnnxRuntimeAsTheInlinedModel) {
    TempDir dir;
    ASSERT_EQ(generate("make_decoder_model", dir.file("plain.onnx"), {"--inline-weights"}).exit_code, 0);
    EXPECT_FALSE(fs::exists(dir.file("plain.onnx.data")));
    ASSERT_EQ(generate("make_decoder_model", dir.file("functions.onnx"), {"--functions"}).exit_code, 0);
    const std::vector<std::string> data = {"--val-range", "input_ids:[0,99]", "--input-shapes", "input_ids:[2,9]"};
    CommandResult reference =
        run_polygraphy(concat({"run", dir.file("plain.onnx"), "--ref", "--save-outputs", dir.file("ref.json")}, data));
    ASSERT_EQ(reference.exit_code, 0) << reference.output;
    CommandResult result = run_polygraphy(
        concat({"run", dir.file("functions.onnx"), "--onnxrt", "--load-outputs", dir.file("ref.json")}, data));
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
}

TEST_F(GeneratedModelCli, DecoderWithLocalFunctionsRunsOnTheBuiltInRuntime) {
    TempDir dir;
    ASSERT_EQ(generate("make_decoder_model", dir.file("functions.onnx"), {"--functions"}).exit_code, 0);
    expect_runs_pass(dir.file("functions.onnx"), {"input_ids"}, {"--ref", "--onnxrt", "--validate"});
}

TEST(MakeDecoderModel, BadOptionsAreOneLineErrorsAndWriteNothing) {
    TempDir dir;
    const std::string path = dir.file("decoder.onnx");
    const struct {
        std::vector<std::string> args;
        int exit_code;
        std::string message;
    } cases[] = {
        {{"--heads", "5"}, 1, "[!] --hidden (64) must be a multiple of --heads (5)"},
        {{"--hidden", "60"}, 1, "[!] the head size --hidden / --heads must be even for rotary embeddings, got 15"},
        {{"--layers", "0"}, 1, "[!] --layers must be positive, got 0"},
        {{"--layers", "two"}, 2, "[!] --layers expects an integer, got 'two'"},
        {{"--vocab"}, 2, "[!] --vocab expects a value"},
        {{"--bogus"}, 2, "[!] unknown option '--bogus'"},
        {{"--nbits", "3"}, 1, "[!] --nbits must be 0 (float32 weights), 2, 4 or 8, got 3"},
        {{"--nbits", "4", "--block-size", "24"}, 1, "[!] --block-size must be a power of two of at least 16, got 24"},
        {{"--nbits", "4", "--functions"}, 1, "[!] --nbits and --functions cannot be combined"},
    };
    for (const auto& c : cases) {
        const CommandResult result = generate("make_decoder_model", path, c.args);
        EXPECT_EQ(result.exit_code, c.exit_code) << result.output;
        EXPECT_THAT(result.output, HasSubstr(c.message));
    }
    const CommandResult no_path = run_program(built_program("make_decoder_model"), {"--layers", "1"});
    EXPECT_EQ(no_path.exit_code, 2);
    EXPECT_THAT(no_path.output, HasSubstr("[!] missing the output path OUT.onnx"));
    // The default size cannot be inline: refused before any weight is generated.
    const CommandResult too_large = run_program(built_program("make_decoder_model"), {path, "--inline-weights"});
    EXPECT_EQ(too_large.exit_code, 1);
    EXPECT_THAT(too_large.output, HasSubstr("its weights alone are 2971869184 bytes, over protobuf's 2 GiB limit"));
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

// ---- encoder --------------------------------------------------------------------------------------------

TEST(EncoderModel, NodeCountsFollowTheDocumentedFormula) {
    for (int64_t layers : {1, 2, 3}) {
        EncoderOptions options = small<EncoderOptions>(layers);
        const onnx::ModelProto fused = build_inline(options);
        EXPECT_EQ(fused.graph().node_size(), 90 * layers + 33);
        EXPECT_EQ(fused.graph().node_size(), encoder_node_count(options));
        auto ops = op_histogram(fused.graph());
        EXPECT_EQ(ops["LayerNormalization"], 2 * layers + 1);
        EXPECT_EQ(ops["Erf"], layers);
        EXPECT_EQ(ops["MatMul"], 8 * layers);  // q, k, v, scores, context, attention output, intermediate, output
        EXPECT_EQ(ops["Softmax"], layers);

        options.decomposed_layernorm = true;
        const onnx::ModelProto decomposed = build_inline(options);
        EXPECT_EQ(decomposed.graph().node_size(), 110 * layers + 43);
        EXPECT_EQ(decomposed.graph().node_size(), encoder_node_count(options));
        ops = op_histogram(decomposed.graph());
        EXPECT_EQ(ops.count("LayerNormalization"), 0u);
        EXPECT_EQ(ops["ReduceMean"], 2 * (2 * layers + 1));

        options.decomposed_layernorm = false;
        options.fused = true;
        WeightWriter fused_weights;
        const onnx::ModelProto transformers = build_encoder_model(options, fused_weights);
        EXPECT_EQ(transformers.graph().node_size(), 7 * layers + 19);
        EXPECT_EQ(transformers.graph().node_size(), encoder_node_count(options));
        EXPECT_EQ(fused_weights.tensor_bytes(), encoder_weight_bytes(options));  // the same weights, concatenated
        ops = op_histogram(transformers.graph());
        EXPECT_EQ(ops["EmbedLayerNormalization"], 1);
        EXPECT_EQ(ops["Attention"], layers);
        EXPECT_EQ(ops["SkipLayerNormalization"], 2 * layers);
        EXPECT_EQ(ops["BiasGelu"], layers);
        EXPECT_EQ(ops["MatMul"], 3 * layers);
    }
    EncoderOptions base;
    EXPECT_EQ(encoder_node_count(base), 1113);
    EXPECT_EQ(encoder_weight_bytes(base), 435574784u);
}

TEST_F(GeneratedModelCli, EncoderOnTheBuiltInRuntimeMatchesOnnxRuntimeInBothLayerNormForms) {
    TempDir dir;
    ASSERT_EQ(generate("make_encoder_model", dir.file("fused.onnx"), {}).exit_code, 0);
    ASSERT_EQ(generate("make_encoder_model", dir.file("decomposed.onnx"), {"--decomposed-layernorm"}).exit_code, 0);
    const std::vector<std::string> inputs = {"input_ids", "attention_mask"};
    expect_runs_pass(dir.file("fused.onnx"), inputs, {"--ref", "--onnxrt", "--validate"});
    expect_runs_pass(dir.file("decomposed.onnx"), inputs, {"--ref", "--onnxrt", "--validate"});
    // The two forms compute the same function.
    const CommandResult saved = run_polygraphy({"run", dir.file("fused.onnx"), "--ref", "--save-outputs",
                                                dir.file("fused.json"), "--input-shapes", "input_ids:[2,7]",
                                                "attention_mask:[2,7]", "--val-range", "input_ids:[0,99]"});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    const CommandResult compared = run_polygraphy({"run", dir.file("decomposed.onnx"), "--ref", "--load-outputs",
                                                   dir.file("fused.json"), "--input-shapes", "input_ids:[2,7]",
                                                   "attention_mask:[2,7]", "--val-range", "input_ids:[0,99]"});
    EXPECT_EQ(compared.exit_code, 0) << compared.output;
}

TEST_F(GeneratedModelCli, EncoderExternalDataGivesTheSameResults) {
    TempDir dir;
    ASSERT_EQ(generate("make_encoder_model", dir.file("inline.onnx"), {}).exit_code, 0);
    EXPECT_FALSE(fs::exists(dir.file("inline.onnx.data")));
    ASSERT_EQ(generate("make_encoder_model", dir.file("external.onnx"), {"--external-data"}).exit_code, 0);
    EXPECT_TRUE(fs::exists(dir.file("external.onnx.data")));
    EXPECT_LT(fs::file_size(dir.file("external.onnx")), fs::file_size(dir.file("inline.onnx")) / 4);
    const std::vector<std::string> data = {"--input-shapes", "input_ids:[1,6]", "attention_mask:[1,6]"};
    ASSERT_EQ(
        run_polygraphy(concat({"run", dir.file("inline.onnx"), "--onnxrt", "--save-outputs", dir.file("a.json")}, data))
            .exit_code,
        0);
    const CommandResult result = run_polygraphy(
        concat({"run", dir.file("external.onnx"), "--ref", "--onnxrt", "--load-outputs", dir.file("a.json")}, data));
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

// The graph onnxruntime.transformers would write computes the plain one's function, on both runtimes
// (a mask of ones: the fused Attention takes it as its raw mask).
TEST_F(GeneratedModelCli, TheFusedEncoderMatchesThePlainOneOnBothRuntimes) {
    TempDir dir;
    ASSERT_EQ(generate("make_encoder_model", dir.file("plain.onnx"), {}).exit_code, 0);
    ASSERT_EQ(generate("make_encoder_model", dir.file("fused.onnx"), {"--fused"}).exit_code, 0);
    const std::vector<std::string> data = {"--val-range",    "input_ids:[0,99]", "attention_mask:[1,1]",
                                           "--input-shapes", "input_ids:[2,11]", "attention_mask:[2,11]"};
    const CommandResult plain = run_polygraphy(
        concat({"run", dir.file("plain.onnx"), "--ref", "--save-outputs", dir.file("plain.json")}, data));
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    const CommandResult fused =
        run_polygraphy(concat({"run", dir.file("fused.onnx"), "--ref", "--onnxrt", "--load-outputs",
                               dir.file("plain.json"), "--atol", "1e-4", "--rtol", "1e-3"},
                              data));
    EXPECT_EQ(fused.exit_code, 0) << fused.output;
    EXPECT_THAT(fused.output, HasSubstr("PASSED | All outputs matched"));
}

TEST(MakeEncoderModel, BadOptionsAreOneLineErrorsAndWriteNothing) {
    TempDir dir;
    const CommandResult result = generate("make_encoder_model", dir.file("encoder.onnx"), {"--heads", "5"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --hidden (64) must be a multiple of --heads (5)"));
    const CommandResult unknown = generate("make_encoder_model", dir.file("encoder.onnx"), {"--functions"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_THAT(unknown.output, HasSubstr("[!] unknown option '--functions'"));
    const CommandResult both =
        generate("make_encoder_model", dir.file("encoder.onnx"), {"--fused", "--decomposed-layernorm"});
    EXPECT_EQ(both.exit_code, 1);
    EXPECT_THAT(both.output, HasSubstr("[!] --fused and --decomposed-layernorm cannot be combined"));
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace polygraphy::testing
