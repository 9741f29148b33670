// Dataset summaries as files: what `run --save-summary` writes, and `data merge` reads, checks and
// adds up (polygraphy/comparator/dataset_summary.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "common/text_util.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/ordered_map.h"
#include "polygraphy/comparator/dataset_summary.h"

namespace polygraphy {
namespace {

constexpr int64_t kFormatVersion = 1;
constexpr const char* kClassName = "DatasetSummary";

// ---- writing -------------------------------------------------------------------------------------

void write_histogram(json::Writer& writer, const Histogram& histogram) {
    writer.begin_object();
    writer.key("low").value(histogram.low);
    writer.key("high").value(histogram.high);
    writer.key("counts").begin_array();
    for (int64_t count : histogram.counts) writer.value(count);
    writer.end_array();
    writer.key("non_positive").value(histogram.non_positive);
    writer.key("nan").value(histogram.nan);
    writer.key("infinite").value(histogram.infinite);
    writer.end_object();
}

template <typename Field>
void write_column(json::Writer& writer, const char* key, const std::vector<SampleOutcome>& outcomes, Field field) {
    writer.key(key).begin_array();
    for (const SampleOutcome& outcome : outcomes) writer.value(field(outcome));
    writer.end_array();
}

void write_output(json::Writer& writer, const OutputDatasetSummary& output) {
    writer.begin_object();
    writer.key("name").value(output.output);
    write_output_figures(writer, output);
    writer.key("sum_max_abs_diff").value(output.sum_max_abs);
    writer.key("sum_max_rel_diff").value(output.sum_max_rel);
    writer.key("sum_mean_abs_diff").value(output.sum_mean_abs);
    writer.key("sum_mean_rel_diff").value(output.sum_mean_rel);
    writer.key("histograms");
    if (output.histograms) {
        writer.begin_object();
        writer.key("abs_diff");
        write_histogram(writer, output.histograms->absolute);
        writer.key("rel_diff");
        write_histogram(writer, output.histograms->relative);
        writer.end_object();
    } else {
        writer.null();
    }
    // Per sample, as columns: one list per figure, in sample order.
    writer.key("per_sample").begin_object();
    const auto& outcomes = output.per_sample;
    write_column(writer, "sample", outcomes, [](const SampleOutcome& o) { return static_cast<int64_t>(o.sample); });
    write_column(writer, "passed", outcomes, [](const SampleOutcome& o) { return o.passed; });
    write_column(writer, "compared", outcomes, [](const SampleOutcome& o) { return o.compared; });
    write_column(writer, "max_abs_diff", outcomes, [](const SampleOutcome& o) { return o.max_abs; });
    write_column(writer, "max_rel_diff", outcomes, [](const SampleOutcome& o) { return o.max_rel; });
    write_column(writer, "mean_abs_diff", outcomes, [](const SampleOutcome& o) { return o.mean_abs; });
    write_column(writer, "mean_rel_diff", outcomes, [](const SampleOutcome& o) { return o.mean_rel; });
    writer.end_object();
    writer.end_object();
}

void write_summary(json::Writer& writer, const DatasetSummary& summary) {
    writer.begin_object();
    writer.key("polygraphy_class").value(kClassName);
    writer.key("format_version").value(kFormatVersion);
    writer.key("model").value(summary.model_fingerprint);
    writer.key("dataset").value(summary.dataset_fingerprint);
    writer.key("options").value(summary.options_fingerprint);
    writer.key("dataset_samples").value(static_cast<int64_t>(summary.dataset_samples));
    writer.key("shard_count").value(static_cast<int64_t>(summary.shard_count));
    writer.key("shards").begin_array();
    for (std::size_t shard : summary.shards) writer.value(static_cast<int64_t>(shard));
    writer.end_array();
    writer.key("samples").begin_array();
    for (std::size_t sample : summary.samples) writer.value(static_cast<int64_t>(sample));
    writer.end_array();
    writer.key("passed").value(summary.passed());
    writer.key("pairs").begin_array();
    for (const PairDatasetSummary& pair : summary.pairs) {
        writer.begin_object();
        writer.key("runners").begin_array().value(pair.first_runner).value(pair.second_runner).end_array();
        writer.key("outputs").begin_array();
        for (const OutputDatasetSummary& output : pair.outputs) write_output(writer, output);
        writer.end_array();
        writer.key("first_divergences").begin_array();
        for (const SampleDivergence& divergence : pair.first_divergences) {
            writer.begin_object();
            writer.key("sample").value(static_cast<int64_t>(divergence.sample));
            writer.key("node").value(divergence.node);
            writer.key("op").value(divergence.op_type);
            writer.key("tensor").value(divergence.tensor);
            writer.key("max_abs_diff").value(divergence.max_abs);
            writer.end_object();
        }
        writer.end_array();
        writer.end_object();
    }
    writer.end_array();
    writer.end_object();
}

std::string summary_text(const DatasetSummary& summary) {
    std::string text;
    json::Writer writer(&text);
    write_summary(writer, summary);
    writer.finish();
    return text;
}

// ---- reading -------------------------------------------------------------------------------------

// Reads the members of an object by key, failing on unknown or missing ones.
class ObjectReader {
public:
    explicit ObjectReader(json::Cursor& cursor) : cursor_(cursor) { cursor_.begin_object(); }

