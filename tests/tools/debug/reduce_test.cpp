// `polygraphy debug reduce` through the real CLI with real check commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/run_results.h"
#include "build_paths.h"

namespace polygraphy::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ModelBuilder;
using testing::run_polygraphy;
using testing::TempDir;

constexpr const char* kTarget = "TARGET_NODE";

Tensor scalar_like(float value) {
    return Tensor::from_doubles(DataType::kFloat32, {1}, {value});
}

// A chain x -> node 0 -> ... -> node n-1 -> y of element-wise nodes; node `target` is TARGET_NODE.
// A constant-only Add (folded before reducing) feeds one node. With `perturb`, the target's output
// gets +10 from an extra Add (same tensor names otherwise): a stand-in for a backend bug there.
ModelBuilder chain_model(int n, int target, bool perturb = false) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("c_half", scalar_like(0.5f));
    builder.initializer("c_a", scalar_like(1.25f));
    builder.initializer("c_b", scalar_like(0.25f));
    builder.initializer("c_ten", scalar_like(10.0f));
    builder.node("Add", {"c_a", "c_b"}, {"c_sum"}, "const_fold_me");
    const char* ops[] = {"Add", "Relu", "Mul", "Neg", "Abs", "Identity"};
    std::string previous = "x";
    for (int i = 0; i < n; ++i) {
        const std::string op = ops[i % 6];
        std::vector<std::string> inputs = {previous};
        if (op == "Add") inputs.push_back("c_half");
        if (op == "Mul") inputs.push_back("c_sum");
        std::string out = "y";
        if (i != n - 1) out = std::string("t").append(std::to_string(i));
        std::string name = kTarget;
        if (i != target) name = "node_" + op + "_" + std::to_string(i);
        if (i == target && perturb) {
            builder.node(op, inputs, {out + "_raw"}, name);
            builder.node("Add", {out + "_raw", "c_ten"}, {out}, "perturbation");
        } else {
            builder.node(op, inputs, {out}, name);
        }
        previous = out;
    }
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    return builder;
}

// Two inputs, two branches, a node reading both, and two outputs:
//   x0 -> a0 Abs -> a1 Add -> a2 Relu -> a3 Mul ----------------> m0 Add -> m1 Relu -> m2 Add -> y0
//   x1 -> b0 Neg -> b1 Abs -> b2 Add --------------------------/                      /
//   x0, b1 -> cross Mul -------------------------------------------------------------/
//   a3 -> o1 Neg -> y1
ModelBuilder branching_model(const std::string& target, bool perturb = false) {
    ModelBuilder builder;
    builder.input("x0", DataType::kFloat32, Shape{2, 3});
    builder.input("x1", DataType::kFloat32, Shape{2, 3});
    builder.initializer("c_half", scalar_like(0.5f));
    builder.initializer("c_ten", scalar_like(10.0f));
    struct Spec {
        std::string name, op;
        std::vector<std::string> inputs;
        std::string output;
    };
    const std::vector<Spec> specs = {
        {"a0", "Abs", {"x0"}, "ta0"},           {"b0", "Neg", {"x1"}, "tb0"},
        {"a1", "Add", {"ta0", "c_half"}, "ta1"}, {"b1", "Abs", {"tb0"}, "tb1"},
        {"a2", "Relu", {"ta1"}, "ta2"},         {"b2", "Add", {"tb1", "c_half"}, "tb2"},
        {"a3", "Mul", {"ta2", "c_half"}, "ta3"}, {"cross", "Mul", {"x0", "tb1"}, "tcross"},
        {"m0", "Add", {"ta3", "tb2"}, "tm0"},   {"o1", "Neg", {"ta3"}, "y1"},
        {"m1", "Relu", {"tm0"}, "tm1"},         {"m2", "Add", {"tm1", "tcross"}, "y0"},
    };
    for (const auto& spec : specs) {
        const std::string name = spec.name == target ? kTarget : "node_" + spec.name;
        if (spec.name == target && perturb) {
            builder.node(spec.op, spec.inputs, {spec.output + "_raw"}, name);
            builder.node("Add", {spec.output + "_raw", "c_ten"}, {spec.output}, "perturbation");
        } else {
            builder.node(spec.op, spec.inputs, {spec.output}, name);
        }
    }
    builder.output("y0", DataType::kFloat32, Shape{2, 3});
    builder.output("y1", DataType::kFloat32, Shape{2, 3});
    return builder;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
    return count;
}

