// Our weight, sparsity and data-dependent-shape tools against what Polygraphy 0.49.27 prints and
// writes for the same models (fixtures recorded by tests/fixtures/parity/record.sh).
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "build_paths.h"
#include "parity_models.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/sparsity.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::run_polygraphy;
using testing::TempDir;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(POLYGRAPHY_SOURCE_DIR) + "/tests/fixtures/parity/";

// Writes the models for record.sh (run only through it: the test is disabled).
TEST(ParityFixtures, DISABLED_WriteModels) {
    const char* folder = std::getenv("POLYGRAPHY_PARITY_MODEL_DIR");
    ASSERT_NE(folder, nullptr) << "set POLYGRAPHY_PARITY_MODEL_DIR";
    for (auto& [name, builder] : testing::parity_models()) builder.save(std::string(folder) + "/" + name);
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> fixture_lines(const std::string& name) {
    return split_lines(read_file(kFixtures + name + ".log"));
}

onnx::ModelProto fixture_model(const std::string& name) {
    onnx::ModelProto model;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(read_file(kFixtures + name + ".textproto"), &model))
        << name;
    return model;
}

// Runs our CLI in a folder holding the parity models, as record.sh runs Polygraphy, and returns its
// lines filtered as record.sh filters Polygraphy's (plus our summaries' "IR Version" line, which
// Polygraphy does not print).
class ParityCli : public ::testing::Test {
protected:
    void SetUp() override {
        for (auto& [name, builder] : testing::parity_models()) builder.save(dir_.file(name));
    }

    std::vector<std::string> run(const std::vector<std::string>& args, int expected_exit = 0) {
        std::string command = "cd '" + dir_.path() + "' && '" + POLYGRAPHY_CLI_PATH + "'";
        for (const auto& arg : args) command += " '" + arg + "'";
        const auto result = testing::run_command(command);
        EXPECT_EQ(result.exit_code, expected_exit) << result.output;
        std::vector<std::string> lines;
        for (std::string line : split_lines(result.output)) {
            if (line.rfind("[I] RUNNING | ", 0) == 0 || line.rfind("[I] PASSED | ", 0) == 0 ||
                line.find("IR Version: ") != std::string::npos || line.find("Loaded Module") != std::string::npos)
                continue;
            for (auto at = line.find(dir_.path()); at != std::string::npos; at = line.find(dir_.path()))
                line.replace(at, dir_.path().size(), "@DIR@");
            lines.push_back(line);
        }
        return lines;
    }

    TempDir dir_;
};

TEST_F(ParityCli, InspectSparsityPrintsPolygraphysLines) {
    EXPECT_EQ(run({"inspect", "sparsity", "sparsity.onnx", "-vvvv"}), fixture_lines("inspect_sparsity"));
}

TEST_F(ParityCli, PruneWritesPolygraphysWeights) {
    EXPECT_EQ(run({"surgeon", "prune", "sparsity.onnx", "-o", "pruned.onnx"}), fixture_lines("prune"));
    const onnx::ModelProto expected = fixture_model("pruned");
    const OnnxModel ours = onnx_from_path(dir_.file("pruned.onnx"));
    EXPECT_EQ(ours->producer_name(), expected.producer_name());
    ASSERT_EQ(ours->graph().initializer_size(), expected.graph().initializer_size());
    for (int i = 0; i < expected.graph().initializer_size(); ++i) {
        const auto& want = expected.graph().initializer(i);
        const auto& got = ours->graph().initializer(i);
        EXPECT_EQ(got.name(), want.name());
        EXPECT_TRUE(tensor_from_proto(got).equals(tensor_from_proto(want))) << want.name();
    }
}

TEST_F(ParityCli, WeightStripStripsWhatPolygraphyStrips) {
    std::ofstream(dir_.file("exclude.txt")) << "gemm_b\nnot_a_weight\n";
    EXPECT_EQ(run({"surgeon", "weight-strip", "strip.onnx", "-o", "stripped.onnx", "--exclude-list", "exclude.txt"}),
              fixture_lines("weight_strip"));
    const onnx::ModelProto expected = fixture_model("stripped");
    const OnnxModel ours = onnx_from_path(dir_.file("stripped.onnx"), std::nullopt, true);
    EXPECT_EQ(ours->doc_string(), expected.doc_string());
    ASSERT_EQ(ours->graph().initializer_size(), expected.graph().initializer_size());
    for (int i = 0; i < expected.graph().initializer_size(); ++i) {
        const auto& want = expected.graph().initializer(i);
        const auto& got = ours->graph().initializer(i);
        EXPECT_EQ(got.name(), want.name());
        EXPECT_EQ(got.doc_string(), want.doc_string()) << want.name();
        EXPECT_EQ(got.raw_data(), want.raw_data()) << want.name();
    }

    // Reconstruction: Polygraphy's lines; every stripped weight holds values again, the sparse one 2:4.
    std::vector<std::string> lines =
        run({"surgeon", "weight-reconstruct", "stripped.onnx", "-o", "reconstructed.onnx", "-v"});
    // Polygraphy rebuilds a pruned model with its first opset import only; we keep them all.
    const auto new_model = std::find(lines.begin(), lines.end(), "[I] New Model:");
    ASSERT_NE(new_model, lines.end());
    const std::string kOtherOpsets = " | Other Opsets: {'custom.plugins': 1}";
    ASSERT_THAT(*(new_model + 1), ::testing::EndsWith(kOtherOpsets));
    (new_model + 1)->resize((new_model + 1)->size() - kOtherOpsets.size());
    EXPECT_EQ(lines, fixture_lines("weight_reconstruct"));
    const OnnxModel reconstructed = onnx_from_path(dir_.file("reconstructed.onnx"));
    for (const auto& initializer : reconstructed->graph().initializer()) {
        const Tensor values = tensor_from_proto(initializer);
        EXPECT_FALSE(initializer.raw_data().empty()) << initializer.name();
        if (initializer.name() == "gemm_w") {
            EXPECT_TRUE(is_2_4_sparse(values, 0));
        } else if (initializer.name() == "conv_w") {
            EXPECT_FALSE(is_2_4_sparse(values, 1));
        }
    }
}

