// Script: a C++ program using the public API, and job_program(), which prints a RunJob as one
// (`polygraphy run --gen-script`; Polygraphy's tools/script.py, for C++).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace polygraphy {

struct RunJob;
struct ModelJob;

/// A self-contained C++ program using the public API, written piece by piece. The program's shape is
/// fixed:
///
///     #include ...                              (add_include)
///     int main() {
///         try {
///             <prefix statements>                (append_prefix: logging set-up)
///             auto load_onnx = OnnxFromPath(..); (add_loader, append_loader_statement)
///             std::vector<std::unique_ptr<BaseRunner>> runners;
///             runners.push_back(...);            (add_runner)
///             DataLoaderFn data_loader = ...;    (set_data_loader; DataLoader() when not set)
///             bool success = true;
///             <suffix statements>                (append_suffix: run, save, compare; may clear `success`)
///             return success ? 0 : 1;
///         } catch (const PolygraphyException& error) { <[!] message>; return 1; }
///     }
///
/// Statements may use `runners`, `data_loader` and `success`, and `using namespace polygraphy` is in effect.
class Script {
public:
    /// Adds `#include "<header>"` once, e.g. "polygraphy/backend/ref/runner.h".
    void add_include(const std::string& header);
    /// Adds `auto <name> = <expression>;` among the loaders and returns the variable's name: `base_name`,
    /// or `base_name_1`, ... when taken. An expression added before returns its existing variable, so
    /// runners sharing a loader chain share one variable.
    std::string add_loader(const std::string& expression, const std::string& base_name);
    /// Adds a statement (one line, without indentation) among the loaders, after those added so far.
    void append_loader_statement(const std::string& code);
    /// Adds a statement (one or more lines, without indentation) before the loaders.
    void append_prefix(const std::string& code);
    /// Adds `runners.push_back(<expression>);`; `expression` yields a std::unique_ptr to a BaseRunner.
    void add_runner(const std::string& expression);
    /// Number of runners added so far.
    std::size_t runner_count() const { return runners_.size(); }
    /// Sets the data loader: `setup` statements (may be empty) then `DataLoaderFn data_loader = <expression>;`.
    void set_data_loader(const std::string& setup, const std::string& expression);
    /// Adds a statement (one or more lines) after the runners and the data loader.
    void append_suffix(const std::string& code);
    /// A program that runs no inference (`template onnx-gs`): no runners and no data loader are
    /// written, and the loaders are not described as lazy.
    void set_without_inference() { without_inference_ = true; }

    /// The whole program. `header_comment` lines are written first as `//` comments.
    std::string to_string(const std::vector<std::string>& header_comment = {}) const;

    /// A C++ string literal of `text` ("a\"b\n"), safe for any bytes.
    static std::string quote(std::string_view text);
    /// A C++ literal reading back as exactly `value` (`1e-05`, `0.5`, `std::numeric_limits<double>::infinity()`).
    static std::string number(double value);
    /// A C++ literal of `value`; INT64_MIN, which has no literal of its own, as std::numeric_limits.
    static std::string integer(int64_t value);
    /// `std::vector<std::string>{"a", "b"}`.
    static std::string string_vector(const std::vector<std::string>& items);

private:
    bool without_inference_ = false;
    struct Loader {
        std::string name;        // empty for a statement
        std::string expression;  // or the statement
    };
    std::vector<std::string> includes_;
    std::vector<std::string> prefix_;
    std::vector<Loader> loaders_;
    std::vector<std::string> runners_;
    std::string data_loader_setup_;
    std::string data_loader_;
    std::vector<std::string> suffix_;
};

/// `job` as a program that does what run_job(job) does, step for step, through the public API, and
/// exits with 0 exactly when run_job() would report `passed`. `header_comment` lines open the file.
/// Throws UnsupportedError when a runner is a CustomRunnerStep without a `print` function.
std::string job_program(const RunJob& job, const std::vector<std::string>& header_comment = {});

/// `template onnx-gs`: a program that loads the model as `model`'s loader chain does (ModelJob: its
/// file and steps), leaves a place to edit its graph with the project's graph API (backend/onnx/graph.h),
/// and saves it to `output_model_path`.
std::string onnx_edit_program(const ModelJob& model, const std::string& output_model_path,
                              const std::vector<std::string>& header_comment = {});

/// The same as a Python script over the bindings (`template onnx-gs -o edit.py`): the loader chain
/// as polygraphy.backend.onnx loaders, the graph edited through ModelProto's methods and Node views.
/// UnsupportedError for a step the bindings cannot express (shape inference).
std::string onnx_edit_python_script(const ModelJob& model, const std::string& output_model_path,
                                    const std::vector<std::string>& header_comment = {});

}  // namespace polygraphy
