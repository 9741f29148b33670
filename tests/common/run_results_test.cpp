#include "polygraphy/common/run_results.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "test_helpers.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "build_paths.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

// POLYGRAPHY_SHARED_DIR in the environment overrides the build's default (for worktrees elsewhere).
const std::string kFixtures =
    std::string(std::getenv("POLYGRAPHY_SHARED_DIR") ? std::getenv("POLYGRAPHY_SHARED_DIR") : POLYGRAPHY_SHARED_DIR) +
    "/fixtures/polygraphy-json";

std::string fixture(const std::string& name) {
    const std::string path = kFixtures + "/" + name;
    if (!std::filesystem::exists(path)) return "";
    return path;
}

std::vector<double> values_of(const Tensor& tensor) {
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

std::string b64npy(const Tensor& tensor) { return base64::encode(npy::save(tensor)); }

class RunResultsTest : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kWarning); }
    void TearDown() override { logger().reset(); }

    // A plain write (no fsync: the corruption tests write thousands of files). The old file is
    // removed first: rewriting a truncated file makes some file systems flush it synchronously.
    std::string write(const std::string& name, std::string_view contents) {
        const std::string path = dir_.file(name);
        std::filesystem::remove(path);
        std::ofstream(path, std::ios::binary | std::ios::trunc).write(contents.data(), static_cast<std::streamsize>(contents.size()));
        return path;
    }

    std::string load_error(const std::string& contents) {
        const std::string path = write("bad.json", contents);
        try {
            RunResults::load(path);
        } catch (const FormatError& error) {
            const std::string message = error.what();
            EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
            EXPECT_EQ(message.find('\n'), std::string::npos) << message;
            return message.substr(path.size() + 2);
        }
        ADD_FAILURE() << "no FormatError for: " << contents.substr(0, 200);
        return "";
    }

    testing::TempDir dir_;
};

RunResults sample_results() {
    RunResults results;
    IterationResult first;
    first.outputs.set("logits", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 1, 2, 3, 4, 5}));
    first.outputs.set("ids", Tensor::from_doubles(DataType::kInt64, {4}, {3, 1, 4, 1}));
    first.runtime = 0.00125;
    first.runner_name = "onnxrt-runner-N0-11/21/26-09:30:00";
    IterationResult second = first;
    second.outputs.set("logits", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 2, 4, 6, 8, 10}));
    second.runtime.reset();
    results.add({first, second}, first.runner_name);
    IterationResult other;
    other.outputs.set("mask", Tensor::from_doubles(DataType::kBool, {2, 2}, {1, 0, 0, 1}));
    other.outputs.set("scalar", Tensor::from_doubles(DataType::kFloat64, {}, {2.5}));
    other.outputs.set("empty", Tensor(DataType::kFloat16, {0, 3}));
    Tensor names(DataType::kString, {2});
    names.strings() = {"caf\xc3\xa9", ""};
    other.outputs.set("names", names);
    other.runtime = 4.79e-05;
    other.runner_name = "runner \"quoted\" \xc3\xa9";
    results.add({other}, other.runner_name);
    results.add({}, "no-iterations");
    return results;
}

void expect_same(const RunResults& actual, const RunResults& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t r = 0; r < expected.size(); ++r) {
        EXPECT_EQ(actual.lst[r].first, expected.lst[r].first);
        ASSERT_EQ(actual.lst[r].second.size(), expected.lst[r].second.size());
        for (std::size_t i = 0; i < expected.lst[r].second.size(); ++i) {
            const IterationResult& a = actual.lst[r].second[i];
            const IterationResult& e = expected.lst[r].second[i];
            EXPECT_EQ(a.runner_name, e.runner_name);
            EXPECT_EQ(a.runtime, e.runtime);
            ASSERT_EQ(a.outputs.keys(), e.outputs.keys());
            for (const auto& [name, tensor] : e.outputs) {
                const Tensor& got = a.outputs.at(name);
                if (tensor.dtype() == DataType::kString) {
                    EXPECT_EQ(got.strings(), tensor.strings()) << name;
                    EXPECT_EQ(got.shape(), tensor.shape()) << name;
                } else {
                    EXPECT_TRUE(got.equals(tensor)) << name;
                }
            }
        }
    }
}

