#include "tools/args/parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace polygraphy::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A parser shaped like a small `polygraphy run`.
ArgumentParser make_parser(bool allow_abbrev = true) {
    ArgumentParser parser("polygraphy run", "Run inference and compare results across backends.\n");
    parser.set_allow_abbrev(allow_abbrev);
    parser.add_group("Logging", "Options related to logging and debug output",
                     {Option({"-v", "--verbose"}).kind(OptionKind::kCount).help("Increase logging verbosity"),
                      Option({"-q", "--quiet"}).kind(OptionKind::kCount).help("Decrease logging verbosity"),
                      Option({"--log-file"}).help("Path to a log file")});
    parser.add_group("Model", "Options related to the model",
                     {Option({"model_file"}).kind(OptionKind::kOptionalValue).positional().help("Path to the model"),
                      Option({"--input-shapes", "--inputs"}).dest("input_shapes").kind(OptionKind::kValues)});
    parser.add_group("Data Loader", "Options related to generating input data",
                     {Option({"--seed"}).metavar("SEED").type(ValueType::kInt).help("Seed to use for random inputs"),
                      Option({"--iterations", "--iters"}).dest("iterations").type(ValueType::kInt),
                      Option({"--float-min"}).type(ValueType::kFloat),
                      Option({"--load-inputs", "--load-input-data"})
                          .dest("load_inputs_paths")
                          .kind(OptionKind::kValues)
                          .exclusive_group("loader"),
                      Option({"--data-loader-script"}).exclusive_group("loader")});
    parser.add_group(
        "Comparator", "Options related to comparisons",
        {Option({"--atol", "--abs-tol"}).dest("atol").kind(OptionKind::kValues),
         Option({"--compare", "--compare-func"}).dest("compare").choices({"simple", "indices"}),
         Option({"--validate"}).kind(OptionKind::kFlag), Option({"--fp16"}).kind(OptionKind::kFlag),
         Option({"--fp-to-fp16"}).kind(OptionKind::kFlag), Option({"--tactic-sources"}).kind(OptionKind::kAnyValues),
         Option({"--save-external-data"}).dest("external").kind(OptionKind::kOptionalValue).const_value("<default>"),
         Option({"--check"}).kind(OptionKind::kRemainder), Option({"--ref"}).dest("runner_ref").kind(OptionKind::kFlag),
         Option({"--onnxrt"}).dest("runner_onnxrt").kind(OptionKind::kFlag)});
    return parser;
}

ParseResult parse(const std::vector<std::string>& args, bool allow_abbrev = true) {
    return make_parser(allow_abbrev).parse_known_args(args);
}

