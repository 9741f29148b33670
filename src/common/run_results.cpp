// RunResults / input lists in Polygraphy's JSON format, read with a pull parser over a file
// mapping (arrays are decoded from the mapping straight into tensor buffers) and written by
// streaming (arrays are base64-encoded in chunks), so memory stays close to the decoded data.
#include "polygraphy/common/run_results.h"

#include <fmt/format.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/npz.h"

namespace polygraphy {
namespace {

// Reads from a file mapping (releasing consumed pages as it goes) or from text already in memory.
class Reader {
public:
    explicit Reader(const std::string& path) : file_(std::in_place, path), cursor_(file_->view(), path) {
        if (file_->size() == 0) throw FormatError(fmt::format("{}: file is empty", path));
    }
    Reader(std::string_view text, const std::string& source) : cursor_(text, source) {
        if (text.empty()) throw FormatError(fmt::format("{}: file is empty", source));
    }

    json::Cursor& cursor() { return cursor_; }

    RunResults read_run_results() {
        RunResults results;
        if (cursor_.peek() != json::Cursor::Type::kObject)
            cursor_.fail(fmt::format("expected a RunResults object {{\"lst\": [...], \"polygraphy_class\": \"RunResults\"}} "
                                     "but found {}",
                                     json::Cursor::type_name(cursor_.peek())));
        const std::size_t start = cursor_.offset();
        cursor_.begin_object();
        std::optional<std::string> polygraphy_class;
        std::size_t class_offset = 0;
        bool have_lst = false;
        while (auto key = cursor_.next_key(scratch_)) {
            if (*key == "lst") {
                read_lst(results);
                have_lst = true;
            } else if (*key == "polygraphy_class") {
                read_polygraphy_class(polygraphy_class, class_offset);
            } else {
                cursor_.skip_value();
            }
        }
        if (!polygraphy_class)
            cursor_.fail_at(start, "not a RunResults file: the top-level object has no \"polygraphy_class\"");
        if (*polygraphy_class != "RunResults")
            cursor_.fail_at(class_offset, fmt::format("unknown polygraphy_class '{}' (expected 'RunResults')", *polygraphy_class));
        if (!have_lst) cursor_.fail_at(start, "RunResults object has no \"lst\"");
        cursor_.expect_end();
        return results;
    }

    InputList read_inputs() {
        InputList inputs;
        if (cursor_.peek() != json::Cursor::Type::kArray)
            cursor_.fail(fmt::format("expected a list of feed dicts [{{name: ndarray, ...}}, ...] but found {}",
                                     json::Cursor::type_name(cursor_.peek())));
        cursor_.begin_array();
        while (cursor_.next_element()) {
            const std::size_t iteration = inputs.size();
            if (cursor_.peek() != json::Cursor::Type::kObject)
                cursor_.fail(fmt::format("expected a feed dict {{name: ndarray, ...}} for iteration {} but found {}",
                                         iteration, json::Cursor::type_name(cursor_.peek())));
            TensorMap feed;
            cursor_.begin_object();
            while (auto key = cursor_.next_key(scratch_)) {
                std::string name(*key);
                feed.set(name, read_array(fmt::format("input '{}' of iteration {}", name, iteration)));
            }
            inputs.push_back(std::move(feed));
        }
        cursor_.expect_end();
        return inputs;
    }

private:
    // The value of a "polygraphy_class" key, and where its string starts (errors point at it).
    void read_polygraphy_class(std::optional<std::string>& polygraphy_class, std::size_t& class_offset) {
        cursor_.peek();  // skip whitespace: report the string itself
        class_offset = cursor_.offset();
        polygraphy_class = cursor_.read_string();
    }

    void read_lst(RunResults& results) {
        if (cursor_.peek() != json::Cursor::Type::kArray)
            cursor_.fail(fmt::format("\"lst\" must be a list of [runner_name, iterations] pairs but is {}",
                                     json::Cursor::type_name(cursor_.peek())));
        cursor_.begin_array();
        while (cursor_.next_element()) {
            const std::size_t entry_offset = cursor_.offset();
            if (cursor_.peek() != json::Cursor::Type::kArray)
                cursor_.fail(fmt::format("expected a [runner_name, iterations] pair in \"lst\" but found {}",
                                         json::Cursor::type_name(cursor_.peek())));
            cursor_.begin_array();
            if (!cursor_.next_element()) cursor_.fail_at(entry_offset, "a \"lst\" entry must be [runner_name, iterations] but is empty");
            if (cursor_.peek() != json::Cursor::Type::kString)
                cursor_.fail(fmt::format("expected a runner name string but found {}", json::Cursor::type_name(cursor_.peek())));
            std::string runner_name = cursor_.read_string();
            if (!cursor_.next_element())
                cursor_.fail_at(entry_offset, fmt::format("the \"lst\" entry of runner '{}' has no list of iterations", runner_name));
            std::vector<IterationResult> iterations;
            if (cursor_.peek() != json::Cursor::Type::kArray)
                cursor_.fail(fmt::format("expected the list of iterations of runner '{}' but found {}", runner_name,
                                         json::Cursor::type_name(cursor_.peek())));
            cursor_.begin_array();
            while (cursor_.next_element()) iterations.push_back(read_iteration(runner_name, iterations.size()));
            if (cursor_.next_element())
                cursor_.fail(fmt::format("the \"lst\" entry of runner '{}' has more than 2 items", runner_name));
            results.lst.emplace_back(std::move(runner_name), std::move(iterations));
        }
    }