TEST_F(RunResultsTest, RoundTrips) {
    const RunResults results = sample_results();
    const std::string path = dir_.file("out/results.json");
    results.save(path);
    expect_same(RunResults::load(path), results);
}

TEST_F(RunResultsTest, WritesPythonsIndent4Layout) {
    RunResults results;
    IterationResult iteration;
    const Tensor x = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    iteration.outputs.set("x", x);
    iteration.runner_name = "r";
    results.add({iteration}, "r");
    const std::string path = dir_.file("r.json");
    results.save(path);
    const std::string expected = "{\n    \"lst\": [\n        [\n            \"r\",\n            [\n                {\n"
                                 "                    \"outputs\": {\n                        \"x\": {\n"
                                 "                            \"values\": {\n"
                                 "                                \"array\": \"" + b64npy(x) + "\",\n"
                                 "                                \"polygraphy_class\": \"ndarray\"\n"
                                 "                            },\n"
                                 "                            \"polygraphy_class\": \"LazyArray\"\n"
                                 "                        }\n                    },\n"
                                 "                    \"runtime\": null,\n"
                                 "                    \"runner_name\": \"r\",\n"
                                 "                    \"polygraphy_class\": \"IterationResult\"\n"
                                 "                }\n            ]\n        ]\n    ],\n"
                                 "    \"polygraphy_class\": \"RunResults\"\n}";
    EXPECT_EQ(read_file(path), expected);

    RunResults empty;
    empty.save(path);
    EXPECT_EQ(read_file(path), "{\n    \"lst\": [],\n    \"polygraphy_class\": \"RunResults\"\n}");
    EXPECT_TRUE(RunResults::load(path).empty());
}

TEST_F(RunResultsTest, LoadsPolygraphyFixtureWithTheDocumentedValues) {
    const std::string path = fixture("run_results.json");
    if (path.empty()) GTEST_SKIP() << "Polygraphy fixtures not available";
    const RunResults results = RunResults::load(path);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results.lst[0].first, "onnxrt-runner-N0-11/21/26-09:30:00");
    EXPECT_EQ(results.lst[1].first, "trt-runner-N0-11/21/26-09:30:00");
    const double runtimes[2][2] = {{0.00125, 0.0011}, {0.0004, 0.0003}};
    const double scales[2][2] = {{1.0, 2.0}, {1.0001, 2.0}};
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(results.lst[r].second.size(), 2u);
        for (int i = 0; i < 2; ++i) {
            const IterationResult& iteration = results.lst[r].second[i];
            EXPECT_EQ(iteration.runner_name, results.lst[r].first);
            ASSERT_TRUE(iteration.runtime);
            EXPECT_EQ(*iteration.runtime, runtimes[r][i]);
            EXPECT_EQ(iteration.outputs.keys(), (std::vector<std::string>{"logits", "indices", "mask", "half", "scalar"}));
            const Tensor& logits = iteration.outputs.at("logits");
            EXPECT_EQ(logits.dtype(), DataType::kFloat32);
            EXPECT_EQ(logits.shape(), (Shape{2, 3}));
            for (int k = 0; k < 6; ++k)
                EXPECT_EQ(logits.data_as<float>()[k], static_cast<float>(k * scales[r][i])) << r << i << k;
            const Tensor& indices = iteration.outputs.at("indices");
            EXPECT_EQ(indices.dtype(), DataType::kInt64);
            EXPECT_EQ(values_of(indices), (std::vector<double>{3, 1, 4, 1}));
            const Tensor& mask = iteration.outputs.at("mask");
            EXPECT_EQ(mask.dtype(), DataType::kBool);
            EXPECT_EQ(mask.shape(), (Shape{2, 2}));
            EXPECT_EQ(values_of(mask), (std::vector<double>{1, 0, 0, 1}));
            const Tensor& half = iteration.outputs.at("half");
            EXPECT_EQ(half.dtype(), DataType::kFloat16);
            EXPECT_EQ(values_of(half), (std::vector<double>{0.5, -1.25, 65504}));
            const Tensor& scalar = iteration.outputs.at("scalar");
            EXPECT_EQ(scalar.dtype(), DataType::kFloat64);
            EXPECT_EQ(scalar.shape(), Shape{});
            EXPECT_EQ(values_of(scalar), std::vector<double>{2.5});
        }
    }
}