TEST_F(ParityCli, ListUnboundedDdsPrintsPolygraphysLine) {
    EXPECT_EQ(run({"inspect", "model", "dds.onnx", "--list-unbounded-dds"}), fixture_lines("list_unbounded_dds"));
}

// Polygraphy orders "Set tensor upper bounds" by a Python set and appends the Min nodes at the end
// of the graph; we keep the order they were found in and put each Min after its producer.
TEST_F(ParityCli, SetUpperBoundsBoundsWhatPolygraphyBounds) {
    const std::vector<std::string> ours = run({"surgeon", "sanitize", "dds.onnx", "--set-unbounded-dds-upper-bound",
                                               "1000", "shape:5", "-o", "bounded.onnx"});
    const std::vector<std::string> polygraphy = fixture_lines("set_upper_bounds");
    const std::string kSet = "[I] Set tensor upper bounds: {";
    auto entries = [&](const std::vector<std::string>& lines) {
        std::vector<std::string> items;
        for (const auto& line : lines)
            if (line.rfind(kSet, 0) == 0) {
                std::string rest = line.substr(kSet.size(), line.size() - kSet.size() - 1);
                for (std::size_t at; (at = rest.find(", ")) != std::string::npos; rest.erase(0, at + 2))
                    items.push_back(rest.substr(0, at));
                items.push_back(rest);
            }
        std::sort(items.begin(), items.end());
        return items;
    };
    EXPECT_THAT(entries(ours), ::testing::ElementsAre("'limit': 1000", "'limit_again': 1000", "'shape': 5"));
    EXPECT_EQ(entries(ours), entries(polygraphy));
    auto without_set_line = [&](std::vector<std::string> lines) {
        std::erase_if(lines, [&](const std::string& line) { return line.rfind(kSet, 0) == 0; });
        return lines;
    };
    EXPECT_EQ(without_set_line(ours), without_set_line(polygraphy));

    const onnx::ModelProto expected = fixture_model("bounded");
    const OnnxModel bounded = onnx_from_path(dir_.file("bounded.onnx"));
    auto min_nodes = [](const onnx::GraphProto& graph) {
        std::vector<std::string> nodes;
        for (const auto& node : graph.node())
            if (node.op_type() == "Min") nodes.push_back(node.input(0) + "," + node.input(1) + "->" + node.output(0));
        std::sort(nodes.begin(), nodes.end());
        return nodes;
    };
    EXPECT_EQ(min_nodes(bounded->graph()), min_nodes(expected.graph()));
    EXPECT_EQ(bounded->graph().node_size(), expected.graph().node_size());
    for (const auto& want : expected.graph().initializer()) {
        const auto found = std::find_if(bounded->graph().initializer().begin(), bounded->graph().initializer().end(),
                                        [&](const auto& got) { return got.name() == want.name(); });
        ASSERT_NE(found, bounded->graph().initializer().end()) << want.name();
        EXPECT_TRUE(tensor_from_proto(*found).equals(tensor_from_proto(want))) << want.name();
    }
    // Nothing is left unbounded.
    EXPECT_THAT(run({"inspect", "model", "bounded.onnx", "--list-unbounded-dds"}).back(),
                ::testing::EndsWith("Found tensors with unbounded DDS: []"));
}

TEST_F(ParityCli, Bfloat16WeightsPrintAtTheirFloat32Values) {
    EXPECT_EQ(run({"inspect", "model", "bf16_weight.onnx", "--show", "weights"}), fixture_lines("bf16_weights"));
}

// The summaries end with one blank line, "Loading model:" comes once with the absolute path, and
// "Overriding input shapes to:" is printed.
TEST_F(ParityCli, SanitizeSummariesMatchPolygraphys) {
    EXPECT_EQ(
        run({"surgeon", "sanitize", "sparsity.onnx", "--override-input-shapes", "b:[2,6]", "-o", "overridden.onnx"}),
        fixture_lines("override_shapes"));
}

}  // namespace
}  // namespace polygraphy::tools
