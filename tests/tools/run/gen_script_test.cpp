// `polygraphy run --gen-script`: the generated C++ program is compiled the way users build it
// (polygraphy-config) and must do what the command does: same exit status, same saved files.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "build_paths.h"
#include "model_builder.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/job/script.h"
#include "polygraphy/tools/args/arg_group.h"
#include "tools/args/parser.h"
#include "tools/registry.h"
#include "tools/run/run.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_command;
using testing::run_polygraphy;
using testing::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

class GenScript : public ::testing::Test {
protected:
    void SetUp() override {
        // y = Relu(x) * Cast(n): a float and an integer input, and intermediates for `mark all`.
        testing::ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 3});
        builder.input("n", DataType::kInt64, Shape{2, 3});
        builder.node("Relu", {"x"}, {"relu"}, "relu");
        auto& cast = builder.node("Cast", {"n"}, {"n_float"}, "cast");
        testing::set_attr(cast, "to", int64_t{1});
        builder.node("Mul", {"relu", "n_float"}, {"y"}, "mul");
        builder.output("y", DataType::kFloat32, Shape{2, 3});
        model_ = dir_.file("model.onnx");
        builder.save(model_);
    }

    // Writes the program for `args` + `--gen-script`, checks that nothing ran, and returns its text.
    std::string generate(std::vector<std::string> args, const std::string& name = "gen.cpp") {
        args.insert(args.begin(), "run");
        args.push_back("--gen-script");
        args.push_back(dir_.file(name));
        const CommandResult result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
        return read_text(dir_.file(name));
    }

    // Compiles the program as its header comment says (c++ ... $(polygraphy-config --cflags --libs)).
    std::string compile(const std::string& source_name) {
        const std::string exe = dir_.file(source_name + ".bin");
        const CommandResult result = run_command(std::string(POLYGRAPHY_TEST_CXX) + " -O0 " + dir_.file(source_name) +
                                                 " $(" + POLYGRAPHY_CONFIG_PATH + " --cflags --libs) -o " + exe);
        EXPECT_EQ(result.exit_code, 0) << result.output;
        return exe;
    }

    // The command with `out_prefix` in its output paths, and the generated program with `gen_`.
    void expect_same_as_command(const std::function<std::vector<std::string>(const std::string&)>& make_args,
                                int expected_status, const std::string& source_name) {
        std::vector<std::string> cli_args = make_args("cli_");
        cli_args.insert(cli_args.begin(), "run");
        const CommandResult cli = run_polygraphy(cli_args);
        ASSERT_EQ(cli.exit_code, expected_status) << cli.output;

        const std::string program = generate(make_args("gen_"), source_name);
        const std::string exe = compile(source_name);
        // A user program has no leak suppressions of its own: in sanitizer builds, tell LeakSanitizer
        // about ONNX Runtime's one process-lifetime allocation as the CLI and this binary do.
        const std::string suppressions = dir_.file("lsan.supp");
        std::ofstream(suppressions) << "leak:libonnxruntime.so\n";
        const CommandResult generated = run_command("LSAN_OPTIONS=suppressions=" + suppressions + " " + exe);
        EXPECT_EQ(generated.exit_code, expected_status) << program << "\n" << generated.output;
    }

    void expect_same_results(const std::string& cli_path, const std::string& gen_path, std::size_t entries) {
        const RunResults cli = RunResults::load(cli_path), gen = RunResults::load(gen_path);
        ASSERT_EQ(cli.size(), entries);
        ASSERT_EQ(gen.size(), entries);
        for (std::size_t e = 0; e < entries; ++e) {
            const auto& [cli_name, cli_iterations] = cli.lst[e];
            const auto& [gen_name, gen_iterations] = gen.lst[e];
            EXPECT_EQ(cli_name.substr(0, cli_name.find("-N")), gen_name.substr(0, gen_name.find("-N")));
            ASSERT_EQ(cli_iterations.size(), gen_iterations.size());
            for (std::size_t i = 0; i < cli_iterations.size(); ++i) {
                EXPECT_EQ(cli_iterations[i].outputs.keys(), gen_iterations[i].outputs.keys());
                for (const auto& [name, tensor] : cli_iterations[i].outputs)
                    EXPECT_TRUE(tensor.equals(gen_iterations[i].outputs.at(name))) << name << " iteration " << i;
            }
        }
    }

    TempDir dir_;
    std::string model_;
};