TEST_F(RunResultsTest, RewritesPolygraphyFixturesByteForByte) {
    const std::string results_path = fixture("run_results.json");
    const std::string inputs_path = fixture("inputs.json");
    if (results_path.empty() || inputs_path.empty()) GTEST_SKIP() << "Polygraphy fixtures not available";
    RunResults::load(results_path).save(dir_.file("run_results.json"));
    EXPECT_EQ(read_file(dir_.file("run_results.json")), read_file(results_path));
    save_inputs(load_inputs(inputs_path), dir_.file("inputs.json"));
    EXPECT_EQ(read_file(dir_.file("inputs.json")), read_file(inputs_path));
}

TEST_F(RunResultsTest, LoadsPolygraphyInputsFixture) {
    const std::string path = fixture("inputs.json");
    if (path.empty()) GTEST_SKIP() << "Polygraphy fixtures not available";
    const InputList inputs = load_inputs(path);
    ASSERT_EQ(inputs.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(inputs[i].keys(), (std::vector<std::string>{"x", "ids"}));
        const Tensor& x = inputs[i].at("x");
        EXPECT_EQ(x.dtype(), DataType::kFloat32);
        EXPECT_EQ(x.shape(), (Shape{1, 1, 2, 2}));
        EXPECT_EQ(values_of(x), std::vector<double>(4, i == 0 ? 1.0 : 0.0));
        const Tensor& ids = inputs[i].at("ids");
        EXPECT_EQ(ids.dtype(), DataType::kInt32);
        EXPECT_EQ(ids.shape(), (Shape{1, 3}));
    }
    EXPECT_EQ(values_of(inputs[0].at("ids")), (std::vector<double>{7, 8, 9}));
    EXPECT_EQ(values_of(inputs[1].at("ids")), (std::vector<double>{1, 2, 3}));
    EXPECT_TRUE(std::holds_alternative<InputList>(load_run_results_or_inputs(path)));
    const std::string results = fixture("run_results.json");
    EXPECT_TRUE(std::holds_alternative<RunResults>(load_run_results_or_inputs(results)));
}

TEST_F(RunResultsTest, InputsRoundTrip) {
    InputList inputs(3);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {1, 2}, {1.5, -2}));
    inputs[0].set("n", Tensor::from_doubles(DataType::kInt32, {}, {7}));
    inputs[2].set("y", Tensor::from_doubles(DataType::kUInt8, {3}, {0, 128, 255}));
    const std::string path = dir_.file("inputs.json");
    save_inputs(inputs, path);
    const InputList back = load_inputs(path);
    ASSERT_EQ(back.size(), 3u);
    EXPECT_TRUE(back[0].at("x").equals(inputs[0].at("x")));
    EXPECT_TRUE(back[0].at("n").equals(inputs[0].at("n")));
    EXPECT_TRUE(back[1].empty());
    EXPECT_TRUE(back[2].at("y").equals(inputs[2].at("y")));
    save_inputs({}, path);
    EXPECT_EQ(read_file(path), "[]");
    EXPECT_TRUE(load_inputs(path).empty());
}