    // Calls `read(key)` for each member; `read` returns false for a key it does not know.
    template <typename Read>
    void members(std::initializer_list<const char*> required, Read read) {
        std::set<std::string> seen;
        std::string scratch;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string name(*key);
            if (!seen.insert(name).second) cursor_.fail("the key \"" + name + "\" appears twice");
            if (!read(name)) cursor_.fail("unexpected key \"" + name + "\"");
        }
        for (const char* key : required)
            if (!seen.count(key)) cursor_.fail(std::string("missing key \"") + key + "\"");
    }

private:
    json::Cursor& cursor_;
};

std::size_t read_count(json::Cursor& cursor) {
    const std::size_t offset = cursor.offset();
    const double value = cursor.read_number();
    if (!(value >= 0) || value != std::floor(value) || value > 9.0e15)
        cursor.fail_at(offset, "expected a non-negative integer");
    return static_cast<std::size_t>(value);
}

template <typename Read>
void read_list(json::Cursor& cursor, Read read) {
    cursor.begin_array();
    while (cursor.next_element()) read();
}

std::vector<std::size_t> read_counts(json::Cursor& cursor) {
    std::vector<std::size_t> values;
    read_list(cursor, [&] { values.push_back(read_count(cursor)); });
    return values;
}

Histogram read_histogram(json::Cursor& cursor) {
    Histogram histogram;
    histogram.log_scale = true;
    ObjectReader(cursor).members(
        {"low", "high", "counts", "non_positive", "nan", "infinite"}, [&](const std::string& key) {
            if (key == "low")
                histogram.low = cursor.read_number();
            else if (key == "high")
                histogram.high = cursor.read_number();
            else if (key == "counts")
                read_list(cursor, [&] { histogram.counts.push_back(static_cast<int64_t>(read_count(cursor))); });
            else if (key == "non_positive")
                histogram.non_positive = static_cast<int64_t>(read_count(cursor));
            else if (key == "nan")
                histogram.nan = static_cast<int64_t>(read_count(cursor));
            else if (key == "infinite")
                histogram.infinite = static_cast<int64_t>(read_count(cursor));
            else
                return false;
            return true;
        });
    const Histogram fixed = decade_histogram(Tensor(DataType::kFloat32, Shape{0}));
    if (histogram.low != fixed.low || histogram.high != fixed.high || histogram.counts.size() != fixed.counts.size())
        cursor.fail(fmt::format("a histogram that is not on the fixed decade bins ({} bins from {} to {})",
                                fixed.counts.size(), json::format_float(fixed.low), json::format_float(fixed.high)));
    return histogram;
}

SampleQuantiles read_quantiles(json::Cursor& cursor) {
    SampleQuantiles quantiles;
    ObjectReader(cursor).members({"min", "median", "p90", "max"}, [&](const std::string& key) {
        double* field = key == "min"      ? &quantiles.min
                        : key == "median" ? &quantiles.median
                        : key == "p90"    ? &quantiles.p90
                        : key == "max"    ? &quantiles.max
                                          : nullptr;
        if (!field) return false;
        *field = cursor.read_number();
        return true;
    });
    return quantiles;
}

OutputDatasetSummary read_output(json::Cursor& cursor) {
    OutputDatasetSummary output;
    std::size_t samples = 0, passed = 0, failed = 0;
    std::vector<std::size_t> sample_column;
    std::vector<bool> passed_column, compared_column;
    std::vector<double> max_abs, max_rel, mean_abs, mean_rel;
    const std::size_t start = cursor.offset();
    ObjectReader(cursor).members({"name", "samples", "passed", "failed", "per_sample"}, [&](const std::string& key) {
        if (key == "name") {
            output.output = cursor.read_string();
        } else if (key == "samples") {
            samples = read_count(cursor);
        } else if (key == "passed") {
            passed = read_count(cursor);
        } else if (key == "failed") {
            failed = read_count(cursor);
        } else if (key == "worst_sample") {
            read_count(cursor);  // recomputed from the samples
        } else if (key == "max_abs_diff" || key == "max_rel_diff") {
            read_quantiles(cursor);  // recomputed from the samples
        } else if (key == "sum_max_abs_diff" || key == "sum_max_rel_diff" || key == "sum_mean_abs_diff" ||
                   key == "sum_mean_rel_diff") {
            cursor.read_number();  // recomputed from the samples, in sample order
        } else if (key == "histograms") {
            if (cursor.read_null()) return true;
            ErrorHistograms histograms;
            ObjectReader(cursor).members({"abs_diff", "rel_diff"}, [&](const std::string& which) {
                if (which == "abs_diff")
                    histograms.absolute = read_histogram(cursor);
                else if (which == "rel_diff")
                    histograms.relative = read_histogram(cursor);
                else
                    return false;
                return true;
            });
            output.histograms = histograms;
        } else if (key == "per_sample") {
            ObjectReader(cursor).members(
                {"sample", "passed", "compared", "max_abs_diff", "max_rel_diff", "mean_abs_diff", "mean_rel_diff"},
                [&](const std::string& column) {
                    auto numbers = [&](std::vector<double>& values) {
                        read_list(cursor, [&] { values.push_back(cursor.read_number()); });
                    };
                    if (column == "sample")
                        sample_column = read_counts(cursor);
                    else if (column == "passed")
                        read_list(cursor, [&] { passed_column.push_back(cursor.read_bool()); });
                    else if (column == "compared")
                        read_list(cursor, [&] { compared_column.push_back(cursor.read_bool()); });
                    else if (column == "max_abs_diff")
                        numbers(max_abs);
                    else if (column == "max_rel_diff")
                        numbers(max_rel);
                    else if (column == "mean_abs_diff")
                        numbers(mean_abs);
                    else if (column == "mean_rel_diff")
                        numbers(mean_rel);
                    else
                        return false;
                    return true;
                });
        } else {
            return false;
        }
        return true;
    });
    const std::size_t n = sample_column.size();
    for (std::size_t size : {passed_column.size(), compared_column.size(), max_abs.size(), max_rel.size(),
                             mean_abs.size(), mean_rel.size()})
        if (size != n)
            cursor.fail_at(start, fmt::format("the per-sample lists of output \"{}\" differ in length", output.output));
    for (std::size_t i = 0; i < n; ++i)
        output.per_sample.push_back(SampleOutcome{sample_column[i], passed_column[i], compared_column[i], max_abs[i],
                                                  max_rel[i], mean_abs[i], mean_rel[i]});
    complete_output_summary(output);
    if (output.samples != samples || output.passed != passed || output.failed != failed)
        cursor.fail_at(start, fmt::format("the counts of output \"{}\" do not match its samples", output.output));
    for (std::size_t i = 1; i < n; ++i)
        if (output.per_sample[i].sample == output.per_sample[i - 1].sample)
            cursor.fail_at(
                start, fmt::format("output \"{}\" lists sample {} twice", output.output, output.per_sample[i].sample));
    return output;
}

PairDatasetSummary read_pair(json::Cursor& cursor) {
    PairDatasetSummary pair;
    ObjectReader(cursor).members({"runners", "outputs", "first_divergences"}, [&](const std::string& key) {
        if (key == "runners") {
            std::vector<std::string> names;
            read_list(cursor, [&] { names.push_back(cursor.read_string()); });
            if (names.size() != 2) cursor.fail("\"runners\" must name two runners");
            pair.first_runner = names[0];
            pair.second_runner = names[1];
        } else if (key == "outputs") {
            read_list(cursor, [&] { pair.outputs.push_back(read_output(cursor)); });
        } else if (key == "first_divergences") {
            read_list(cursor, [&] {
                SampleDivergence divergence;
                ObjectReader(cursor).members({"sample", "node", "op", "tensor", "max_abs_diff"},
                                             [&](const std::string& field) {
                                                 if (field == "sample")
                                                     divergence.sample = read_count(cursor);
                                                 else if (field == "node")
                                                     divergence.node = cursor.read_string();
                                                 else if (field == "op")
                                                     divergence.op_type = cursor.read_string();
                                                 else if (field == "tensor")
                                                     divergence.tensor = cursor.read_string();
                                                 else if (field == "max_abs_diff")
                                                     divergence.max_abs = cursor.read_number();
                                                 else
                                                     return false;
                                                 return true;
                                             });
                pair.first_divergences.push_back(divergence);
            });
        } else {
            return false;
        }
        return true;
    });
    return pair;
}

std::string join_numbers(const std::vector<std::size_t>& numbers) {
    std::vector<std::string> texts;
    for (std::size_t number : numbers) texts.push_back(std::to_string(number));
    return text::join_first(texts, 20);
}

// The samples a set of shards holds, ascending.
std::vector<std::size_t> samples_of_shards(const std::vector<std::size_t>& shards, std::size_t count,
                                           std::size_t samples) {
    std::vector<std::size_t> result;
    for (std::size_t shard : shards) {
        const std::vector<std::size_t> part = shard_samples(shard, count, samples);
        result.insert(result.end(), part.begin(), part.end());
    }
    std::sort(result.begin(), result.end());
    return result;
}

}  // namespace

