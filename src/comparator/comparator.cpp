// Comparator: runs runners on shared inputs, compares consecutive results, validates outputs.
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/dataset_summary.h"

#include <cmath>
#include <cstdio>

#include "comparator/comparison_log.h"
#include "comparator/slice_context.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/numpy_print.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy {
namespace {

std::string pad35(const std::string& name) {
    return name.size() >= 35 ? name : name + std::string(35 - name.size(), ' ');
}

std::string format_4g(double value) {
    return stats::format_g(value, 4);
}

bool all_passed(const IterationCompareResult& iteration) {
    for (const auto& entry : iteration)
        if (!entry.second.passed) return false;
    return true;
}

// Comparator.run's DataLoaderCache: data generated once, coerced to each runner's inputs.
class DataLoaderCache {
public:
    DataLoaderCache(const DataLoaderFn& loader, std::optional<std::string> save_inputs_path)
        : loader_(loader), save_inputs_path_(std::move(save_inputs_path)) {}

    void set_input_metadata(const TensorMetadata& metadata) {
        metadata_ = metadata;
        if (loaded_) return;
        loaded_ = true;
        logger().verbose("Loading inputs from data loader");
        for (std::size_t i = 0;; ++i) {
            std::optional<TensorMap> feed = loader_(i, metadata);
            if (!feed) break;
            cache_.push_back(std::move(*feed));
        }
        if (cache_.empty()) logger().warning("Data loader did not yield any input data.");
        if (save_inputs_path_) {
            save_inputs(cache_, *save_inputs_path_);
        }
    }

    std::size_t size() const { return cache_.size(); }

    // The cached feed of `iteration`, matched to the current runner's inputs; falls back to asking
    // the loader again (random access) when the cached buffers cannot be reused.
    TensorMap operator[](std::size_t iteration) const {
        try {
            return coerce_feed(cache_.at(iteration), metadata_);
        } catch (const PolygraphyException&) {
            logger().warning(
                "Could not use buffer previously cached from data loader. Attempting to reload inputs from the data "
                "loader.\nNote that this will only work if the data loader supports random access.\nPlease refer to "
                "warnings above for details on why the previously generated input buffer didn't work. ");
        }
        std::optional<TensorMap> feed;
        try {
            feed = loader_(iteration, metadata_);
        } catch (const PolygraphyException&) {
            feed.reset();
        }
        if (!feed)
            throw PolygraphyException(
                "Could not reload inputs from data loader. Are the runners running the same model? If not, please "
                "rewrite the data loader to support random access.");
        return *feed;
    }

private:
    const DataLoaderFn& loader_;
    std::optional<std::string> save_inputs_path_;
    TensorMetadata metadata_;
    std::vector<TensorMap> cache_;
    bool loaded_ = false;
};

std::vector<IterationResult> execute_runner(BaseRunner& runner, DataLoaderCache& cache, int warm_up,
                                           const Comparator::IterationCallback& on_iteration) {
    RunnerActivation activation(runner);
    cache.set_input_metadata(runner.get_input_metadata());

    if (warm_up > 0) {
        logger().start(pad35(runner.name()) + " | Running " + std::to_string(warm_up) + " warm-up run(s)");
        if (cache.size() == 0) {
            logger().warning(std::to_string(warm_up) +
                             " warm-up run(s) were requested, but data loader did not supply any data. Skipping "
                             "warm-up run(s)");
        } else {
            const TensorMap feed = cache[0];
            for (int i = 0; i < warm_up; ++i) runner.infer(feed);
        }
        logger().finish(pad35(runner.name()) + " | Finished " + std::to_string(warm_up) + " warm-up run(s)");
    }

    std::vector<IterationResult> results;
    double total_runtime = 0;
    for (std::size_t index = 0; index < cache.size(); ++index) {
        const TensorMap feed = cache[index];
        logger().log_once(Severity::kInfo, pad35(runner.name()) + "\n---- Inference Input(s) ----\n" +
                                               TensorMetadata::from_feed_dict(feed).to_string());
        const TensorMap outputs = runner.infer(feed);
        const double runtime = runner.last_inference_time().value_or(0.0);
        total_runtime += runtime;

        IterationResult result;
        for (const auto& [name, tensor] : outputs) result.outputs.set(name, tensor.clone());
        result.runtime = runtime;
        result.runner_name = runner.name();
        if (on_iteration) on_iteration(runner.name(), results.size(), result);
        results.push_back(std::move(result));

        logger().log_once(Severity::kInfo, pad35(runner.name()) + "\n---- Inference Output(s) ----\n" +
                                               TensorMetadata::from_feed_dict(outputs).to_string());
        if (logger().enabled(Severity::kExtraVerbose)) {
            char milliseconds[64];
            std::snprintf(milliseconds, sizeof(milliseconds), "%.3f", runtime * 1000.0);
            logger().extra_verbose(pad35(runner.name()) + " | Inference Time: " + milliseconds + " ms");
        }
    }

    const double total_ms = total_runtime * 1000.0;
    const std::size_t count = results.size();
    logger().finish(
        pad35(runner.name()) + " | Completed " + std::to_string(count) + " iteration(s) in " + format_4g(total_ms) +
        " ms | Average inference time: " + format_4g(count ? total_ms / static_cast<double>(count) : 0.0) + " ms.");
    return results;
}

}  // namespace

