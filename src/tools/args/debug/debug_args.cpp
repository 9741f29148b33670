#include "tools/args/debug/debug_args.h"

#include <chrono>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <typeindex>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"
#include "tools/args/util.h"

namespace fs = std::filesystem;

namespace polygraphy::tools {
namespace {

std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
    return out;
}

std::optional<std::vector<int64_t>> int_values(const ParsedArgs& args, const std::string& dest, const std::string& flag) {
    if (!args.has(dest)) return std::nullopt;
    std::vector<int64_t> values;
    for (const auto& text : args.values(dest)) {
        const auto value = args_util::parse_int(text);
        if (!value) throw UsageError("Invalid value for " + flag + ": " + python_repr(text) + " is not an integer");
        values.push_back(*value);
    }
    return values;
}

bool contains(const std::optional<std::vector<int64_t>>& codes, int code) {
    if (!codes) return false;
    for (const auto value : *codes)
        if (value == code) return true;
    return false;
}

// Python's re.search over the whole output, where '.' stops at line ends: lines are searched one at
// a time (libstdc++'s regex recurses per character, so a long output searched at once could
// exhaust the stack), then, for patterns spanning lines, the whole text when it is small.
bool regex_found(const std::regex& regex, const std::string& text) {
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(start),
                              text.begin() + static_cast<std::ptrdiff_t>(end), regex))
            return true;
        start = end + 1;
    }
    constexpr std::size_t kWholeTextLimit = 64 * 1024;
    return text.size() <= kWholeTextLimit && text.find('\n') != std::string::npos && std::regex_search(text, regex);
}

// strftime("%x") / ("%X") with '/' and ':' replaced, as Polygraphy names sorted artifacts.
std::string now_formatted(const char* format, char from, char to) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[64] = {};
    std::strftime(text, sizeof(text), format, &local);
    std::string out = text;
    for (auto& c : out)
        if (c == from) c = to;
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CheckCmdArgs

std::vector<OptionSpec> CheckCmdArgs::options() const {
    return {
        Option({"--check", "--check-inference"})
            .dest("check")
            .kind(OptionKind::kRemainder)
            .help("A command to check the model. When this is omitted, an interactive debugging session is started "
                  "instead. By default an exit status of 0 is treated as a 'pass' whereas any other exit status is "
                  "treated as a 'fail'."),
        Option({"--fail-code", "--fail-returncode"})
            .dest("fail_codes")
            .kind(OptionKind::kValues)
            .type(ValueType::kInt)
            .exclusive_group("fail_codes")
            .help("The return code(s) from the --check command to count as failures. If this is provided, any other "
                  "return code will be counted as a success. A command killed by signal N has return code -N."),
        Option({"--ignore-fail-code", "--ignore-fail-returncode"})
            .dest("ignore_fail_codes")
            .kind(OptionKind::kValues)
            .type(ValueType::kInt)
            .exclusive_group("fail_codes")
            .help("The return code(s) from the --check command to ignore as failures."),
        Option({"--fail-regex"})
            .dest("fail_regex")
            .kind(OptionKind::kValues)
            .help("Regular expression denoting an error in the check command's output. The command is only considered "
                  "a failure if a matching string is found in the command's output. This can be useful to distinguish "
                  "among multiple types of failures. Can be specified multiple times to match different regular "
                  "expressions, in which case any match counts as a failure. When combined with --fail-code, only "
                  "iterations whose return code is considered a failure are checked for regular expressions."),
        Option({"--show-output"})
            .kind(OptionKind::kFlag)
            .exclusive_group("output_show")
            .help("Show output from the --check command even for passing iterations. By default, output from passing "
                  "iterations is captured."),
        Option({"--hide-fail-output"})
            .kind(OptionKind::kFlag)
            .exclusive_group("output_show")
            .help("Suppress output from the --check command for failing iterations. By default, output from failing "
                  "iterations is displayed."),
        Option({"--check-timeout"})
            .dest("check_timeout")
            .metavar("SECONDS")
            .type(ValueType::kFloat)
            .help("Time limit for each run of the --check command. A command that runs longer is killed (with every "
                  "process it started) and the iteration counts as a failure. Default: no limit."),
    };
}