void write_output_figures(json::Writer& writer, const OutputDatasetSummary& output) {
    writer.key("samples").value(static_cast<int64_t>(output.samples));
    writer.key("passed").value(static_cast<int64_t>(output.passed));
    writer.key("failed").value(static_cast<int64_t>(output.failed));
    for (const auto& [key, figures] :
         {std::pair{"max_abs_diff", &output.max_abs}, std::pair{"max_rel_diff", &output.max_rel}}) {
        writer.key(key).begin_object();
        writer.key("min").value(figures->min);
        writer.key("median").value(figures->median);
        writer.key("p90").value(figures->p90);
        writer.key("max").value(figures->max);
        writer.end_object();
    }
    writer.key("worst_sample").value(static_cast<int64_t>(output.worst_sample));
}

bool DatasetSummary::passed() const {
    for (const auto& pair : pairs)
        for (const auto& output : pair.outputs)
            if (output.failed > 0) return false;
    return true;
}

std::vector<std::size_t> shard_samples(std::size_t index, std::size_t count, std::size_t samples) {
    std::vector<std::size_t> result;
    if (count == 0) return result;
    for (std::size_t sample = index; sample < samples; sample += count) result.push_back(sample);
    return result;
}

void save_dataset_summary(const DatasetSummary& summary, const std::string& path) {
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out);
        write_summary(writer, summary);
        writer.finish();
    });
}