std::string error_of(const std::vector<std::string>& args, bool allow_abbrev = true) {
    try {
        parse(args, allow_abbrev);
    } catch (const ArgumentError& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(ArgumentParser, SingleValueOptionsTakeOneToken) {
    auto result = parse({"--seed", "5", "model.onnx"});
    EXPECT_EQ(result.args.value("seed"), "5");
    EXPECT_EQ(result.args.value("model_file"), "model.onnx");
    EXPECT_TRUE(result.unknown.empty());
}

TEST(ArgumentParser, EqualsFormGivesTheValue) {
    auto result = parse({"--seed=7", "--atol=1e-3", "out:1"});
    EXPECT_EQ(result.args.value("seed"), "7");
    // An explicit value is the only value of a nargs='+' option; the next token is positional.
    EXPECT_THAT(result.args.values("atol"), ElementsAre("1e-3"));
    EXPECT_EQ(result.args.value("model_file"), "out:1");
}

TEST(ArgumentParser, MultiValueOptionsStopAtTheNextOption) {
    auto result = parse({"--atol", "1e-3", "out0:1e-2", "--validate", "model.onnx"});
    EXPECT_THAT(result.args.values("atol"), ElementsAre("1e-3", "out0:1e-2"));
    EXPECT_TRUE(result.args.flag("validate"));
    EXPECT_EQ(result.args.value("model_file"), "model.onnx");
}

TEST(ArgumentParser, MultiValueOptionsSwallowTheModelLikeArgparse) {
    // argparse is greedy: the model path after --load-inputs becomes one of its values.
    auto result = parse({"--load-inputs", "a.json", "model.onnx"});
    EXPECT_THAT(result.args.values("load_inputs_paths"), ElementsAre("a.json", "model.onnx"));
    EXPECT_FALSE(result.args.has("model_file"));
}

TEST(ArgumentParser, NegativeNumbersAreValues) {
    auto result = parse({"--seed", "-1", "--atol", "-2", "-0.5", "x:-3"});
    EXPECT_EQ(result.args.value("seed"), "-1");
    EXPECT_THAT(result.args.values("atol"), ElementsAre("-2", "-0.5", "x:-3"));
}

TEST(ArgumentParser, ScientificNegativeNumbersLookLikeOptions) {
    // argparse only treats -N and -N.M as numbers; -1e-3 is an (unknown) option.
    EXPECT_EQ(error_of({"--atol", "-1e-3"}), "argument --atol/--abs-tol: expected at least one argument");
}

TEST(ArgumentParser, MissingValues) {
    EXPECT_EQ(error_of({"--seed"}), "argument --seed: expected one argument");
    EXPECT_EQ(error_of({"--seed", "--validate"}), "argument --seed: expected one argument");
    EXPECT_EQ(error_of({"--atol", "--validate"}), "argument --atol/--abs-tol: expected at least one argument");
}

TEST(ArgumentParser, AnyValuesMayBeEmpty) {
    auto result = parse({"--tactic-sources", "--validate"});
    EXPECT_TRUE(result.args.has("tactic_sources"));
    EXPECT_TRUE(result.args.values("tactic_sources").empty());
}

TEST(ArgumentParser, OptionalValueUsesConstWhenBare) {
    EXPECT_EQ(parse({"--save-external-data"}).args.value("external"), "<default>");
    EXPECT_EQ(parse({"--save-external-data", "weights.bin"}).args.value("external"), "weights.bin");
}

TEST(ArgumentParser, RemainderTakesEverything) {
    auto result = parse({"--check", "polygraphy", "run", "--ref", "-x"});
    EXPECT_THAT(result.args.values("check"), ElementsAre("polygraphy", "run", "--ref", "-x"));
    EXPECT_FALSE(result.args.has("runner_ref"));
}

TEST(ArgumentParser, CountsAndCombinedShortFlags) {
    auto result = parse({"-v", "-vv", "-q"});
    EXPECT_EQ(result.args.count("verbose"), 3);
    EXPECT_EQ(result.args.count("quiet"), 1);
    result = parse({"-vq"});
    EXPECT_EQ(result.args.count("verbose"), 1);
    EXPECT_EQ(result.args.count("quiet"), 1);
    EXPECT_EQ(error_of({"-vx"}), "argument -v/--verbose: ignored explicit argument 'x'");
}

TEST(ArgumentParser, FlagsRejectExplicitValues) {
    EXPECT_EQ(error_of({"--validate=yes"}), "argument --validate: ignored explicit argument 'yes'");
}

TEST(ArgumentParser, UnambiguousPrefixesAreAccepted) {
    auto result = parse({"--iter", "3", "--val", "--compare-f", "simple"});
    EXPECT_EQ(result.args.value("iterations"), "3");
    EXPECT_TRUE(result.args.flag("validate"));
    EXPECT_EQ(result.args.value("compare"), "simple");
    // Several spellings of one option are not ambiguous.
    EXPECT_EQ(parse({"--load-input", "x.json"}).args.value("load_inputs_paths"), "x.json");
    // Prefix with an explicit value.
    EXPECT_EQ(parse({"--se=4"}).args.value("seed"), "4");
}

TEST(ArgumentParser, ExactMatchBeatsPrefix) {
    auto result = parse({"--fp16"});
    EXPECT_TRUE(result.args.flag("fp16"));
    EXPECT_FALSE(result.args.has("fp_to_fp16"));
}

TEST(ArgumentParser, AmbiguousPrefixListsTheCandidates) {
    EXPECT_EQ(error_of({"--fp"}), "ambiguous option: --fp could match --fp16, --fp-to-fp16");
}

TEST(ArgumentParser, AbbreviationsCanBeDisabled) {
    auto result = parse({"--iter", "3"}, /*allow_abbrev=*/false);
    EXPECT_THAT(result.unknown, ElementsAre("--iter"));
    // "3" is then the model file, as in argparse.
    EXPECT_EQ(result.args.value("model_file"), "3");
}

TEST(ArgumentParser, ChoicesAreChecked) {
    EXPECT_EQ(error_of({"--compare", "fancy"}),
              "argument --compare/--compare-func: invalid choice: 'fancy' (choose from 'simple', 'indices')");
    EXPECT_EQ(parse({"--compare", "indices"}).args.value("compare"), "indices");
}

TEST(ArgumentParser, TypesAreChecked) {
    EXPECT_EQ(error_of({"--seed", "abc"}), "argument --seed: invalid int value: 'abc'");
    EXPECT_EQ(error_of({"--seed", "1.5"}), "argument --seed: invalid int value: '1.5'");
    EXPECT_EQ(error_of({"--float-min", "x1"}), "argument --float-min: invalid float value: 'x1'");
    // -1e-3 does not look like a number to argparse, so --float-min has no value.
    EXPECT_EQ(error_of({"--float-min", "-1e-3"}), "argument --float-min: expected one argument");
}

TEST(ArgumentParser, FloatTypeAcceptsPythonFloats) {
    EXPECT_EQ(parse({"--float-min=-1e-3"}).args.value("float_min"), "-1e-3");
    EXPECT_EQ(parse({"--float-min", "inf"}).args.value("float_min"), "inf");
}

TEST(ArgumentParser, MutuallyExclusiveOptions) {
    EXPECT_EQ(error_of({"--load-inputs", "a.json", "--data-loader-script", "s.py"}),
              "argument --data-loader-script: not allowed with argument --load-inputs/--load-input-data");
}

TEST(ArgumentParser, UnknownOptionsAreCollected) {
    auto result = parse({"--ref", "--bogus", "--other=1", "model.onnx", "extra.onnx"});
    EXPECT_THAT(result.unknown, ElementsAre("--bogus", "--other=1", "extra.onnx"));
    EXPECT_EQ(result.args.value("model_file"), "model.onnx");
}

TEST(ArgumentParser, PositionalBeforeOrAfterOptions) {
    EXPECT_EQ(parse({"model.onnx", "--ref"}).args.value("model_file"), "model.onnx");
    EXPECT_EQ(parse({"--ref", "model.onnx"}).args.value("model_file"), "model.onnx");
    EXPECT_FALSE(parse({"--ref"}).args.has("model_file"));
}

TEST(ArgumentParser, DoubleDashMakesEverythingPositional) {
    auto result = parse({"--", "-weird.onnx"});
    EXPECT_EQ(result.args.value("model_file"), "-weird.onnx");
}

TEST(ArgumentParser, OccurrencesKeepOrderAndRepetition) {
    auto result = parse({"--ref", "--onnxrt", "--ref"});
    ASSERT_EQ(result.args.occurrences("runner_ref").size(), 2u);
    EXPECT_LT(result.args.occurrences("runner_ref")[0].position, result.args.occurrences("runner_onnxrt")[0].position);
    EXPECT_GT(result.args.occurrences("runner_ref")[1].position, result.args.occurrences("runner_onnxrt")[0].position);
    EXPECT_EQ(parse({"--abs-tol", "1"}).args.occurrences("atol")[0].flag, "--abs-tol");
}

TEST(ArgumentParser, RepeatedMultiValueOptionKeepsTheLastForValues) {
    auto result = parse({"--atol", "1", "--atol", "2", "3"});
    EXPECT_THAT(result.args.values("atol"), ElementsAre("2", "3"));
    EXPECT_EQ(result.args.occurrences("atol").size(), 2u);
}

TEST(ArgumentParser, RequiredArguments) {
    ArgumentParser parser("polygraphy surgeon");
    parser.add_group("Saving", "", {Option({"-o", "--output"}).required()});
    parser.add_group("Model", "", {Option({"model_file"}).positional()});
    try {
        parser.parse_known_args({});
        FAIL() << "expected an error";
    } catch (const ArgumentError& e) {
        EXPECT_STREQ(e.what(), "the following arguments are required: -o/--output, model_file");
    }
    auto result = parser.parse_known_args({"m.onnx", "-o", "out.onnx"});
    EXPECT_EQ(result.args.value("output"), "out.onnx");
    // Single-dash option with the value attached.
    EXPECT_EQ(parser.parse_known_args({"m.onnx", "-oout.onnx"}).args.value("output"), "out.onnx");
}

TEST(ArgumentParser, HelpStopsParsing) {
    auto result = parse({"--seed", "1", "-h", "--seed", "abc"});
    EXPECT_TRUE(result.help_requested);
    EXPECT_TRUE(parse({"--he"}).help_requested);
    // Combined flags are all checked before -h takes effect.
    EXPECT_EQ(error_of({"-h=1"}), "argument -h/--help: ignored explicit argument '1'");
    EXPECT_TRUE(parse({"-vh"}).help_requested);
    EXPECT_EQ(error_of({"-hx"}), "argument -h/--help: ignored explicit argument 'x'");
    // Errors before -h still win.
    EXPECT_EQ(error_of({"--seed", "abc", "-h"}), "argument --seed: invalid int value: 'abc'");
}

TEST(ArgumentParser, HelpIsGroupedByTitle) {
    const std::string help = make_parser().format_help(78);
    EXPECT_EQ(help.rfind("usage: polygraphy run [-h] [-v] [-q]", 0), 0u) << help;
    EXPECT_THAT(help, HasSubstr("\nRun inference and compare results across backends.\n"));
    EXPECT_THAT(help, HasSubstr("\noptions:\n  -h, --help            show this help message and exit\n"));
    EXPECT_THAT(help, HasSubstr("\nLogging:\n  Options related to logging and debug output\n\n  -v, --verbose"));
    EXPECT_THAT(help, HasSubstr("\nData Loader:\n  Options related to generating input data\n\n  --seed SEED"));
    EXPECT_THAT(help, HasSubstr("--atol ATOL [ATOL ...], --abs-tol ATOL [ATOL ...]\n"));
    EXPECT_THAT(help, HasSubstr("--compare {simple,indices}, --compare-func {simple,indices}"));
    EXPECT_THAT(help, HasSubstr("\n  model_file            Path to the model\n"));
    EXPECT_LT(help.find("\nLogging:"), help.find("\nModel:"));
    EXPECT_LT(help.find("\nModel:"), help.find("\nData Loader:"));
    // Help text is wrapped to the width (option invocations are not, as in argparse).
    std::size_t start = 0;
    while (start < help.size()) {
        const auto end = help.find('\n', start);
        const std::string line = help.substr(start, end - start);
        if (line.rfind(std::string(24, ' '), 0) == 0) {
            EXPECT_LE(line.size(), 78u) << line;
        }
        start = end + 1;
    }
}

TEST(ArgumentParser, UsageWrapsUnderTheProgramName) {
    const std::string usage = make_parser().format_usage(78);
    EXPECT_EQ(usage.rfind("usage: polygraphy run ", 0), 0u);
    EXPECT_THAT(usage, HasSubstr("\n                      ["));
    EXPECT_THAT(usage, HasSubstr("[model_file]\n"));
}

TEST(ArgumentParser, FormatErrorIsArgparseStyle) {
    const std::string text = make_parser().format_error("argument --x: bad");
    EXPECT_EQ(text.rfind("usage: polygraphy run", 0), 0u);
    EXPECT_THAT(text, HasSubstr("\npolygraphy run: error: argument --x: bad\n"));
}

TEST(ArgumentParser, DuplicateFlagsAreInternalErrors) {
    ArgumentParser parser("prog");
    parser.add_group("A", "", {Option({"--seed"})});
    EXPECT_THROW(parser.add_group("B", "", {Option({"--other", "--seed"})}), InternalError);
    EXPECT_THROW(parser.add_group("C", "", {Option({"-h"})}), InternalError);
}

TEST(ArgumentParser, MalformedSpecsAreInternalErrors) {
    ArgumentParser parser("prog");
    EXPECT_THROW(parser.add_group("A", "", {Option({"seed"})}), InternalError);  // not a positional, no dashes
    EXPECT_THROW(parser.add_group("A", "", {Option({"--x"}).kind(OptionKind::kOptionalValue)}), InternalError);
    EXPECT_THROW(parser.add_group("A", "", {Option({})}), InternalError);
}

TEST(OptionDest, DerivedFromTheFirstLongFlag) {
    EXPECT_EQ(option_dest(Option({"-v", "--verbose"})), "verbose");
    EXPECT_EQ(option_dest(Option({"--load-inputs", "--load-input-data"})), "load_inputs");
    EXPECT_EQ(option_dest(Option({"-o"})), "o");
    EXPECT_EQ(option_dest(Option({"--x"}).dest("custom")), "custom");
}

}  // namespace
}  // namespace polygraphy::tools