std::size_t AccuracyResult::PairResult::passed_iterations() const {
    std::size_t passed = 0;
    for (const auto& iteration : iterations) passed += all_passed(iteration) ? 1 : 0;
    return passed;
}

AccuracyResult::operator bool() const {
    for (const auto& pair : pairs)
        for (const auto& iteration : pair.iterations)
            if (!all_passed(iteration)) return false;
    return true;
}

double AccuracyResult::percentage(std::size_t index) const {
    if (pairs.empty()) return 1.0;
    if (index >= pairs.size())
        throw PolygraphyException("No comparison with index " + std::to_string(index) +
                                  " in this accuracy result.\nNote: it has " + std::to_string(pairs.size()) +
                                  " comparison(s)");
    const PairResult& pair = pairs[index];
    if (pair.iterations.empty()) return 1.0;
    return static_cast<double>(pair.passed_iterations()) / static_cast<double>(pair.iterations.size());
}

RunResults Comparator::run(const std::vector<BaseRunner*>& runners, const DataLoaderFn& data_loader,
                           const RunOptions& options) {
    return run(runners, data_loader, options, IterationCallback{});
}

RunResults Comparator::run(const std::vector<BaseRunner*>& runners, const DataLoaderFn& data_loader,
                           const RunOptions& options, const IterationCallback& on_iteration) {
    if (!data_loader) throw PolygraphyException("Comparator::run needs a data loader; got an empty function");
    for (const BaseRunner* runner : runners)
        if (!runner) throw PolygraphyException("Comparator::run was given a null runner");
    if (options.warm_up < 0)
        throw UsageError("The number of warm-up runs must not be negative.\nNote: given: " +
                         std::to_string(options.warm_up));

    RunResults results;
    if (runners.empty())
        logger().warning(
            "No runners were provided to Comparator.run(). Inference will not be run, and run results will be empty.");

    DataLoaderCache cache(data_loader, options.save_inputs_path);
    std::vector<std::string> names;
    for (BaseRunner* runner : runners) {
        logger().start(pad35(runner->name()) + " | Activating and starting inference");
        results.add(execute_runner(*runner, cache, options.warm_up, on_iteration), runner->name());
        names.push_back(runner->name());
    }
    logger().verbose("Successfully ran: " + python_list_repr(names));
    return results;
}

namespace comparator_detail {

namespace {
thread_local SliceContext* current_slice_context = nullptr;
}  // namespace

SliceContext::SliceContext(bool partial) : partial_(partial), previous_(current_slice_context) {
    current_slice_context = this;
}

SliceContext::~SliceContext() {
    current_slice_context = previous_;
}

SliceContext* SliceContext::current() {
    return current_slice_context;
}

void log_iteration_summary(const IterationCompareResult& iteration) {
    std::vector<std::string> mismatched, compared;
    for (const auto& [name, result] : iteration) {
        compared.push_back(name);
        if (!result.passed) mismatched.push_back(name);
    }
    if (!mismatched.empty())
        logger().error("FAILED | Mismatched outputs: " + python_list_repr(mismatched));
    else
        logger().finish("PASSED | All outputs matched | Outputs: " + python_list_repr(compared));
}

}  // namespace comparator_detail