    IterationResult read_iteration(const std::string& runner_name, std::size_t index) {
        const std::string where = fmt::format("iteration {} of runner '{}'", index, runner_name);
        if (cursor_.peek() != json::Cursor::Type::kObject)
            cursor_.fail(fmt::format("expected an IterationResult object for {} but found {}", where,
                                     json::Cursor::type_name(cursor_.peek())));
        const std::size_t start = cursor_.offset();
        IterationResult iteration;
        std::optional<std::string> polygraphy_class, name;
        std::size_t class_offset = 0;
        bool have_outputs = false;
        cursor_.begin_object();
        while (auto key = cursor_.next_key(scratch_)) {
            if (*key == "outputs") {
                if (cursor_.peek() != json::Cursor::Type::kObject)
                    cursor_.fail(fmt::format("\"outputs\" of {} must be an object but is {}", where,
                                             json::Cursor::type_name(cursor_.peek())));
                cursor_.begin_object();
                while (auto output = cursor_.next_key(scratch_)) {
                    std::string output_name(*output);
                    iteration.outputs.set(output_name, read_array(fmt::format("output '{}' of {}", output_name, where)));
                }
                have_outputs = true;
            } else if (*key == "runtime") {
                if (!cursor_.read_null()) {
                    if (cursor_.peek() != json::Cursor::Type::kNumber)
                        cursor_.fail(fmt::format("\"runtime\" of {} must be a number or null but is {}", where,
                                                 json::Cursor::type_name(cursor_.peek())));
                    iteration.runtime = cursor_.read_number();
                }
            } else if (*key == "runner_name") {
                name = cursor_.read_string();
            } else if (*key == "polygraphy_class") {
                read_polygraphy_class(polygraphy_class, class_offset);
            } else {
                cursor_.skip_value();
            }
        }
        if (!polygraphy_class)
            cursor_.fail_at(start, fmt::format("{} has no \"polygraphy_class\" (expected 'IterationResult')", where));
        if (*polygraphy_class != "IterationResult")
            cursor_.fail_at(class_offset, fmt::format("unknown polygraphy_class '{}' for {} (expected 'IterationResult')",
                                                      *polygraphy_class, where));
        if (!have_outputs) cursor_.fail_at(start, fmt::format("{} has no \"outputs\"", where));
        iteration.runner_name = name ? std::move(*name) : runner_name;
        return iteration;
    }

    // An ndarray {"array": ..., "polygraphy_class": "ndarray"} or a LazyArray {"values": ndarray, ...}.
    Tensor read_array(const std::string& what, int depth = 0) {
        if (cursor_.peek() != json::Cursor::Type::kObject)
            cursor_.fail(fmt::format("{} must be an ndarray object {{\"array\": ..., \"polygraphy_class\": \"ndarray\"}} "
                                     "but is {}",
                                     what, json::Cursor::type_name(cursor_.peek())));
        const std::size_t start = cursor_.offset();
        cursor_.begin_object();
        std::optional<std::string> polygraphy_class;
        std::size_t class_offset = 0;
        Tensor array, values;
        while (auto key = cursor_.next_key(scratch_)) {
            if (*key == "array") {
                array = read_npy_string(what);
            } else if (*key == "values" && depth == 0) {
                values = read_array(what, depth + 1);
            } else if (*key == "polygraphy_class") {
                read_polygraphy_class(polygraphy_class, class_offset);
            } else {
                cursor_.skip_value();
            }
        }
        if (!polygraphy_class)
            cursor_.fail_at(start, fmt::format("{} has no \"polygraphy_class\" (expected 'ndarray' or 'LazyArray')", what));
        if (*polygraphy_class == "ndarray") {
            if (!array.defined()) cursor_.fail_at(start, fmt::format("ndarray {} has no \"array\"", what));
            return array;
        }
        if (depth == 0 && (*polygraphy_class == "LazyArray" || *polygraphy_class == "LazyNumpyArray")) {
            if (!values.defined()) cursor_.fail_at(start, fmt::format("LazyArray {} has no \"values\"", what));
            return values;
        }
        cursor_.fail_at(class_offset, fmt::format("unknown polygraphy_class '{}' for {} (expected {})", *polygraphy_class,
                                                  what, depth == 0 ? "'ndarray' or 'LazyArray'" : "'ndarray'"));
    }