std::size_t ceil_log2(std::size_t n) {
    std::size_t bits = 0;
    while ((std::size_t{1} << bits) < n) ++bits;
    return bits;
}

// A check that fails exactly when the candidate model contains the target node.
std::vector<std::string> contains_target_check(const std::string& artifact) {
    return {"--check", "sh", "-c", std::string("! grep -q -a ") + kTarget + " " + artifact};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

void expect_target_alone(const std::string& path) {
    const OnnxModel reduced = onnx_from_path(path);
    ASSERT_EQ(reduced->graph().node_size(), 1);
    EXPECT_EQ(reduced->graph().node(0).name(), kTarget);
}

// The reduced model must be valid and runnable on its own.
void expect_runnable(const std::string& path) {
    const auto result = run_polygraphy({"run", path, "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(DebugReduce, ChainBisectEndsWithTheFailingNodeInLogarithmicChecks) {
    for (const int target : {0, 5, 11, 15}) {
        TempDir dir;
        chain_model(16, target).save(dir.file("model.onnx"));
        const std::string artifact = dir.file("polygraphy_debug.onnx");
        const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                                   "--iter-artifact", artifact},
                                                  contains_target_check(artifact)));
        ASSERT_EQ(result.exit_code, 0) << result.output;
        expect_target_alone(dir.file("reduced.onnx"));
        expect_runnable(dir.file("reduced.onnx"));
        // 16 nodes after folding the constant-only Add: 1 check of the whole model + 2 * log2(16).
        EXPECT_LE(count_of(result.output, "Running check command:"), 1 + 2 * ceil_log2(16)) << result.output;
        EXPECT_THAT(result.output, HasSubstr("Reducing model outputs"));
        if (target != 0) {
            EXPECT_THAT(result.output, HasSubstr("Reducing model inputs"));
        }
        EXPECT_THAT(result.output, HasSubstr("| Nodes: 16 of 16 |"));
        EXPECT_THAT(result.output, HasSubstr("Verdict: fail"));
        EXPECT_THAT(result.output, HasSubstr("Minimum Bad Model:"));
        EXPECT_FALSE(fs::exists(artifact));
    }
}

TEST(DebugReduce, ChainLinearEndsWithTheFailingNode) {
    TempDir dir;
    chain_model(8, 3).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--mode", "linear", "--iter-artifact", artifact},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));
    EXPECT_LE(count_of(result.output, "Running check command:"), 1u + 2 * 8);
}

TEST(DebugReduce, BranchingModelBisectEndsWithTheFailingNode) {
    for (const std::string target : {"a1", "b1", "cross", "m0", "o1", "m2", "a0"}) {
        SCOPED_TRACE(target);
        TempDir dir;
        branching_model(target).save(dir.file("model.onnx"));
        const std::string artifact = dir.file("polygraphy_debug.onnx");
        const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                                   "--iter-artifact", artifact, "--min-good", dir.file("good.onnx")},
                                                  contains_target_check(artifact)));
        ASSERT_EQ(result.exit_code, 0) << result.output;
        expect_target_alone(dir.file("reduced.onnx"));
        expect_runnable(dir.file("reduced.onnx"));
        EXPECT_LE(count_of(result.output, "Running check command:"), 1 + 2 * ceil_log2(12)) << result.output;
        // The minimal good model passes: it does not hold the target. When the target is the
        // first node every candidate holds it, so there is none (and a warning says so).
        if (target == "a0") {
            EXPECT_FALSE(fs::exists(dir.file("good.onnx")));
            EXPECT_THAT(result.output, HasSubstr("Could not find a minimal model close in size to the reduced model"));
            continue;
        }
        ASSERT_TRUE(fs::exists(dir.file("good.onnx"))) << result.output;
        const OnnxModel good = onnx_from_path(dir.file("good.onnx"));
        EXPECT_GE(good->graph().node_size(), 1);
        for (const auto& node : good->graph().node()) EXPECT_NE(node.name(), kTarget);
        expect_runnable(dir.file("good.onnx"));
    }
}