// The in-memory entry point (used by the fuzzers) is the same reader as the file loaders: same
// results, same messages, with `source` where the loaders name the file.
TEST_F(RunResultsTest, ParsesTextInMemoryLikeTheFileLoaders) {
    const RunResults results = sample_results();
    const std::string path = dir_.file("results.json");
    results.save(path);
    const auto parsed = parse_run_results_or_inputs(read_file(path), "memory");
    ASSERT_TRUE(std::holds_alternative<RunResults>(parsed));
    expect_same(std::get<RunResults>(parsed), results);

    InputList inputs(1);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    save_inputs(inputs, path);
    const auto parsed_inputs = parse_run_results_or_inputs(read_file(path), "memory");
    ASSERT_TRUE(std::holds_alternative<InputList>(parsed_inputs));
    EXPECT_TRUE(std::get<InputList>(parsed_inputs)[0].at("x").equals(inputs[0].at("x")));

    EXPECT_EQ(testing::error_message<FormatError>([] { parse_run_results_or_inputs("", "memory"); }),
              "memory: file is empty");
    const std::string bad = R"({"lst": [], "polygraphy_class": "Nope"})";
    EXPECT_EQ(testing::error_message<FormatError>([&] { parse_run_results_or_inputs(bad, "memory"); }),
              "memory: " + load_error(bad));
}

TEST_F(RunResultsTest, AcceptsEveryLayoutPythonWouldRead) {
    const Tensor x = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    const std::string array = b64npy(x);
    std::string escaped;  // "\/" is a legal JSON spelling of '/'
    for (char c : array) {
        if (c == '/') escaped += '\\';
        escaped += c;
    }
    // Compact separators, keys in another order, a plain ndarray instead of a LazyArray, null
    // runtime, escapes in names, the old LazyNumpyArray alias, unknown keys, an array with escapes.
    const std::string text =
        "{\"polygraphy_class\":\"RunResults\",\"extra\":[1,{\"a\":null}],\"lst\":[[\"r\\u00e9\",["
        "{\"runner_name\":\"r\\u00e9\",\"polygraphy_class\":\"IterationResult\",\"runtime\":null,\"outputs\":{"
        "\"plain\":{\"polygraphy_class\":\"ndarray\",\"array\":\"" + array + "\"},"
        "\"lazy\":{\"polygraphy_class\":\"LazyNumpyArray\",\"values\":{\"array\":\"" + array + "\",\"polygraphy_class\":\"ndarray\"}},"
        "\"esc\\/aped\":{\"values\":{\"array\":\"" + escaped + "\",\"polygraphy_class\":\"ndarray\"},\"polygraphy_class\":\"LazyArray\"}"
        "}},{\"outputs\":{},\"runtime\":3,\"polygraphy_class\":\"IterationResult\"}]]]}";
    ASSERT_NE(escaped, array);
    const RunResults results = RunResults::load(write("ok.json", text));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results.lst[0].first, "r\xc3\xa9");
    const auto& iterations = results.lst[0].second;
    ASSERT_EQ(iterations.size(), 2u);
    EXPECT_FALSE(iterations[0].runtime);
    EXPECT_EQ(iterations[0].outputs.keys(), (std::vector<std::string>{"plain", "lazy", "esc/aped"}));
    for (const auto& [name, tensor] : iterations[0].outputs) EXPECT_TRUE(tensor.equals(x)) << name;
    EXPECT_EQ(iterations[1].runtime, 3.0);
    EXPECT_EQ(iterations[1].runner_name, "r\xc3\xa9");  // defaults to the entry's runner
    EXPECT_TRUE(iterations[1].outputs.empty());
}

TEST_F(RunResultsTest, LargeArraysLoadThroughTheFastPath) {
    // Several MiB per array: the decoder releases consumed pages and writes straight into the tensor.
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    RunResults results;
    IterationResult iteration;
    for (int o = 0; o < 3; ++o) {
        Tensor t(DataType::kFloat32, {1, 1000003 + o});
        for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
        iteration.outputs.set("out" + std::to_string(o), t);
    }
    iteration.runner_name = "big";
    iteration.runtime = 1.5;
    results.add({iteration}, "big");
    const std::string path = dir_.file("big.json");
    results.save(path);
    expect_same(RunResults::load(path), results);
}

