// inspect data's text (str_from_run_results / str_from_inputs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "polygraphy/comparator/data_summary.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Tensor floats(Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(DataType::kFloat32, std::move(shape), values);
}

RunResults two_runners() {
    RunResults results;
    IterationResult first;
    first.outputs.set("y", floats({2}, {1, 2}));
    IterationResult second;
    second.outputs.set("y", floats({2}, {3, 4}));
    results.add({first, second}, "runner-a");
    IterationResult other;
    other.outputs.set("y", floats({2}, {5, 6}));
    results.add({other}, "b");
    return results;
}

TEST(DataSummary, RunResultsLayout) {
    EXPECT_EQ(str_from_run_results(two_runners(), {}),
              "==== Run Results (2 runners) ====\n"
              "\n"
              "---- runner-a (2 iterations) ----\n"
              "\n"
              "y [dtype=float32, shape=(2,)] | Stats: mean=1.5, std-dev=0.5, var=0.25, median=1.5, min=1 at (0,), "
              "max=2 at (1,), avg-magnitude=1.5, p90=1.9, p95=1.95, p99=1.99\n"
              "---- b        (1 iterations) ----\n"
              "\n"
              "y [dtype=float32, shape=(2,)] | Stats: mean=5.5, std-dev=0.5, var=0.25, median=5.5, min=5 at (0,), "
              "max=6 at (1,), avg-magnitude=5.5, p90=5.9, p95=5.95, p99=5.99");
}

TEST(DataSummary, AllIterationsValuesAndHistogram) {
    DataSummaryOptions options;
    options.all_iterations = true;
    options.show_values = true;
    const std::string text = str_from_run_results(two_runners(), options);
    // Polygraphy's indent_block drops the iteration line's newline: the tensor's indentation follows it.
    EXPECT_THAT(text, HasSubstr("---- runner-a (2 iterations) ----\n"
                                "\n"
                                "-- Iteration: 0    \n"
                                "    y [dtype=float32, shape=(2,)] | Stats: mean=1.5"));
    EXPECT_THAT(text, HasSubstr("p99=1.99\n        [1. 2.]\n\n-- Iteration: 1    \n"));
    EXPECT_THAT(text, HasSubstr("        [3. 4.]\n\n---- b "));
    options.all_iterations = false;
    options.show_values = false;
    options.histogram = true;
    EXPECT_THAT(str_from_run_results(two_runners(), options), HasSubstr("p99=1.99\n    ---- Histogram ----\n"));
}

TEST(DataSummary, InputsAndPrintOptions) {
    InputList inputs(2);
    std::vector<double> values(30);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
    inputs[0].set("ids", Tensor::from_doubles(DataType::kInt64, {30}, values));
    inputs[1].set("ids", Tensor::from_doubles(DataType::kInt64, {1}, {7}));
    DataSummaryOptions options;
    options.show_values = true;
    const std::string text = str_from_inputs(inputs, options);
    EXPECT_THAT(text, ::testing::StartsWith("==== Data (2 iterations) ====\n\nids [dtype=int64, shape=(30,)] | Stats: "));
    // Under numpy's 1000-element threshold: every value, wrapped at 75 characters.
    EXPECT_THAT(text, HasSubstr("    [ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
                                "     24 25 26 27 28 29]"));
    options.print.line_width = int64_t{1} << 30;
    EXPECT_THAT(str_from_inputs(inputs, options), HasSubstr("    [ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 "
                                                            "20 21 22 23 24 25 26 27 28 29]"));
    // Summarized arrays show --num-items at each end.
    std::vector<double> many(2000, 1.0);
    InputList big(1);
    big[0].set("x", Tensor::from_doubles(DataType::kInt32, {2000}, many));
    options.print = {};
    options.print.edge_items = 2;
    EXPECT_THAT(str_from_inputs(big, options), HasSubstr("    [1 1 ... 1 1]"));
}

TEST(DataSummary, StringTensorsHaveNoStats) {
    InputList inputs(1);
    Tensor text(DataType::kString, {1});
    text.strings()[0] = "hello";
    inputs[0].set("s", text);
    EXPECT_THAT(str_from_inputs(inputs, {}), HasSubstr("| Stats: <Error while computing statistics>"));
}

}  // namespace
}  // namespace polygraphy