SlicedComparison::SlicedComparison(CompareFunc compare_func, bool fail_fast)
    : compare_func_(std::move(compare_func)), fail_fast_(fail_fast) {
    if (!compare_func_)
        throw PolygraphyException("Comparator::compare_accuracy needs a compare function; got an empty one");
}

bool SlicedComparison::compare(const RunResults& slice, bool last) {
    if (stopped_) return false;
    const std::size_t pair_count = slice.lst.empty() ? 0 : slice.lst.size() - 1;
    if (!first_slice_ && pair_count != accuracy_.pairs.size())
        throw PolygraphyException("A slice of the outputs holds " + std::to_string(slice.lst.size()) +
                                  " results; the first slice held " + std::to_string(accuracy_.pairs.size() + 1));
    for (std::size_t index = 0; index < pair_count; ++index) {
        const auto& [name0, results0] = slice.lst[index];
        const auto& [name1, results1] = slice.lst[index + 1];
        if (first_slice_) accuracy_.pairs.push_back({name0, name1, {}});
        AccuracyResult::PairResult& pair = accuracy_.pairs[index];
        if (pair.first_runner != name0 || pair.second_runner != name1)
            throw PolygraphyException("A slice of the outputs compares " + name0 + " with " + name1 +
                                      "; the first slice compared " + pair.first_runner + " with " +
                                      pair.second_runner);
        logger().start("Accuracy Comparison | " + name0 + " vs. " + name1);
        {
            auto guard = logger().indent();
            const std::size_t iterations = std::min(results0.size(), results1.size());
            if (first_slice_) pair.iterations.resize(iterations);
            if (iterations != pair.iterations.size())
                throw PolygraphyException("A slice of the outputs has " + std::to_string(iterations) +
                                          " iteration(s) of " + name0 + " vs. " + name1 + "; the first slice had " +
                                          std::to_string(pair.iterations.size()));
            for (std::size_t i = 0; i < iterations; ++i) {
                if (iterations > 1) logger().info("Iteration: " + std::to_string(i));
                auto iteration_guard = logger().indent(iterations > 1 ? 1 : 0);
                // Hand-made results may lack runner names; the entry's name is what they mean.
                IterationResult first = results0[i], second = results1[i];
                if (first.runner_name.empty()) first.runner_name = name0;
                if (second.runner_name.empty()) second.runner_name = name1;
                comparator_detail::SliceContext context(/*partial=*/!(first_slice_ && last));
                IterationCompareResult compared = compare_func_(first, second);
                outputs_compared_ += compared.size();
                bool passed = true;
                IterationCompareResult& merged = pair.iterations[i];
                for (auto& [name, result] : compared) {
                    passed = passed && result.passed;
                    merged.set(name, std::move(result));
                }
                if (fail_fast_ && !passed) {
                    pair.iterations.resize(i + 1);  // as if the later iterations were never compared
                    stopped_ = true;
                    return false;
                }
                if (last && context.summary_deferred()) comparator_detail::log_iteration_summary(merged);
            }
            logger().extra_verbose("Finished comparing " + name0 + " with " + name1);
        }
        if (!last) continue;
        const std::size_t passed = pair.passed_iterations(), total = pair.iterations.size();
        const double pass_rate = accuracy_.percentage(index) * 100.0;
        const std::string message = "Accuracy Summary | " + name0 + " vs. " + name1 +
                                    " | Passed: " + std::to_string(passed) + "/" + std::to_string(total) +
                                    " iterations | Pass Rate: " + python_float_repr(pass_rate) + "%";
        if (passed == total)
            logger().finish(message);
        else
            logger().error(message);
        // Beyond Polygraphy, which reports each iteration on its own: the samples summarised per output.
        if (total > 1) logger().info(format_dataset_summary(pair, summarize_dataset(pair)));
    }
    first_slice_ = false;
    return true;
}

AccuracyResult Comparator::compare_accuracy(const RunResults& results, const CompareFunc& compare_func,
                                            bool fail_fast) {
    SlicedComparison comparison(compare_func, fail_fast);
    comparison.compare(results, /*last=*/true);
    return comparison.result();
}