TEST_F(RunResultsTest, LogsLikePolygraphy) {
    logger().set_severity(Severity::kInfo);
    ::testing::internal::CaptureStdout();
    const std::string path = dir_.file("r.json");
    RunResults().save(path);
    RunResults::load(path);
    save_inputs({}, dir_.file("i.json"));
    load_inputs(dir_.file("i.json"));
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(output, HasSubstr("[I] Saving inference results to " + path + "\n"));
    EXPECT_THAT(output, HasSubstr("[I] Loading inference results from " + path + "\n"));
    EXPECT_THAT(output, HasSubstr("[I] Saving inference input data to " + dir_.file("i.json") + "\n"));
    EXPECT_THAT(output, HasSubstr("[I] Loading input data from " + dir_.file("i.json") + "\n"));
}

TEST_F(RunResultsTest, SaveFailingMidwayLeavesThePreviousFileIntact) {
    const std::string path = dir_.file("results.json");
    sample_results().save(path);
    const std::string before = read_file(path);
    RunResults broken = sample_results();
    IterationResult bad;
    bad.outputs.set("fine", Tensor::from_doubles(DataType::kFloat32, {1000}, std::vector<double>(1000, 1.0)));
    bad.outputs.set("undefined", Tensor());  // cannot be written: the writer throws after writing a lot
    broken.add({bad}, "broken");
    try {
        broken.save(path);
        FAIL() << "no exception";
    } catch (const UnsupportedError& error) {
        EXPECT_EQ(std::string(error.what()), "Could not write " + path +
                                                 ": output 'undefined' of iteration 0 of runner 'broken': cannot write an "
                                                 "undefined tensor to .npy");
    }
    EXPECT_EQ(read_file(path), before);
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_.path())) ++entries;
    EXPECT_EQ(entries, 1u);
}