TEST(DebugReduce, MultipleOutputsAreKeptWhileTheyMatter) {
    // Fails only when both outputs' producers are present: the reduced model keeps both outputs.
    TempDir dir;
    branching_model("none").save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                        "--iter-artifact", artifact, "--mode", "linear", "--check", "sh", "-c",
                                        "! (grep -q -a node_o1 " + artifact + " && grep -q -a node_m2 " + artifact + ")"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const OnnxModel reduced = onnx_from_path(dir.file("reduced.onnx"));
    ASSERT_EQ(reduced->graph().node_size(), 2);
    EXPECT_EQ(reduced->graph().output_size(), 2);
    expect_runnable(dir.file("reduced.onnx"));
}

// Saves, for the model at `model_path`, the outputs of every tensor (mark all) and one feed holding
// the inputs and every tensor's value, as a check's --load-outputs / --load-inputs.
void save_layerwise(const TempDir& dir, const std::string& model_path, const std::string& prefix) {
    const auto run = run_polygraphy({"run", model_path, "--ref", "--onnx-outputs", "mark", "all", "--save-inputs",
                                     dir.file(prefix + "_in.json"), "--save-outputs", dir.file(prefix + "_golden.json")});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    InputList inputs = load_inputs(dir.file(prefix + "_in.json"));
    const RunResults golden = RunResults::load(dir.file(prefix + "_golden.json"));
    ASSERT_EQ(inputs.size(), 1u);
    for (const auto& [name, value] : golden.lst.at(0).second.at(0).outputs) inputs[0].set(name, value);
    save_inputs(inputs, dir.file(prefix + "_layerwise.json"));
}

TEST(DebugReduce, AccuracyCheckAgainstPerturbedGoldenOutputsFindsThePerturbedNode) {
    struct Case {
        std::string name;
        ModelBuilder model, perturbed;
    };
    std::vector<Case> cases;
    cases.push_back({"chain", chain_model(12, 7), chain_model(12, 7, true)});
    cases.push_back({"branch b1", branching_model("b1"), branching_model("b1", true)});
    cases.push_back({"merge m0", branching_model("m0"), branching_model("m0", true)});
    for (auto& c : cases) {
        SCOPED_TRACE(c.name);
        TempDir dir;
        c.model.save(dir.file("model.onnx"));
        c.perturbed.save(dir.file("perturbed.onnx"));
        // Golden values from the "buggy" run: the target's output (and everything after it) differs.
        save_layerwise(dir, dir.file("perturbed.onnx"), "bad");
        const std::string artifact = dir.file("polygraphy_debug.onnx");
        auto args = std::vector<std::string>{"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                             "--iter-artifact", artifact, "--load-inputs", dir.file("bad_layerwise.json"),
                                             "--check", POLYGRAPHY_CLI_PATH, "run", artifact, "--ref", "--load-inputs",
                                             dir.file("bad_layerwise.json"), "--load-outputs", dir.file("bad_golden.json")};
        const auto reduced = run_polygraphy(args);
        ASSERT_EQ(reduced.exit_code, 0) << reduced.output;
        expect_target_alone(dir.file("reduced.onnx"));
        EXPECT_THAT(reduced.output, HasSubstr("Difference exceeds tolerance"));
    }
}

TEST(DebugReduce, FrozenInputsNeedNoInputDataInTheCheck) {
    TempDir dir;
    branching_model("b2").save(dir.file("model.onnx"));
    branching_model("b2", true).save(dir.file("perturbed.onnx"));
    save_layerwise(dir, dir.file("perturbed.onnx"), "bad");
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    // Intermediate inputs are initializers with the loaded values; the original inputs are
    // generated by the check with the same seed as the golden run.
    const auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                        "--iter-artifact", artifact, "--freeze-inputs", "--load-inputs",
                                        dir.file("bad_layerwise.json"), "--check", POLYGRAPHY_CLI_PATH, "run", artifact,
                                        "--ref", "--load-outputs", dir.file("bad_golden.json")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));
    const OnnxModel reduced = onnx_from_path(dir.file("reduced.onnx"));
    EXPECT_EQ(reduced->graph().input_size(), 0);
    EXPECT_EQ(reduced->graph().initializer_size(), 2);  // tb1 (frozen) and c_half
}