bool Comparator::validate(const RunResults& results, bool check_inf, bool check_nan, bool fail_fast) {
    auto python_bool = [](bool value) { return value ? std::string("True") : std::string("False"); };

    auto validate_output = [&](const std::string& runner_name, const std::string& output_name, const Tensor& output) {
        logger().start(pad35(runner_name) + " | Validating output: " + output_name +
                       " (check_inf=" + python_bool(check_inf) + ", check_nan=" + python_bool(check_nan) + ")");
        auto guard = logger().indent();
        const bool numeric = output.dtype() != DataType::kString;
        stats::ArrayStats figures;
        if (numeric) {
            figures = stats::compute_stats(output);
            stats::detail::log_output_stats(output, figures, false, "", std::nullopt);
        }

        // The statistics tell whether there are NaNs (their count) and infinities (the extremes; a NaN
        // counts as non-finite anyway, as in Polygraphy). Elements are scanned only for the details.
        const bool floating = numeric && dtype_is_floating(output.dtype());
        const bool any_nan = floating && figures.nan_count > 0;
        const bool any_non_finite = any_nan || (floating && (std::isinf(figures.min) || std::isinf(figures.max)));
        std::vector<uint8_t> non_finite, nans;
        if (floating && (any_nan || any_non_finite) && logger().enabled(Severity::kExtraVerbose)) {
            non_finite.resize(static_cast<std::size_t>(output.numel()));
            nans.resize(static_cast<std::size_t>(output.numel()));
            for (int64_t i = 0; i < output.numel(); ++i) {
                const double v = output.value_as_double(i);
                non_finite[static_cast<std::size_t>(i)] = !std::isfinite(v);
                nans[static_cast<std::size_t>(i)] = std::isnan(v);
            }
        }
        auto mask_tensor = [&](const std::vector<uint8_t>& mask) {
            return Tensor::from_bytes(DataType::kBool, output.shape(), mask.data(), mask.size());
        };

        bool valid = true;
        if (check_nan && any_nan) {
            logger().error("NaN Detected | One or more NaNs were encountered in this output");
            logger().log_once(Severity::kInfo,
                              "Note: Use -vv or set logging verbosity to EXTRA_VERBOSE to display locations of NaNs");
            if (logger().enabled(Severity::kExtraVerbose))
                logger().extra_verbose("Note: NaNs at:\n" + numpy::array_str(mask_tensor(nans)));
            valid = false;
        }
        if (check_inf && any_non_finite) {
            logger().error("Inf Detected | One or more non-finite values were encountered in this output");
            logger().log_once(Severity::kInfo,
                              "Note: Use -vv or set logging verbosity to EXTRA_VERBOSE to display non-finite values");
            if (logger().enabled(Severity::kExtraVerbose)) {
                logger().extra_verbose("Note: non-finite values at:\n" +
                                       numpy::array_str(mask_tensor(non_finite)));
                std::vector<double> values;
                for (int64_t i = 0; i < output.numel(); ++i)
                    if (non_finite[static_cast<std::size_t>(i)]) values.push_back(output.value_as_double(i));
                const Tensor bad = Tensor::from_doubles(output.dtype(), {static_cast<int64_t>(values.size())}, values);
                logger().extra_verbose("Note: non-finite values:\n" + numpy::array_str(bad));
            }
            valid = false;
        }
        if (valid)
            logger().finish("PASSED | Output: " + output_name + " is valid");
        else
            logger().error("FAILED | Errors detected in output: " + output_name);
        return valid;
    };

    std::vector<std::string> names;
    for (const auto& entry : results.lst) names.push_back(entry.first);
    logger().start("Output Validation | Runners: " + python_list_repr(names));
    auto guard = logger().indent();
    bool all_valid = true;
    for (const auto& [runner_name, iterations] : results.lst) {
        for (const IterationResult& iteration : iterations) {
            for (const auto& [output_name, output] : iteration.outputs) {
                all_valid = validate_output(runner_name, output_name, output) && all_valid;
                if (fail_fast && !all_valid) return false;
            }
        }
    }
    if (all_valid)
        logger().finish("PASSED | Output Validation");
    else
        logger().error("FAILED | Output Validation");
    return all_valid;
}

}  // namespace polygraphy