TEST_F(RunResultsTest, RejectsMalformedFiles) {
    const std::string array = b64npy(Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    auto results_with_output = [](const std::string& output_value) {
        return "{\"lst\": [[\"r\", [{\"outputs\": {\"y\": " + output_value +
               "}, \"runtime\": 1.0, \"runner_name\": \"r\", \"polygraphy_class\": \"IterationResult\"}]]], "
               "\"polygraphy_class\": \"RunResults\"}";
    };
    auto with_array = [&](const std::string& b64) {
        return results_with_output("{\"array\": \"" + b64 + "\", \"polygraphy_class\": \"ndarray\"}");
    };
    const std::size_t array_offset = with_array(array).find(array) - 1;
    const std::string at_array = " at byte offset " + std::to_string(array_offset);

    // Files and JSON syntax.
    EXPECT_EQ(load_error(""), "file is empty");
    EXPECT_EQ(load_error("{\"lst\": [}"), "invalid JSON: expected a value but found '}' at byte offset 9");
    EXPECT_EQ(load_error("{\"lst\": []"), "invalid JSON: unexpected end of file, expected '}' (truncated file?) at byte offset 10");
    EXPECT_EQ(load_error("{\"lst\": [], \"polygraphy_class\": \"RunResults\"} []"),
              "invalid JSON: unexpected data after the end of the document ('[') at byte offset 46");
    // Structure.
    EXPECT_EQ(load_error("[]"), "expected a RunResults object {\"lst\": [...], \"polygraphy_class\": \"RunResults\"} but found a list at byte offset 0");
    EXPECT_EQ(load_error("{\"lst\": []}"), "not a RunResults file: the top-level object has no \"polygraphy_class\" at byte offset 0");
    EXPECT_EQ(load_error("{\"lst\": [], \"polygraphy_class\": \"Foo\"}"), "unknown polygraphy_class 'Foo' (expected 'RunResults') at byte offset 32");
    EXPECT_EQ(load_error("{\"polygraphy_class\": \"RunResults\"}"), "RunResults object has no \"lst\" at byte offset 0");
    EXPECT_EQ(load_error("{\"lst\": {}, \"polygraphy_class\": \"RunResults\"}"),
              "\"lst\" must be a list of [runner_name, iterations] pairs but is an object at byte offset 8");
    EXPECT_EQ(load_error("{\"lst\": [[]], \"polygraphy_class\": \"RunResults\"}"),
              "a \"lst\" entry must be [runner_name, iterations] but is empty at byte offset 9");
    EXPECT_EQ(load_error("{\"lst\": [[1, []]], \"polygraphy_class\": \"RunResults\"}"),
              "expected a runner name string but found a number at byte offset 10");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\"]], \"polygraphy_class\": \"RunResults\"}"),
              "the \"lst\" entry of runner 'r' has no list of iterations at byte offset 9");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [], 3]], \"polygraphy_class\": \"RunResults\"}"),
              "the \"lst\" entry of runner 'r' has more than 2 items at byte offset 19");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [5]]], \"polygraphy_class\": \"RunResults\"}"),
              "expected an IterationResult object for iteration 0 of runner 'r' but found a number at byte offset 16");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [{\"outputs\": {}}]]], \"polygraphy_class\": \"RunResults\"}"),
              "iteration 0 of runner 'r' has no \"polygraphy_class\" (expected 'IterationResult') at byte offset 16");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [{\"outputs\": {}, \"polygraphy_class\": \"X\"}]]], \"polygraphy_class\": \"RunResults\"}"),
              "unknown polygraphy_class 'X' for iteration 0 of runner 'r' (expected 'IterationResult') at byte offset 52");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [{\"polygraphy_class\": \"IterationResult\"}]]], \"polygraphy_class\": \"RunResults\"}"),
              "iteration 0 of runner 'r' has no \"outputs\" at byte offset 16");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [{\"outputs\": [], \"polygraphy_class\": \"IterationResult\"}]]], \"polygraphy_class\": \"RunResults\"}"),
              "\"outputs\" of iteration 0 of runner 'r' must be an object but is a list at byte offset 28");
    EXPECT_EQ(load_error("{\"lst\": [[\"r\", [{\"outputs\": {}, \"runtime\": \"1\", \"polygraphy_class\": \"IterationResult\"}]]], \"polygraphy_class\": \"RunResults\"}"),
              "\"runtime\" of iteration 0 of runner 'r' must be a number or null but is a string at byte offset 43");
    // Arrays.
    EXPECT_THAT(load_error(results_with_output("[1, 2]")),
                HasSubstr("output 'y' of iteration 0 of runner 'r' must be an ndarray object"));
    EXPECT_THAT(load_error(results_with_output("{\"array\": \"" + array + "\"}")),
                HasSubstr("output 'y' of iteration 0 of runner 'r' has no \"polygraphy_class\" (expected 'ndarray' or 'LazyArray')"));
    EXPECT_THAT(load_error(results_with_output("{\"tensor\": \"x\", \"polygraphy_class\": \"torch.Tensor\"}")),
                HasSubstr("unknown polygraphy_class 'torch.Tensor' for output 'y' of iteration 0 of runner 'r'"));
    EXPECT_THAT(load_error(results_with_output("{\"polygraphy_class\": \"ndarray\"}")),
                HasSubstr("ndarray output 'y' of iteration 0 of runner 'r' has no \"array\""));
    EXPECT_THAT(load_error(results_with_output("{\"polygraphy_class\": \"LazyArray\"}")),
                HasSubstr("LazyArray output 'y' of iteration 0 of runner 'r' has no \"values\""));
    EXPECT_THAT(load_error(results_with_output("{\"values\": {\"values\": {}, \"polygraphy_class\": \"LazyArray\"}, \"polygraphy_class\": \"LazyArray\"}")),
                HasSubstr("unknown polygraphy_class 'LazyArray' for output 'y' of iteration 0 of runner 'r' (expected 'ndarray')"));
    EXPECT_THAT(load_error(results_with_output("{\"array\": 5, \"polygraphy_class\": \"ndarray\"}")),
                HasSubstr("\"array\" of output 'y' of iteration 0 of runner 'r' must be a base64 string but is a number"));
    // Base64 and .npy payloads.
    std::string bad_char = array;
    bad_char[130] = '!';
    EXPECT_EQ(load_error(with_array(bad_char)),
              "output 'y' of iteration 0 of runner 'r': invalid base64 character '!' at offset 130 in the string" + at_array);
    EXPECT_EQ(load_error(with_array(array.substr(0, array.size() - 1))),
              "output 'y' of iteration 0 of runner 'r': invalid base64 length " + std::to_string(array.size() - 1) +
                  " (not a multiple of 4) in the string" + at_array);
    EXPECT_EQ(load_error(with_array(base64::encode("not a numpy file"))),
              "output 'y' of iteration 0 of runner 'r': invalid .npy data: bad magic string (not a .npy file) in the string" + at_array);
    const std::string short_payload = base64::encode(npy::make_header(DataType::kFloat32, {3}) + std::string(8, '\0'));
    EXPECT_EQ(load_error(with_array(short_payload)),
              "output 'y' of iteration 0 of runner 'r': invalid .npy data: array data is shorter than its shape needs: "
              "12 bytes for shape (3,) of 4-byte elements 'f', but 8 bytes follow the header in the string" + at_array);
    const std::string long_payload = base64::encode(npy::make_header(DataType::kFloat32, {1}) + std::string(8, '\0'));
    EXPECT_THAT(load_error(with_array(long_payload)), HasSubstr("array data is longer than its shape needs"));
    // Inputs files.
    const std::string inputs = write("inputs.json", "{\"x\": 1}");
    try {
        load_inputs(inputs);
        FAIL();
    } catch (const FormatError& error) {
        EXPECT_EQ(std::string(error.what()),
                  inputs + ": expected a list of feed dicts [{name: ndarray, ...}, ...] but found an object at byte offset 0");
    }
    write_file_atomically(inputs, std::string_view("[{\"x\": 1}]"));
    EXPECT_THROW(load_inputs(inputs), FormatError);
    write_file_atomically(inputs, std::string_view("[[]]"));
    EXPECT_THROW(load_inputs(inputs), FormatError);
    EXPECT_THROW(RunResults::load(dir_.file("missing.json")), PolygraphyException);
}

