#include "tools/args/logger/logger.h"

#include <filesystem>
#include <fstream>

#include "common/log_format.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/job/runner_processes.h"
#include "tools/args/util.h"

namespace polygraphy::tools {

std::vector<OptionSpec> LoggerArgs::options() const {
    return {
        Option({"-v", "--verbose"})
            .kind(OptionKind::kCount)
            .help("Increase logging verbosity. Specify multiple times for higher verbosity"),
        Option({"-q", "--quiet"})
            .kind(OptionKind::kCount)
            .help("Decrease logging verbosity. Specify multiple times for lower verbosity"),
        Option({"--verbosity"})
            .kind(OptionKind::kValues)
            .help("The logging verbosity to use. Takes precedence over the `-v` and `-q` options, and unlike them, "
                  "allows you to control per-path verbosity. Verbosity values come from Polygraphy's logging "
                  "verbosities and are case-insensitive: ULTRA_VERBOSE, SUPER_VERBOSE, EXTRA_VERBOSE, VERBOSE, INFO, "
                  "START, FINISH, WARNING, ERROR, CRITICAL. For example: `--verbosity INFO` or `--verbosity verbose`. "
                  "To specify per-path verbosity, use the format: `<path>:<verbosity>`. For example: `--verbosity "
                  "backend/onnxrt:INFO backend/onnxrt/session.cpp:VERBOSE`. Paths are relative to the library's "
                  "`src/` folder (the paths `--log-format line-info` prints) and name whole path components; a file "
                  "name matches whatever its extension. The most closely matching path is used to determine "
                  "verbosity. For example, with: `--verbosity warning backend:info backend/onnxrt:verbose`, a file "
                  "under `comparator` would use `WARNING` verbosity, one under `backend/onnx` would use `INFO`, and "
                  "one under `backend/onnxrt` would use `VERBOSE`"),
        Option({"--silent"}).kind(OptionKind::kFlag).help("Disable all output"),
        Option({"--log-format"})
            .kind(OptionKind::kValues)
            .help("Format for log messages: {'timestamp': Include timestamp, 'line-info': Include file and line "
                  "number, 'no-colors': Disable colors}")
            .choices({"timestamp", "line-info", "no-colors"}),
        Option({"--log-file"})
            .help("Path to a file where Polygraphy logging output should be written. This may not include logging "
                  "output from dependencies"),
    };
}

std::optional<Severity> LoggerArgs::severity_from_level(int level) {
    if (level >= 4) return Severity::kUltraVerbose;
    if (level < -4) return Severity::kCritical;
    switch (level) {
        case 3:
            return Severity::kSuperVerbose;
        case 2:
            return Severity::kExtraVerbose;
        case 1:
            return Severity::kVerbose;
        case -1:
            return Severity::kStart;
        case -2:
            return Severity::kFinish;
        case -3:
            return Severity::kWarning;
        case -4:
            return Severity::kError;
        default:
            return std::nullopt;
    }
}

void LoggerArgs::parse(const ParsedArgs& args) {
    std::optional<Severity> severity;
    std::vector<std::pair<std::string, Severity>> path_severities;
    for (const auto& entry : args.values("verbosity")) {
        const auto kv = args_util::split_key_value(entry);
        Severity parsed;
        if (!severity_from_name(kv.value, parsed))
            throw UsageError("Invalid value in --verbosity: " + python_repr(entry) +
                             ".\nNote: Valid verbosities are: ULTRA_VERBOSE, SUPER_VERBOSE, EXTRA_VERBOSE, VERBOSE, "
                             "INFO, START, FINISH, WARNING, ERROR, CRITICAL (case-insensitive)");
        if (kv.key.empty())
            severity = parsed;
        else
            path_severities.emplace_back(kv.key, parsed);
    }
    // Polygraphy's code lets -v/-q set the default verbosity even when --verbosity gives one.
    if (auto from_counts = severity_from_level(args.count("verbose") - args.count("quiet"))) severity = from_counts;
    severity_ = severity.value_or(Severity::kInfo);
    if (args.flag("silent")) severity_ = Severity::kCritical;

    Logger& log = logger();
    log.set_severity(severity_);
    // --silent silences every path too (Polygraphy replaces the whole per-path table).
    log.set_path_severities(args.flag("silent") ? decltype(path_severities){} : path_severities);
    bool timestamps = false, line_info = false;
    for (const auto& format : args.values("log_format")) {
        if (format == "no-colors") log.set_colors(false);
        timestamps = timestamps || format == "timestamp";
        line_info = line_info || format == "line-info";
    }
    set_log_timestamps(timestamps);
    set_log_line_info(line_info);
    log_file_ = args.value("log_file");
    if (log_file_) {
        // Polygraphy starts the log file afresh (mode "w"); the logger itself appends. A runner
        // process (--use-subprocess) appends to its parent's file.
        std::error_code error;
        const auto parent = std::filesystem::path(*log_file_).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent, error);
        if (!is_runner_process()) {
            std::ofstream truncate(*log_file_, std::ios::trunc);
        }
        log.set_log_file(*log_file_);
    }
}

bool LoggerArgs::add_to_job(RunJob& job) const {
    job.logging = LoggingJob{severity_, log_file_};
    return true;
}

}  // namespace polygraphy::tools