DatasetSummary load_dataset_summary(const std::string& path) {
    const std::string text = read_file(path);
    json::Cursor cursor(text, path);
    DatasetSummary summary;
    bool is_summary = false;
    ObjectReader(cursor).members(
        {"polygraphy_class", "format_version", "model", "dataset", "options", "dataset_samples", "shard_count",
         "shards", "samples", "pairs"},
        [&](const std::string& key) {
            if (key == "polygraphy_class") {
                is_summary = cursor.read_string() == kClassName;
                if (!is_summary)
                    cursor.fail(std::string("not a dataset summary (its class is not ") + kClassName + ")");
            } else if (key == "format_version") {
                if (cursor.read_number() != static_cast<double>(kFormatVersion))
                    cursor.fail(
                        fmt::format("a summary format this build does not read (it reads version {})", kFormatVersion));
            } else if (key == "model") {
                summary.model_fingerprint = cursor.read_string();
            } else if (key == "dataset") {
                summary.dataset_fingerprint = cursor.read_string();
            } else if (key == "options") {
                summary.options_fingerprint = cursor.read_string();
            } else if (key == "dataset_samples") {
                summary.dataset_samples = read_count(cursor);
            } else if (key == "shard_count") {
                summary.shard_count = read_count(cursor);
            } else if (key == "shards") {
                summary.shards = read_counts(cursor);
            } else if (key == "samples") {
                summary.samples = read_counts(cursor);
            } else if (key == "passed") {
                cursor.read_bool();  // recomputed
            } else if (key == "pairs") {
                read_list(cursor, [&] { summary.pairs.push_back(read_pair(cursor)); });
            } else {
                return false;
            }
            return true;
        });
    cursor.expect_end();

    // What the figures must satisfy, so that a damaged part never reaches a merge.
    auto fail = [&](const std::string& problem) { throw FormatError(path + ": " + problem); };
    if (summary.shard_count == 0) fail("\"shard_count\" is 0");
    if (summary.shards.empty()) fail("it holds no shard");
    for (std::size_t i = 0; i < summary.shards.size(); ++i) {
        if (summary.shards[i] >= summary.shard_count)
            fail(fmt::format("shard {} is out of range for {} shards", summary.shards[i], summary.shard_count));
        if (i > 0 && summary.shards[i] <= summary.shards[i - 1]) fail("its shards are not listed in ascending order");
    }
    if (summary.samples != samples_of_shards(summary.shards, summary.shard_count, summary.dataset_samples))
        fail(fmt::format("its samples are not those of its shards ({} of {}) of a dataset of {} samples",
                         join_numbers(summary.shards), summary.shard_count, summary.dataset_samples));
    const std::set<std::size_t> held(summary.samples.begin(), summary.samples.end());
    for (const auto& pair : summary.pairs) {
        for (const auto& output : pair.outputs)
            for (const auto& outcome : output.per_sample)
                if (!held.count(outcome.sample))
                    fail(fmt::format("output \"{}\" has a result for sample {}, which is not in its shards",
                                     output.output, outcome.sample));
        for (const auto& divergence : pair.first_divergences)
            if (!held.count(divergence.sample))
                fail(fmt::format("a divergence of sample {}, which is not in its shards", divergence.sample));
    }
    return summary;
}