// Every truncation and random corruption of a real file is either loaded or rejected with a
// FormatError: never a crash, a hang or another exception.
TEST_F(RunResultsTest, SurvivesTruncationAndCorruption) {
    RunResults results = sample_results();
    IterationResult big;
    Tensor t(DataType::kFloat32, {70000});
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(i) * 0.5f;
    big.outputs.set("big", t);
    big.runner_name = "big";
    results.add({big}, "big");
    const std::string path = dir_.file("good.json");
    results.save(path);
    const std::string good = read_file(path);
    const std::string bad_path = dir_.file("bad.json");
    std::size_t rejected = 0;
    for (std::size_t cut = 0; cut < good.size(); cut += (cut < 4000 ? 7 : 9973)) {
        write("bad.json", std::string_view(good).substr(0, cut));
        EXPECT_THROW(RunResults::load(bad_path), FormatError) << "cut at " << cut;
        ++rejected;
    }
    EXPECT_GT(rejected, 500u);
    std::mt19937 rng(123);
    for (int trial = 0; trial < 400; ++trial) {
        std::string corrupt = good;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            // Mostly the structure-rich first part, sometimes anywhere.
            const std::size_t limit = trial % 4 == 0 ? corrupt.size() : std::min<std::size_t>(corrupt.size(), 6000);
            corrupt[rng() % limit] = static_cast<char>(rng() % 256);
        }
        write("bad.json", corrupt);
        try {
            RunResults::load(bad_path);
        } catch (const FormatError&) {
        }
    }
}

}  // namespace
}  // namespace polygraphy