    // The base64 .npy string. Fast path: the header tells the string's length, so the payload is
    // decoded from the mapping without scanning it first, releasing consumed pages as it goes.
    Tensor read_npy_string(const std::string& what) {
        if (cursor_.peek() != json::Cursor::Type::kString)
            cursor_.fail(fmt::format("\"array\" of {} must be a base64 string but is {}", what,
                                     json::Cursor::type_name(cursor_.peek())));
        const char* start = cursor_.begin_raw_string();
        const char* end = cursor_.text().data() + cursor_.text().size();
        auto release = [&](std::size_t consumed) {
            if (file_) file_->release_before(start + consumed);
        };
        const auto length = npy::base64_length_hint(start, static_cast<std::size_t>(end - start));
        if (length && *length < static_cast<std::size_t>(end - start) && start[*length] == '"') {
            try {
                Tensor tensor = npy::load_base64(std::string_view(start, *length), release);
                cursor_.end_raw_string(start + *length);
                return tensor;
            } catch (const FormatError&) {
                // Fall through: parse the string exactly for a precise message.
            }
        }
        cursor_.seek(start - 1);
        const std::size_t offset = cursor_.offset();
        std::string unescaped;
        const std::string_view text = cursor_.read_string(unescaped);
        try {
            return npy::load_base64(text);
        } catch (const FormatError& error) {
            cursor_.fail_at(offset, fmt::format("{}: {} in the string", what, error.what()));
        }
    }

    std::optional<MappedFile> file_;
    json::Cursor cursor_;
    std::string scratch_;
};

// `where` names the map in messages: "iteration 0 of runner 'r'".
void write_array_map(json::Writer& writer, const TensorMap& map, bool lazy, const std::string& kind,
                     const std::string& where) {
    writer.begin_object();
    for (const auto& [name, tensor] : map) {
        writer.key(name);
        try {
            if (lazy) {
                writer.begin_object();
                writer.key("values");
                writer.ndarray(tensor);
                writer.key("polygraphy_class").value("LazyArray");
                writer.end_object();
            } else {
                writer.ndarray(tensor);
            }
        } catch (const UnsupportedError& error) {
            throw UnsupportedError(fmt::format("{} '{}' of {}: {}", kind, name, where, error.what()));
        }
    }
    writer.end_object();
}

}  // namespace

void RunResults::save(const std::string& path) const {
    logger().info(fmt::format("Saving inference results to {}", path));
    if (npz::is_npz_path(path)) return npz::save_results(*this, path);
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out);
        writer.begin_object().key("lst").begin_array();
        for (const auto& [runner_name, iterations] : lst) {
            writer.begin_array().value(runner_name).begin_array();
            for (std::size_t i = 0; i < iterations.size(); ++i) {
                const IterationResult& iteration = iterations[i];
                writer.begin_object().key("outputs");
                write_array_map(writer, iteration.outputs, true, "output",
                                fmt::format("iteration {} of runner '{}'", i, runner_name));
                writer.key("runtime");
                if (iteration.runtime) writer.value(*iteration.runtime);
                else writer.null();
                writer.key("runner_name").value(iteration.runner_name);
                writer.key("polygraphy_class").value("IterationResult");
                writer.end_object();
            }
            writer.end_array().end_array();
        }
        writer.end_array().key("polygraphy_class").value("RunResults").end_object();
        writer.finish();
    });
}

RunResults RunResults::load(const std::string& path) {
    logger().info(fmt::format("Loading inference results from {}", path));
    Reader reader(path);
    return reader.read_run_results();
}

void save_inputs(const InputList& inputs, const std::string& path) {
    save_inputs(inputs, path, "inference input data");
}

void save_inputs(const InputList& inputs, const std::string& path, const std::string& description) {
    logger().info(fmt::format("Saving {} to {}", description, path));
    if (npz::is_npz_path(path)) return npz::save_inputs(inputs, path);
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out);
        writer.begin_array();
        for (std::size_t i = 0; i < inputs.size(); ++i)
            write_array_map(writer, inputs[i], false, "input", fmt::format("iteration {}", i));
        writer.end_array();
        writer.finish();
    });
}

InputList load_inputs(const std::string& path) {
    logger().info(fmt::format("Loading input data from {}", path));
    Reader reader(path);
    return reader.read_inputs();
}

namespace {
std::variant<RunResults, InputList> read_run_results_or_inputs(Reader& reader) {
    if (reader.cursor().peek() == json::Cursor::Type::kArray) return reader.read_inputs();
    return reader.read_run_results();
}
}  // namespace

std::variant<RunResults, InputList> load_run_results_or_inputs(const std::string& path) {
    Reader reader(path);
    return read_run_results_or_inputs(reader);
}

std::variant<RunResults, InputList> parse_run_results_or_inputs(std::string_view text, const std::string& source) {
    Reader reader(text, source);
    return read_run_results_or_inputs(reader);
}

}  // namespace polygraphy