DatasetSummary merge_dataset_summaries(const std::vector<std::pair<std::string, DatasetSummary>>& parts) {
    if (parts.empty()) throw UsageError("No summaries to merge");

    // Identical runs only: the first part (by shards, then name, so the order given does not matter)
    // is the reference the others are checked against.
    std::vector<const std::pair<std::string, DatasetSummary>*> ordered;
    for (const auto& part : parts) ordered.push_back(&part);
    std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
        return std::tie(a->second.shards, a->first) < std::tie(b->second.shards, b->first);
    });
    // Named references rather than structured bindings, which clang 14 cannot capture in a lambda.
    const std::string& reference_name = ordered.front()->first;
    const DatasetSummary& reference = ordered.front()->second;
    for (const auto* part : ordered) {
        const std::string& name = part->first;
        const DatasetSummary& summary = part->second;
        auto differ = [&](const std::string& what) {
            throw PolygraphyException(
                fmt::format("{} and {} are parts of different runs: their {} differ", reference_name, name, what));
        };
        if (summary.model_fingerprint != reference.model_fingerprint) differ("models");
        if (summary.dataset_fingerprint != reference.dataset_fingerprint ||
            summary.dataset_samples != reference.dataset_samples)
            differ("datasets");
        if (summary.options_fingerprint != reference.options_fingerprint) differ("options");
        if (summary.shard_count != reference.shard_count)
            differ(fmt::format("shard counts ({} and {})", reference.shard_count, summary.shard_count));
        bool same_runners = summary.pairs.size() == reference.pairs.size();
        for (std::size_t i = 0; same_runners && i < summary.pairs.size(); ++i)
            same_runners = summary.pairs[i].first_runner == reference.pairs[i].first_runner &&
                           summary.pairs[i].second_runner == reference.pairs[i].second_runner;
        if (!same_runners) differ("runners");
    }

    // One part per set of shards: the same shards twice (a requeued job) count once.
    std::map<std::vector<std::size_t>, const std::pair<std::string, DatasetSummary>*> unique;
    for (const auto* part : ordered) {
        auto [it, inserted] = unique.emplace(part->second.shards, part);
        if (inserted) continue;
        if (summary_text(it->second->second) != summary_text(part->second))
            logger().warning(fmt::format(
                "{} and {} hold the same shards with different figures (a requeued job on a runtime that is not "
                "deterministic?): keeping {}",
                it->second->first, part->first, it->second->first));
    }
    std::map<std::size_t, std::string> owner;  // shard -> the part holding it
    for (const auto& [shards, part] : unique)
        for (std::size_t shard : shards) {
            auto [it, inserted] = owner.emplace(shard, part->first);
            if (!inserted)
                throw PolygraphyException(fmt::format(
                    "{} and {} both hold shard {} but not the same shards: merge the shards' own summaries instead",
                    it->second, part->first, shard));
        }
    std::vector<std::size_t> missing;
    for (std::size_t shard = 0; shard < reference.shard_count; ++shard)
        if (!owner.count(shard)) missing.push_back(shard);
    if (!missing.empty())
        throw PolygraphyException(fmt::format("Missing shard{} {} of {}: no part holds {}",
                                              missing.size() == 1 ? "" : "s", join_numbers(missing),
                                              reference.shard_count, missing.size() == 1 ? "it" : "them"));

    DatasetSummary merged;
    merged.model_fingerprint = reference.model_fingerprint;
    merged.dataset_fingerprint = reference.dataset_fingerprint;
    merged.options_fingerprint = reference.options_fingerprint;
    merged.dataset_samples = reference.dataset_samples;
    merged.shard_count = reference.shard_count;
    for (const auto& [shards, part] : unique) {
        merged.shards.insert(merged.shards.end(), shards.begin(), shards.end());
        merged.samples.insert(merged.samples.end(), part->second.samples.begin(), part->second.samples.end());
    }
    std::sort(merged.shards.begin(), merged.shards.end());
    std::sort(merged.samples.begin(), merged.samples.end());

    for (std::size_t p = 0; p < reference.pairs.size(); ++p) {
        PairDatasetSummary pair;
        pair.first_runner = reference.pairs[p].first_runner;
        pair.second_runner = reference.pairs[p].second_runner;
        // Outputs in the order an unsharded run lists them: by the first sample that has them, then
        // by their place in the part holding that sample.
        OrderedMap<OutputDatasetSummary> outputs;
        std::map<std::string, std::pair<std::size_t, std::size_t>> first_seen;
        for (const auto& [shards, part] : unique) {
            const PairDatasetSummary& source = part->second.pairs[p];
            for (std::size_t position = 0; position < source.outputs.size(); ++position) {
                const OutputDatasetSummary& output = source.outputs[position];
                if (!outputs.contains(output.output)) {
                    OutputDatasetSummary fresh;
                    fresh.output = output.output;
                    outputs.set(output.output, fresh);
                }
                OutputDatasetSummary& total = outputs.at(output.output);
                total.per_sample.insert(total.per_sample.end(), output.per_sample.begin(), output.per_sample.end());
                if (output.histograms) {
                    if (!total.histograms) total.histograms.emplace();
                    add_histogram(total.histograms->absolute, output.histograms->absolute);
                    add_histogram(total.histograms->relative, output.histograms->relative);
                }
                if (!output.per_sample.empty()) {
                    const std::pair<std::size_t, std::size_t> key{output.per_sample.front().sample, position};
                    auto [it, inserted] = first_seen.emplace(output.output, key);
                    if (!inserted) it->second = std::min(it->second, key);
                }
            }
            pair.first_divergences.insert(pair.first_divergences.end(), source.first_divergences.begin(),
                                          source.first_divergences.end());
        }
        for (auto& [name, output] : outputs) {
            complete_output_summary(output);
            pair.outputs.push_back(std::move(output));
        }
        std::stable_sort(pair.outputs.begin(), pair.outputs.end(), [&](const auto& a, const auto& b) {
            auto key = [&](const OutputDatasetSummary& output) {
                const auto it = first_seen.find(output.output);
                return it == first_seen.end() ? std::pair<std::size_t, std::size_t>{SIZE_MAX, 0} : it->second;
            };
            return key(a) < key(b);
        });
        std::sort(pair.first_divergences.begin(), pair.first_divergences.end(),
                  [](const SampleDivergence& a, const SampleDivergence& b) { return a.sample < b.sample; });
        merged.pairs.push_back(std::move(pair));
    }
    return merged;
}