TEST(DebugReduce, SavesLayerwiseInputsForTheCheck) {
    TempDir dir;
    chain_model(4, 2).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--save-layerwise-inputs",
                                               dir.file("layerwise.json")},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const InputList layerwise = load_inputs(dir.file("layerwise.json"));
    ASSERT_EQ(layerwise.size(), 1u);
    for (const char* name : {"x", "t0", "t1", "t2", "y"}) EXPECT_TRUE(layerwise[0].find(name)) << name;
    // The reduced model runs on those values.
    const auto run = run_polygraphy({"run", dir.file("reduced.onnx"), "--ref", "--load-inputs", dir.file("layerwise.json")});
    EXPECT_EQ(run.exit_code, 0) << run.output;
}

// Polygraphy's reduce reads the first sample only (NVIDIA/TensorRT #4607): here every sample's values
// are saved, so a check that loads them checks each candidate on all of them.
TEST(DebugReduce, SavesTheLayerwiseInputsOfEverySample) {
    TempDir dir;
    chain_model(4, 2).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    auto result = run_polygraphy(
        concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"), "--iter-artifact", artifact,
                "--iterations", "3", "--save-layerwise-inputs", dir.file("layerwise.json")},
               contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Saving layerwise input data of 3 sample(s) to"));
    const InputList layerwise = load_inputs(dir.file("layerwise.json"));
    ASSERT_EQ(layerwise.size(), 3u);
    EXPECT_FALSE(layerwise[0].at("t1").equals(layerwise[2].at("t1")));
    // One sample's values cannot be frozen for three.
    result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("frozen.onnx"),
                                    "--iter-artifact", artifact, "--iterations", "3", "--freeze-inputs"},
                                   contains_target_check(artifact)));
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output,
                HasSubstr("[!] --freeze-inputs stores one sample's intermediate values in the subgraphs, "
                          "but the data loader gives 3"));
}

TEST(DebugReduce, WithInspectModelAndFailRegex) {
    // Polygraphy's example: a failure whenever the model holds a node whose op matches.
    if (run_polygraphy({"inspect", "model", "-h"}).exit_code != 0) GTEST_SKIP() << "inspect model is not in this build";
    TempDir dir;
    chain_model(12, 4).save(dir.file("model.onnx"));  // node 4 is the only Abs
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                        "--iter-artifact", artifact, "--fail-regex", "Op: Abs", "--check",
                                        POLYGRAPHY_CLI_PATH, "inspect", "model", artifact, "--show", "layers"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));

    // On the branching model, by node name (inspect lists `Node i    | <name> [Op: ...]`).
    for (const std::string target : {"cross", "b2", "m0"}) {
        SCOPED_TRACE(target);
        TempDir branch_dir;
        branching_model(target).save(branch_dir.file("model.onnx"));
        const std::string branch_artifact = branch_dir.file("polygraphy_debug.onnx");
        const auto branch = run_polygraphy({"debug", "reduce", branch_dir.file("model.onnx"), "-o",
                                            branch_dir.file("reduced.onnx"), "--iter-artifact", branch_artifact,
                                            "--fail-regex", std::string(kTarget) + " \\[Op: ", "--check",
                                            POLYGRAPHY_CLI_PATH, "inspect", "model", branch_artifact, "--show", "layers"});
        ASSERT_EQ(branch.exit_code, 0) << branch.output;
        expect_target_alone(branch_dir.file("reduced.onnx"));
        EXPECT_LE(count_of(branch.output, "Running check command:"), 1 + 2 * ceil_log2(12));
    }
}