TEST_F(GenScript, RefWithRangesSeedAndSavedFilesMatchesTheCommand) {
    auto args = [&](const std::string& prefix) {
        return std::vector<std::string>{model_,
                                        "--ref",
                                        "--ref-no-fusion",
                                        "--val-range",
                                        "x:[-1,1]",
                                        "n:[0,5]",
                                        "--seed",
                                        "7",
                                        "--iterations",
                                        "2",
                                        "--save-inputs",
                                        dir_.file(prefix + "inputs.json"),
                                        "--save-outputs",
                                        dir_.file(prefix + "outputs.json")};
    };
    expect_same_as_command(args, 0, "ref_only.cpp");
    expect_same_results(dir_.file("cli_outputs.json"), dir_.file("gen_outputs.json"), 1);
    const InputList cli_inputs = load_inputs(dir_.file("cli_inputs.json"));
    const InputList gen_inputs = load_inputs(dir_.file("gen_inputs.json"));
    ASSERT_EQ(cli_inputs.size(), 2u);
    ASSERT_EQ(gen_inputs.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i)
        for (const char* name : {"x", "n"}) EXPECT_TRUE(cli_inputs[i].at(name).equals(gen_inputs[i].at(name)));
}

TEST_F(GenScript, AShardOfTheDataMatchesTheCommand) {
    auto args = [&](const std::string& prefix) {
        return std::vector<std::string>{model_,    "--ref", "--iterations",  "5",
                                        "--shard", "1/2",   "--save-inputs", dir_.file(prefix + "inputs.json")};
    };
    expect_same_as_command(args, 0, "shard.cpp");
    const InputList cli_inputs = load_inputs(dir_.file("cli_inputs.json"));
    const InputList gen_inputs = load_inputs(dir_.file("gen_inputs.json"));
    ASSERT_EQ(cli_inputs.size(), 2u);  // samples 1 and 3 of 5
    ASSERT_EQ(gen_inputs.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(cli_inputs[i].at("x").equals(gen_inputs[i].at("x")));
    // The summary's fingerprints come from the command: a program cannot write it.
    const CommandResult refused = run_polygraphy({"run", model_, "--ref", "--onnxrt", "--save-summary",
                                                  dir_.file("summary.json"), "--gen-script", dir_.file("no.cpp")});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_THAT(refused.output, HasSubstr("--gen-script cannot write --save-summary"));
    EXPECT_FALSE(std::filesystem::exists(dir_.file("no.cpp")));
}

TEST_F(GenScript, MarkAllWithTolerancesFailingComparisonMatchesTheCommand) {
    // Golden results from another seed: the comparison fails (exit status 1) in both.
    const CommandResult golden = run_polygraphy({"run", model_, "--ref", "--seed", "1", "--onnx-outputs", "mark", "all",
                                                 "--save-outputs", dir_.file("golden.json")});
    ASSERT_EQ(golden.exit_code, 0) << golden.output;
    auto args = [&](const std::string& prefix) {
        return std::vector<std::string>{model_,
                                        "--ref",
                                        "--seed",
                                        "2",
                                        "--onnx-outputs",
                                        "mark",
                                        "all",
                                        "--atol",
                                        "1e-3",
                                        "y:0.5",
                                        "--rtol",
                                        "1e-3",
                                        "--check-error-stat",
                                        "max",
                                        "--load-outputs",
                                        dir_.file("golden.json"),
                                        "--save-outputs",
                                        dir_.file(prefix + "outputs.json")};
    };
    expect_same_as_command(args, 1, "mark_all.cpp");
    expect_same_results(dir_.file("cli_outputs.json"), dir_.file("gen_outputs.json"), 1);
    EXPECT_EQ(RunResults::load(dir_.file("gen_outputs.json")).lst[0].second[0].outputs.keys(),
              (std::vector<std::string>{"relu", "n_float", "y"}));
}

TEST_F(GenScript, RefVsOnnxrtMatchesTheCommand) {
    if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
    auto args = [&](const std::string& prefix) {
        return std::vector<std::string>{model_, "--ref",      "--onnxrt",       "--iterations",
                                        "2",    "--atol",     "1e-6",           "--rtol",
                                        "1e-6", "--validate", "--save-outputs", dir_.file(prefix + "outputs.json")};
    };
    expect_same_as_command(args, 0, "ref_vs_onnxrt.cpp");
    expect_same_results(dir_.file("cli_outputs.json"), dir_.file("gen_outputs.json"), 2);
}

TEST_F(GenScript, PostprocessTopKWithIndicesMatchesTheCommand) {
    // Positive values (no Relu ties); golden results of the same run, with row 0 of y reversed, so
    // its top-3 indices are reversed too: tolerance 0 fails, tolerance 2 (only index 0 checked) passes.
    const std::vector<std::string> data = {"--val-range", "x:[1,2]", "n:[1,3]", "--seed", "3"};
    std::vector<std::string> golden_args = {"run", model_, "--ref", "--save-outputs", dir_.file("golden.json")};
    golden_args.insert(golden_args.end(), data.begin(), data.end());
    const CommandResult golden = run_polygraphy(golden_args);
    ASSERT_EQ(golden.exit_code, 0) << golden.output;
    RunResults results = RunResults::load(dir_.file("golden.json"));
    float* y = results.lst.at(0).second.at(0).outputs.at("y").data_as<float>();
    std::swap(y[0], y[2]);
    results.save(dir_.file("reversed.json"));

    auto args = [&](const std::string& tolerance) {
        return [&, tolerance](const std::string& prefix) {
            std::vector<std::string> args = {model_,
                                             "--ref",
                                             "--postprocess",
                                             "top-3",
                                             "z:top-1",
                                             "--compare",
                                             "indices",
                                             "--index-tolerance",
                                             tolerance,
                                             "--load-outputs",
                                             dir_.file("reversed.json"),
                                             "--validate",
                                             "--save-outputs",
                                             dir_.file(prefix + "outputs.json")};
            args.insert(args.end(), data.begin(), data.end());
            return args;
        };
    };
    expect_same_as_command(args("0"), 1, "top_k_fails.cpp");
    // The saved outputs are the raw ones in both.
    expect_same_results(dir_.file("cli_outputs.json"), dir_.file("gen_outputs.json"), 1);
    EXPECT_EQ(RunResults::load(dir_.file("gen_outputs.json")).lst[0].second[0].outputs.at("y").dtype(),
              DataType::kFloat32);
    expect_same_as_command(args("y:2"), 0, "top_k_passes.cpp");

    const std::string program = read_text(dir_.file("top_k_passes.cpp"));
    const std::string load = "results.extend(RunResults::load(\"" + dir_.file("reversed.json") + "\"));";
    const std::string postprocess = "Comparator::postprocess(results, postprocess_func::top_k(top_k_settings));";
    EXPECT_THAT(program, HasSubstr("top_k_settings.set(\"\", TopK{3, -1});"));
    EXPECT_THAT(program, HasSubstr("top_k_settings.set(\"z\", TopK{1, -1});"));
    EXPECT_THAT(program, HasSubstr("index_tolerance.set(\"y\", 2);"));
    EXPECT_THAT(program, HasSubstr("Comparator::compare_accuracy(results, compare_func::indices(index_tolerance));"));
    // As in Polygraphy: results are saved raw, then loaded ones join them, then all are post-processed.
    ASSERT_NE(program.find(load), std::string::npos);
    ASSERT_NE(program.find(postprocess), std::string::npos);
    EXPECT_LT(program.find("results.save("), program.find(load));
    EXPECT_LT(program.find(load), program.find(postprocess));
    EXPECT_LT(program.find(postprocess), program.find("compare_accuracy"));

    // --fail-fast reaches the indices function too.
    const std::string fail_fast = generate({model_, "--ref", "--ref", "--compare", "indices", "--fail-fast"});
    EXPECT_THAT(fail_fast, HasSubstr("compare_func::indices(index_tolerance, true), true);"));
    EXPECT_THAT(fail_fast, Not(HasSubstr("postprocess")));
}

TEST_F(GenScript, WritesEveryOptionItScripts) {
    const std::string program = generate({model_,
                                          "--ref",
                                          "--ref-threads",
                                          "2",
                                          "--ref-no-fusion",
                                          "--ref-profile",
                                          "--input-shapes",
                                          "x:[2,3]",
                                          "--int-min",
                                          "1",
                                          "--int-max",
                                          "3",
                                          "--warm-up",
                                          "2",
                                          "--onnx-outputs",
                                          "relu",
                                          "--onnx-exclude-outputs",
                                          "y",
                                          "--save-onnx",
                                          dir_.file("saved.onnx"),
                                          "--no-shape-check",
                                          "--infinities-compare-equal",
                                          "--error-quantile",
                                          "0.9",
                                          "--fail-fast",
                                          "-v",
                                          "--load-outputs",
                                          dir_.file("other.json"),
                                          "--report",
                                          dir_.file("report.json")});
    EXPECT_THAT(program, HasSubstr("// Generated by: polygraphy run " + model_));
    EXPECT_THAT(program, HasSubstr("$(polygraphy-config --cflags --libs)"));
    EXPECT_THAT(program, HasSubstr("logger().set_severity(Severity::kVerbose);"));
    EXPECT_THAT(program, HasSubstr("auto load_onnx = OnnxLoader(OnnxFromPath(\"" + model_ + "\"));"));
    EXPECT_THAT(program, HasSubstr("OnnxLoader(ModifyOutputs(load_onnx, std::vector<std::string>{\"relu\"}, "
                                   "std::vector<std::string>{\"y\"}))"));
    EXPECT_THAT(program, HasSubstr("OnnxLoader(SaveOnnx(modified_onnx, \"" + dir_.file("saved.onnx") + "\"))"));
    EXPECT_THAT(program, HasSubstr("ref::SessionFromOnnx(saved_onnx, ref::SessionOptions{.num_threads = 2, "
                                   ".fuse_activations = false, .profile = true})"));
    EXPECT_THAT(program, HasSubstr("data_loader_options.input_metadata.add(\"x\", std::nullopt, "
                                   "DynShape{Dim::fixed(2), Dim::fixed(3)});"));
    EXPECT_THAT(program, HasSubstr("data_loader_options.int_range = ValRange{1.0, 3.0};"));
    EXPECT_THAT(program, HasSubstr("run_options.warm_up = 2;"));
    EXPECT_THAT(program, HasSubstr("results.extend(RunResults::load(\"" + dir_.file("other.json") + "\"));"));
    EXPECT_THAT(program, HasSubstr("compare_options.check_shapes = false;"));
    EXPECT_THAT(program, HasSubstr("compare_options.infinities_compare_equal = true;"));
    EXPECT_THAT(program, HasSubstr("compare_options.error_quantile.set(\"\", 0.9);"));
    EXPECT_THAT(program, HasSubstr("compare_func::simple(compare_options), true);"));
    EXPECT_THAT(program, HasSubstr("save_comparison_report(accuracy, divergence, report_context, \"" +
                                   dir_.file("report.json") + "\");"));
}

TEST_F(GenScript, WritesTheWholeOnnxLoaderChain) {
    const std::string saved = dir_.file("saved.onnx");
    const std::string program = generate({model_, "--ref", "--shape-inference", "--fp-to-fp16", "--save-onnx", saved,
                                          "--save-external-data", "weights.bin", "--external-data-size-threshold", "0"});
    EXPECT_THAT(program, HasSubstr("#include \"polygraphy/backend/onnx/graph.h\""));
    EXPECT_THAT(program, HasSubstr("auto shape_inferred_onnx = extend(load_onnx, [](OnnxModel& model) { "
                                   "infer_shapes(*model); });"));
    EXPECT_THAT(program, HasSubstr("auto fp16_onnx = extend(shape_inferred_onnx, [](OnnxModel& model) { "
                                   "convert_to_fp16(*model); });"));
    EXPECT_THAT(program, HasSubstr("auto saved_onnx = extend(fp16_onnx, [](OnnxModel& model) { "
                                   "save_onnx_with_external_data(*model, \"" + saved +
                                   "\", ExternalDataOptions{\"weights.bin\", 0}); });"));
    EXPECT_THAT(program, HasSubstr("ref::SessionFromOnnx(saved_onnx)"));
}

TEST_F(GenScript, WritesTheConversionsTargetAndBlockLists) {
    const std::string program =
        generate({model_, "--ref", "--fp-to-bf16", "--node-block-list", "a", "b", "--op-block-list", "Relu"});
    EXPECT_THAT(program, HasSubstr("convert_to_fp16(*model, Fp16Options{.op_block_list = std::vector<std::string>{"
                                   "\"Relu\"}, .node_block_list = std::vector<std::string>{\"a\", \"b\"}, .target = "
                                   "DataType::kBFloat16}); });"));
}

TEST_F(GenScript, WritesTheSuggestedTolerancesAfterTheComparison) {
    std::string program = generate({model_, "--ref", "--onnxrt", "--suggest-tolerances"});
    EXPECT_THAT(program, HasSubstr("#include \"polygraphy/comparator/dataset_summary.h\""));
    EXPECT_THAT(program, HasSubstr("for (const auto& pair : accuracy.pairs)\n"));
    EXPECT_THAT(program,
                HasSubstr("logger().info(format_suggested_tolerances(pair, suggest_tolerances(pair, 1.0), 1.0));"));
    // A pass rate below 1 is the comparison's error quantile too.
    program = generate({model_, "--ref", "--onnxrt", "--suggest-tolerances", "0.99"});
    EXPECT_THAT(program, HasSubstr("suggest_tolerances(pair, 0.99), 0.99)"));
    EXPECT_THAT(program, HasSubstr("compare_options.error_quantile.set(\"\", 0.99);"));
}

TEST_F(GenScript, WritesTheFloat64CopyOfTheReferenceRuntime) {
    const std::string program = generate({model_, "--ref", "--ref-precision", "float64", "--onnxrt"});
    EXPECT_THAT(program, HasSubstr("convert_to_fp16(*copy, Fp16Options{.target = DataType::kFloat64});"));
    EXPECT_THAT(program, HasSubstr("ref::SessionFromOnnx(float64_onnx)"));
}

// As Polygraphy's script, the program still calls Comparator::run (which warns that no runners were
// provided), and compares nothing.
TEST_F(GenScript, NoRunnersWritesAnInferenceWithoutRunners) {
    const std::string program = generate({model_});
    EXPECT_THAT(program, HasSubstr("std::vector<std::unique_ptr<BaseRunner>> runners;\n\n"));
    EXPECT_THAT(program, HasSubstr("RunResults results = Comparator::run(runner_ptrs, data_loader, run_options);"));
    EXPECT_THAT(program, Not(HasSubstr("compare_accuracy")));
}

TEST_F(GenScript, StdoutIsRefused) {
    const CommandResult result = run_polygraphy({"run", model_, "--ref", "--gen-script", "-"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --gen-script -: this build writes the program to a file only"));
}

// ---- groups that cannot be scripted (extension modules: no add_to_job, or a runner step without print) --

class PlainRunner : public BaseRunner {
public:
    PlainRunner() : BaseRunner("plain-runner") {}

protected:
    TensorMetadata get_input_metadata_impl() override { return {}; }
    TensorMap infer_impl(const TensorMap& feed) override { return feed; }
};

class UnscriptableRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Unscriptable Runner"; }
    std::string description() const override { return "A runner group whose step cannot be printed."; }
    std::vector<OptionSpec> options() const override { return {Option({"--unscriptable-opt"}).help("Unused")}; }
    void parse(const ParsedArgs&) override {}
    std::string runner_display_name() const override { return "Unscriptable"; }
    std::string runner_flag() const override { return "--test-unscriptable"; }
    RunnerStep runner_step() const override {
        return CustomRunnerStep{
            [](const OnnxLoader&) -> std::unique_ptr<BaseRunner> { return std::make_unique<PlainRunner>(); }};
    }
};

class UnscriptableArgs : public ArgGroup {
public:
    std::string title() const override { return "Unscriptable Options"; }
    std::string description() const override { return "A group without add_to_job."; }
    std::vector<OptionSpec> options() const override { return {Option({"--unscriptable-setting"}).help("Unused")}; }
    void parse(const ParsedArgs&) override {}
};

TEST_F(GenScript, GroupsThatCannotBeScriptedAreRefusedOnlyWhenUsed) {
    static bool registered = false;  // registration is process-wide; keep --gtest_repeat working
    if (!registered) {
        ExtensionModule module;
        module.name = "polygraphy-test-unscriptable";
        module.version = "1.0";
        module.run_arg_groups = [] {
            std::vector<std::unique_ptr<ArgGroup>> groups;
            groups.push_back(std::make_unique<UnscriptableRunnerArgs>());
            groups.push_back(std::make_unique<UnscriptableArgs>());
            return groups;
        };
        register_extension_module(std::move(module));
        registered = true;
    }
    EXPECT_FALSE(UnscriptableArgs().add_to_job(*std::make_unique<RunJob>()));
    auto run_in_process = [&](std::vector<std::string> args) {
        RunTool tool;
        tool.setup("polygraphy run");
        ParseResult parsed = tool.parser().parse_known_args(args);
        EXPECT_TRUE(parsed.unknown.empty());
        tool.parse(parsed.args);
        return tool.run(parsed.args);
    };
    const std::string out = dir_.file("plugin.cpp");
    EXPECT_EQ(run_in_process({model_, "--ref", "--gen-script", out}), 0);
    EXPECT_THAT(read_text(out), HasSubstr("std::make_unique<ref::RefRunner>"));
    try {
        run_in_process({model_, "--ref", "--test-unscriptable", "--gen-script", out});
        ADD_FAILURE() << "an unscriptable runner was written";
    } catch (const UnsupportedError& error) {
        EXPECT_STREQ(error.what(), "--gen-script cannot write a Unscriptable runner (--test-unscriptable) to a script");
    }
    try {
        run_in_process({model_, "--ref", "--unscriptable-setting", "1", "--gen-script", out});
        ADD_FAILURE() << "an unscriptable option was written";
    } catch (const UnsupportedError& error) {
        EXPECT_STREQ(error.what(),
                     "--gen-script cannot write --unscriptable-setting (Unscriptable Options) to a script");
    }
    logger().reset();
}

// ---- Script ----------------------------------------------------------------------------------------

TEST(Script, QuotesAnyBytesAsCppLiterals) {
    EXPECT_EQ(Script::quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    EXPECT_EQ(Script::quote(std::string("\x01"
                                        "1",
                                        2)),
              "\"\\0011\"");
}

TEST(Script, NumbersReadBackExactly) {
    EXPECT_EQ(Script::number(1e-5), "1e-05");
    EXPECT_EQ(Script::number(2), "2.0");
    EXPECT_EQ(Script::number(0.1), "0.1");
    EXPECT_EQ(std::stod(Script::number(1.0 / 3.0)), 1.0 / 3.0);
    EXPECT_EQ(Script::number(-std::numeric_limits<double>::infinity()), "-std::numeric_limits<double>::infinity()");
}

TEST(Script, LoadersAreSharedAndNamedUniquely) {
    Script script;
    EXPECT_EQ(script.add_loader("OnnxFromPath(\"a\")", "load_onnx"), "load_onnx");
    EXPECT_EQ(script.add_loader("OnnxFromPath(\"a\")", "load_onnx"), "load_onnx");
    EXPECT_EQ(script.add_loader("OnnxFromPath(\"b\")", "load_onnx"), "load_onnx_1");
    EXPECT_THROW(script.add_loader("x", "not an identifier"), InternalError);
    script.add_runner("std::make_unique<X>(load_onnx)");
    EXPECT_EQ(script.runner_count(), 1u);
    const std::string program = script.to_string({"header"});
    EXPECT_THAT(program, HasSubstr("// header\n"));
    EXPECT_THAT(program, HasSubstr("        auto load_onnx_1 = OnnxFromPath(\"b\");\n"));
    EXPECT_THAT(program, HasSubstr("DataLoaderFn data_loader = DataLoader().as_function();"));
    EXPECT_THAT(program, HasSubstr("return success ? 0 : 1;"));
}

}  // namespace
}  // namespace polygraphy::tools