AccuracyResult accuracy_from_summary(const DatasetSummary& summary) {
    AccuracyResult accuracy;
    std::map<std::size_t, std::size_t> iteration_of;
    for (std::size_t i = 0; i < summary.samples.size(); ++i) iteration_of[summary.samples[i]] = i;
    for (const PairDatasetSummary& source : summary.pairs) {
        AccuracyResult::PairResult pair;
        pair.first_runner = source.first_runner;
        pair.second_runner = source.second_runner;
        pair.iterations.resize(summary.samples.size());
        for (const OutputDatasetSummary& output : source.outputs)
            for (const SampleOutcome& outcome : output.per_sample) {
                OutputCompareResult result;
                result.passed = outcome.passed;
                result.output_name = result.other_name = output.output;
                result.max_absdiff = outcome.max_abs;
                result.max_reldiff = outcome.max_rel;
                result.mean_absdiff = outcome.mean_abs;
                result.mean_reldiff = outcome.mean_rel;
                result.required_atol = outcome.max_abs;
                if (!outcome.compared) result.error = "could not be compared";
                pair.iterations.at(iteration_of.at(outcome.sample)).set(output.output, result);
            }
        accuracy.pairs.push_back(std::move(pair));
    }
    return accuracy;
}

}  // namespace polygraphy