TEST(DebugReduce, IterationModelsCanBeSortedAsArtifacts) {
    TempDir dir;
    chain_model(8, 5).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--artifacts", artifact, "--art-dir",
                                               dir.file("arts")},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::size_t good = 0, bad = 0;
    bool original_sorted = false;
    for (const auto& entry : fs::recursive_directory_iterator(dir.file("arts"))) {
        if (!entry.is_regular_file()) continue;
        const std::string name = entry.path().filename().string();
        const bool is_bad = entry.path().parent_path().filename() == "bad";
        (is_bad ? bad : good) += 1;
        if (name.find("_N0_original.onnx") != std::string::npos) original_sorted = is_bad;
        // Sorted models hold the target exactly when they failed.
        const OnnxModel model = onnx_from_path(entry.path().string());
        bool has_target = false;
        for (const auto& node : model->graph().node()) has_target = has_target || node.name() == kTarget;
        EXPECT_EQ(has_target, is_bad) << name;
    }
    EXPECT_TRUE(original_sorted);
    EXPECT_EQ(good + bad, count_of(result.output, "Running check command:"));
    EXPECT_GE(good, 1u);
}

TEST(DebugReduce, NoReduceInputsKeepsTheModelInputs) {
    TempDir dir;
    chain_model(8, 5).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--no-reduce-inputs"},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const OnnxModel reduced = onnx_from_path(dir.file("reduced.onnx"));
    EXPECT_EQ(reduced->graph().node_size(), 6);
    ASSERT_EQ(reduced->graph().input_size(), 1);
    EXPECT_EQ(reduced->graph().input(0).name(), "x");
    EXPECT_EQ(reduced->graph().node(5).name(), kTarget);
    EXPECT_THAT(result.output, Not(HasSubstr("Reducing model inputs")));
    expect_runnable(dir.file("reduced.onnx"));
}

TEST(DebugReduce, BranchingModelLinearEndsWithTheFailingNode) {
    TempDir dir;
    branching_model("cross").save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--mode", "linear"},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));
    expect_runnable(dir.file("reduced.onnx"));
}

TEST(DebugReduce, DebugReplaySkipsRecordedIterations) {
    TempDir dir;
    chain_model(8, 5).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto first = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                              "--iter-artifact", artifact, "--save-debug-replay", dir.file("replay.json")},
                                             contains_target_check(artifact)));
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_TRUE(fs::exists(dir.file("replay_skip_current.json")));
    const std::string replay = testing::run_command("cat " + dir.file("replay.json")).output;
    EXPECT_THAT(replay, HasSubstr("\"_N0_original\": {\n        \"success\": false,\n        \"iteration_info\": {\n"));
    EXPECT_THAT(replay, HasSubstr("\"_N0_outputs\""));

    // Every verdict comes from the replay: a check that always fails changes nothing and never runs.
    const auto second = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced2.onnx"),
                                        "--iter-artifact", artifact, "--load-debug-replay", dir.file("replay.json"),
                                        "--check", "false"});
    ASSERT_EQ(second.exit_code, 0) << second.output;
    EXPECT_EQ(count_of(second.output, "Running check command:"), 0u);
    EXPECT_THAT(second.output, HasSubstr("Loading iteration information from debug replay: success=False"));
    expect_target_alone(dir.file("reduced2.onnx"));

    std::ofstream(dir.file("bad_replay.json")) << "{\"_N0_original\": {\"iteration_info\": {}}}";
    const auto bad = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced3.onnx"),
                                     "--iter-artifact", artifact, "--load-debug-replay", dir.file("bad_replay.json"),
                                     "--check", "false"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_THAT(bad.output, HasSubstr("debug replay entry '_N0_original' has no verdict"));
}

TEST(DebugReduce, OutputsOptionAndNoShapeInference) {
    // --outputs re-marks the model's outputs before reducing (nodes after t3 go away).
    TempDir dir;
    chain_model(10, 2).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--outputs", "t3", "--no-shape-inference"},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("| Nodes: 4 of 4 |"));
    expect_target_alone(dir.file("reduced.onnx"));
}