void CheckCmdArgs::parse(const ParsedArgs& args) {
    check_.reset();
    if (args.has("check")) {
        check_ = args.values("check");
        if (check_->empty())
            throw UsageError("--check was given without a command.\nNote: Everything after --check is the command, "
                             "e.g. --check polygraphy run polygraphy_debug.onnx --ref");
    } else if (interactive_without_check_) {
        logger().start("Starting interactive debugging session since no `--check` command was provided");
    }
    fail_codes_ = int_values(args, "fail_codes", "--fail-code");
    ignore_fail_codes_ = int_values(args, "ignore_fail_codes", "--ignore-fail-code");
    fail_regexes_.clear();
    has_fail_regex_ = args.has("fail_regex");
    for (const auto& pattern : args.values("fail_regex")) {
        try {
            fail_regexes_.emplace_back(pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& error) {
            throw UsageError("Invalid regular expression for --fail-regex: " + python_repr(pattern) + " (" +
                             error.what() + ")");
        }
    }
    show_output_ = args.flag("show_output");
    hide_fail_output_ = args.flag("hide_fail_output");
    timeout_.reset();
    if (const auto text = args.value("check_timeout")) {
        const auto seconds = args_util::parse_float(*text);
        if (!seconds || !(*seconds > 0.0) || !std::isfinite(*seconds))
            throw UsageError("Invalid value for --check-timeout: " + python_repr(*text) +
                             "\nNote: It must be a positive number of seconds");
        timeout_ = *seconds;
    }
}

bool CheckCmdArgs::is_success(const ProcessResult& result) const {
    if (result.timed_out) return false;
    if (contains(ignore_fail_codes_, result.returncode)) return true;

    std::optional<bool> has_fail_regex;
    if (has_fail_regex_) {
        bool found = false;
        for (const auto& regex : fail_regexes_)
            if (regex_found(regex, result.stdout_text) || regex_found(regex, result.stderr_text)) found = true;
        has_fail_regex = found;
    }
    bool failed;
    if (fail_codes_) {
        failed = contains(fail_codes_, result.returncode);
        if (has_fail_regex) failed = failed && *has_fail_regex;
    } else {
        failed = has_fail_regex ? *has_fail_regex : result.returncode != 0;
    }
    return !failed;
}

bool CheckCmdArgs::run_check(const std::optional<std::string>& iter_artifact_path) const {
    if (!check_) {
        const std::string what = iter_artifact_path ? "'" + *iter_artifact_path + "'" : "this iteration";
        std::string prompt = ">>> Did " + what + " [p]ass or [f]ail? ";
        for (;;) {
            std::cout << prompt << std::flush;
            std::string line;
            if (!std::getline(std::cin, line))
                throw UsageError("No --check command was given and standard input ended before a verdict was entered.\n"
                                 "Note: Give a --check command to debug non-interactively");
            const auto first = line.find_first_not_of(" \t");
            const char answer = first == std::string::npos ? '\0' : static_cast<char>(std::tolower(line[first]));
            if (answer == 'p' || answer == 'f') return answer == 'p';
            prompt = ">>> Please choose either: 'p' or 'f': ";
        }
    }

    logger().info("Running check command: " + join(*check_, " "));
    const ProcessResult result = run_process(*check_, timeout_);
    const bool success = is_success(result);
    if (result.timed_out)
        logger().error("Check command " + result.describe() + "; it was killed and counts as a failure");
    else if (result.killed_by_signal())
        logger().error("Check command was " + result.describe());
    if (show_output_ || (!success && !hide_fail_output_)) {
        logger().info("========== CAPTURED STDOUT ==========\n" + result.stdout_text);
        logger().log(success ? Severity::kWarning : Severity::kError,
                     "========== CAPTURED STDERR ==========\n" + result.stderr_text);
        if (result.truncated) logger().warning("The check command's output was cut: it was too long to keep");
    }
    return success;
}

// ---------------------------------------------------------------------------------------------
// ArtifactSortArgs

std::vector<OptionSpec> ArtifactSortArgs::options() const {
    return {
        Option({"--artifacts"})
            .kind(OptionKind::kValues)
            .help("Path(s) of artifacts to sort. These will be moved into 'good' and 'bad' directories based on the "
                  "exit status of the `--check` command and suffixed with an iteration number, timestamp and return "
                  "code."),
        Option({"--art-dir", "--artifacts-dir"})
            .dest("artifacts_dir")
            .metavar("DIR")
            .help("The directory in which to move artifacts and sort them into 'good' and 'bad'. Defaults to "
                  "'polygraphy_artifacts'."),
    };
}

void ArtifactSortArgs::parse(const ParsedArgs& args) {
    artifacts_ = args.values("artifacts");
    if (artifacts_.empty() && warn_without_artifacts_)
        logger().warning("`--artifacts` was not specified; No artifacts will be stored during this run! "
                         "Is this what you intended?");
    output_dir_ = args.value("artifacts_dir").value_or("polygraphy_artifacts");
    if (output_dir_.empty()) throw UsageError("--art-dir must not be empty");
    start_date_ = now_formatted("%x", '/', '-');
    start_time_ = now_formatted("%X", ':', '-');
}

void ArtifactSortArgs::sort_artifacts(bool success, const std::string& suffix) const {
    const fs::path subdir = fs::path(output_dir_) / (success ? "good" : "bad");
    for (const auto& artifact : artifacts_) {
        const fs::path source(artifact);
        // A trailing '/' would leave the name empty.
        const fs::path base = source.has_filename() ? source : source.parent_path();
        const std::string name =
            base.stem().string() + "_" + start_date_ + "_" + start_time_ + suffix + base.extension().string();
        const fs::path dest = subdir / name;

        std::error_code error;
        if (!fs::exists(fs::symlink_status(source, error))) {
            logger().error("Artifact: " + artifact + " does not exist, skipping.\n"
                           "Was the artifact supposed to be generated?");
            continue;
        }
        if (fs::exists(fs::symlink_status(dest, error))) {
            logger().error("Destination path: " + dest.string() +
                           " already exists.\nRefusing to overwrite. This artifact will be skipped!");
            continue;
        }
        logger().info("Moving " + artifact + " to " + dest.string());
        fs::create_directories(subdir, error);
        if (error)
            throw PolygraphyException("Could not create the artifacts folder " + subdir.string() + ": " + error.message());
        fs::rename(source, dest, error);
        if (error == std::errc::cross_device_link) {
            // Another file system: copy, then remove the original.
            error.clear();
            fs::copy(source, dest, fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
            if (!error) fs::remove_all(source, error);
        }
        if (error)
            throw PolygraphyException("Could not move artifact " + artifact + " to " + dest.string() + ": " +
                                      error.message());
    }
}

// ---------------------------------------------------------------------------------------------
// IterativeDebugArgs

std::vector<std::type_index> IterativeDebugArgs::depends_on() const {
    return {typeid(CheckCmdArgs), typeid(ArtifactSortArgs)};
}

std::vector<OptionSpec> IterativeDebugArgs::options() const {
    std::vector<OptionSpec> options;
    if (config_.iter_artifact_default) {
        options.push_back(Option({"--iter-artifact", "--intermediate-artifact"})
                              .dest("iter_artifact_path")
                              .help("Path to store the intermediate artifact from each iteration. Defaults to: " +
                                    *config_.iter_artifact_default));
        options.push_back(Option({"--no-remove-intermediate"})
                              .dest("no_remove_intermediate")
                              .kind(OptionKind::kFlag)
                              .help("Do not remove the intermediate artifact between iterations. Subsequent "
                                    "iterations may still overwrite the artifact from previous iterations. This "
                                    "allows you to exit the tool early and still have access to the most recent "
                                    "intermediate artifact."));
    }
    options.push_back(Option({"--iter-info", "--iteration-info"})
                          .dest("iteration_info_path")
                          .help("Path to write a JSON file containing information about the current iteration. This "
                                "will include an 'iteration' key whose value is the current iteration number."));
    options.push_back(Option({"--load-debug-replay"})
                          .dest("load_debug_replay")
                          .help("Path from which to load a debug replay. A replay file includes information on the "
                                "results of some or all iterations, allowing you to skip those iterations."));
    options.push_back(Option({"--save-debug-replay"})
                          .dest("save_debug_replay")
                          .help("Path at which to save a debug replay, which includes information on the results of "
                                "debugging iterations. The replay can be used with `--load-debug-replay` to skip "
                                "iterations during subsequent debugging sessions. The replay is saved after the first "
                                "iteration and overwritten with an updated replay during each iteration thereafter. "
                                "This will also write a second replay file with a suffix of `_skip_current`, which is "
                                "written before the iteration completes, and treats it as a failure. Not saved by "
                                "default."));
    if (config_.allow_until)
        options.push_back(Option({"--until"})
                              .required()
                              .help("Controls when to stop running. Choices are: ['good', 'bad', int]. 'good' will "
                                    "keep running until the first 'good' run. 'bad' will run until the first 'bad' "
                                    "run. An integer can be specified to run a set number of iterations."));
    return options;
}

void IterativeDebugArgs::parse(const ParsedArgs& args) {
    iter_artifact_path_.reset();
    if (config_.iter_artifact_default) {
        iter_artifact_path_ = args.value("iter_artifact_path").value_or(*config_.iter_artifact_default);
        if (iter_artifact_path_->empty()) throw UsageError("--iter-artifact must not be empty");
        std::error_code error;
        if (fs::exists(fs::symlink_status(*iter_artifact_path_, error)))
            throw UsageError(*iter_artifact_path_ +
                             " already exists, refusing to overwrite.\nPlease remove the file manually or specify a "
                             "different path with `--intermediate-artifact`.");
    }
    remove_intermediate_ = !args.flag("no_remove_intermediate");
    iteration_info_path_ = args.value("iteration_info_path");

    save_replay_path_ = args.value("save_debug_replay");
    if (save_replay_path_ && save_replay_path_->empty()) throw UsageError("--save-debug-replay must not be empty");
    loaded_replay_ = {};
    replay_ = {};
    if (const auto path = args.value("load_debug_replay")) {
        const std::string text = read_file(*path);
        json::Cursor cursor(text, *path);
        std::string scratch;
        cursor.begin_object();
        while (const auto key = cursor.next_key(scratch)) {
            const std::string name(*key);
            std::optional<bool> success;
            if (cursor.peek() == json::Cursor::Type::kArray) {
                cursor.begin_array();
                if (cursor.next_element()) {
                    success = cursor.read_bool();
                    while (cursor.next_element()) cursor.skip_value();
                }
            } else {
                cursor.begin_object();
                std::string inner_scratch;
                while (const auto field = cursor.next_key(inner_scratch)) {
                    if (*field == "success")
                        success = cursor.read_bool();
                    else
                        cursor.skip_value();
                }
            }
            if (!success) cursor.fail("debug replay entry '" + name + "' has no verdict (\"success\")");
            loaded_replay_.set(name, *success);
        }
        cursor.expect_end();
        logger().info("Loaded debug replay from " + *path + " (" + std::to_string(loaded_replay_.size()) +
                      " iteration(s))");
    }

    until_mode_.reset();
    if (const auto until = args.value("until")) {
        if (*until == "good" || *until == "bad") {
            until_mode_ = *until;
        } else {
            const auto count = args_util::parse_int(*until);
            if (!count || *count < 1)
                throw UsageError("--until value must be a positive integer, 'good', or 'bad', but was: " + *until);
            until_mode_ = "count";
            until_count_ = static_cast<std::size_t>(*count);
        }
    }
}

void IterativeDebugArgs::save_replay(const std::string& path) const {
    std::string text;
    {
        json::Writer writer(&text);
        writer.begin_object();
        for (const auto& [key, success] : replay_) {
            // The iteration number is the digits after "_N".
            std::size_t end = 2;
            while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
            writer.key(key).begin_object().key("success").value(success);
            if (end > 2) {
                const auto iteration = static_cast<int64_t>(std::stoll(key.substr(2, end - 2)));
                writer.key("iteration_info").begin_object().key("iteration").value(iteration).end_object();
            }
            writer.end_object();
        }
        writer.end_object();
        writer.finish();
    }
    write_file_atomically(path, text + "\n");
}

IterativeDebugArgs::Summary IterativeDebugArgs::iterate(const Callbacks& callbacks) {
    const auto& checker = required_group<CheckCmdArgs>();
    const auto& sorter = required_group<ArtifactSortArgs>();
    auto try_remove = [](const std::optional<std::string>& path) {
        if (!path) return;
        std::error_code error;
        // A model over the size limit was saved with its weights in "<artifact>.data" (save_onnx).
        for (const std::string& file : {*path, *path + ".data"})
            if (fs::exists(fs::symlink_status(file, error)) && !fs::remove(file, error))
                logger().warning("Could not clean up: " + file);
    };

    // Far more than any real session needs; a guard against a callback that never stops.
    constexpr std::size_t kMaxCount = 100000;
    Summary summary;
    std::size_t index = 0;
    for (; index < kMaxCount; ++index) {
        const auto indent = logger().indent();
        std::string running = "RUNNING | Iteration " + std::to_string(index + 1);
        if (callbacks.remaining)
            if (const auto remaining = callbacks.remaining())
                running += " | Approximately " + std::to_string(*remaining) + " iteration(s) remaining";
        logger().start(running);
        const auto start_time = std::chrono::steady_clock::now();

        // The per-iteration files go away at the end of the iteration, also when it throws.
        struct Cleanup {
            std::function<void()> action;
            ~Cleanup() { action(); }
        } cleanup{[&] {
            if (remove_intermediate_) try_remove(iter_artifact_path_);
            try_remove(iteration_info_path_);
        }};

        const std::string key = "_N" + std::to_string(index) + callbacks.suffix;
        bool success;
        if (const bool* recorded = loaded_replay_.find(key)) {
            success = *recorded;
            logger().info(std::string("Loading iteration information from debug replay: success=") +
                          (success ? "True" : "False"));
        } else {
            if (callbacks.make_artifact && callbacks.make_artifact(index) == Step::kStop) break;
            if (iteration_info_path_)
                write_file_atomically(*iteration_info_path_, "{\n    \"iteration\": " + std::to_string(index) + "\n}");
            // Saved first with the iteration failed: if the check takes the machine down, loading
            // this file skips past it.
            if (save_replay_path_) {
                replay_.set(key, false);
                const fs::path path(*save_replay_path_);
                save_replay((path.parent_path() / (path.stem().string() + "_skip_current" + path.extension().string())).string());
            }
            success = checker.run_check(iter_artifact_path_);
            sorter.sort_artifacts(success, key);
        }
        replay_.set(key, success);
        if (save_replay_path_) {
            save_replay(*save_replay_path_);
            logger().info("Saving debug replay to " + *save_replay_path_);
        }

        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
        summary.iterations = index + 1;
        if (success) {
            ++summary.passed;
            logger().finish("PASSED | Iteration " + std::to_string(index + 1) + " | Duration " + python_float_repr(seconds) + "s");
        } else {
            logger().error("FAILED | Iteration " + std::to_string(index + 1) + " | Duration " + python_float_repr(seconds) + "s");
        }

        bool keep_going;
        if (until_mode_) {
            if (*until_mode_ == "good")
                keep_going = !success;
            else if (*until_mode_ == "bad")
                keep_going = success;
            else
                keep_going = index + 1 < until_count_;
        } else {
            keep_going = callbacks.advance ? callbacks.advance(index, success) : false;
        }
        if (!keep_going) break;
    }
    if (index == kMaxCount)
        logger().warning("Maximum number of iterations reached: " + std::to_string(kMaxCount) +
                         ".\nIteration has been halted to prevent an infinite loop!");

    const double rate = summary.iterations ? 100.0 * static_cast<double>(summary.passed) / static_cast<double>(summary.iterations) : 0.0;
    logger().finish("Finished " + std::to_string(summary.iterations) + " iteration(s) | Passed: " +
                    std::to_string(summary.passed) + "/" + std::to_string(summary.iterations) +
                    " | Pass Rate: " + python_float_repr(rate) + "%");
    return summary;
}

}  // namespace polygraphy::tools