TEST(DebugReduce, ModelWithoutFailureIsAnError) {
    TempDir dir;
    chain_model(6, 2).save(dir.file("model.onnx"));
    const auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                        "--iter-artifact", dir.file("dbg.onnx"), "--check", "true"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] The original model did not fail the check, so there is nothing to reduce."));
    EXPECT_EQ(count_of(result.output, "Running check command:"), 1u);
    EXPECT_FALSE(fs::exists(dir.file("reduced.onnx")));
}

TEST(DebugReduce, CheckThatCannotStartIsAnError) {
    TempDir dir;
    chain_model(6, 2).save(dir.file("model.onnx"));
    const auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                        "--iter-artifact", dir.file("dbg.onnx"), "--check", "/nonexistent/checker"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Could not start check command '/nonexistent/checker'"));
    EXPECT_FALSE(fs::exists(dir.file("reduced.onnx")));
    EXPECT_FALSE(fs::exists(dir.file("dbg.onnx")));
}

TEST(DebugReduce, CrashingCheckCountsAsFailure) {
    TempDir dir;
    chain_model(8, 5).save(dir.file("model.onnx"));
    const std::string artifact = dir.file("dbg.onnx");
    const auto result =
        run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"), "--iter-artifact",
                        artifact, "--check", "sh", "-c", std::string("grep -q -a ") + kTarget + " " + artifact + " && kill -SEGV $$; true"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));
}

TEST(DebugReduce, OutputPathThatCannotBeWrittenIsAnErrorBeforeAnyCheck) {
    TempDir dir;
    chain_model(6, 2).save(dir.file("model.onnx"));
    std::ofstream(dir.file("afile")) << "x";
    auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("afile/reduced.onnx"),
                                  "--iter-artifact", dir.file("dbg.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Cannot write the reduced model (--output) to " + dir.file("afile/reduced.onnx")));
    EXPECT_EQ(count_of(result.output, "Running check command:"), 0u);

    result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.path(), "--iter-artifact",
                             dir.file("dbg.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("it is a directory"));

    result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("r.onnx"), "--min-good",
                             dir.file("afile/good.onnx"), "--iter-artifact", dir.file("dbg.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Cannot write the minimal good model (--min-good)"));
}

TEST(DebugReduce, BadOptions) {
    TempDir dir;
    chain_model(4, 1).save(dir.file("model.onnx"));
    auto result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --output (where to write the reduced model) and/or --min-good"));

    std::ofstream(dir.file("dbg.onnx")) << "x";
    result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("r.onnx"), "--iter-artifact",
                             dir.file("dbg.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("dbg.onnx already exists, refusing to overwrite."));

    result = run_polygraphy({"debug", "reduce", "-o", dir.file("r.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 2);

    result = run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("r.onnx"), "--mode", "fast",
                             "--check", "false"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("invalid choice: 'fast'"));

    result = run_polygraphy({"debug", "reduce", dir.file("missing.onnx"), "-o", dir.file("r.onnx"), "--iter-artifact",
                             dir.file("dbg2.onnx"), "--check", "false"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("missing.onnx"));
}

TEST(DebugReduce, ModelInputShapesFreezeDynamicInputs) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    builder.node("Relu", {"x"}, {"t0"}, "node_relu");
    builder.node("Neg", {"t0"}, {"t1"}, kTarget);
    builder.node("Abs", {"t1"}, {"y"}, "node_abs");
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    builder.save(dir.file("model.onnx"));
    const std::string artifact = dir.file("dbg.onnx");
    const auto result = run_polygraphy(concat({"debug", "reduce", dir.file("model.onnx"), "-o", dir.file("reduced.onnx"),
                                               "--iter-artifact", artifact, "--model-input-shapes", "x:[4,3]"},
                                              contains_target_check(artifact)));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_target_alone(dir.file("reduced.onnx"));
    const OnnxModel reduced = onnx_from_path(dir.file("reduced.onnx"));
    ASSERT_EQ(reduced->graph().input_size(), 1);
    const auto& dims = reduced->graph().input(0).type().tensor_type().shape().dim();
    ASSERT_EQ(dims.size(), 2);
    EXPECT_EQ(dims[0].dim_value(), 4);
}

}  // namespace
}  // namespace polygraphy::tools
