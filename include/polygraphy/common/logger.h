// Polygraphy-style logging: `[V] [I] [W] [E] [!]` prefixes on stdout, nested indentation.
#pragma once

#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polygraphy {

/// Severities, least severe first, with Polygraphy's numeric values.
enum class Severity : int {
    kUltraVerbose = -20,  ///< [U]
    kSuperVerbose = -10,  ///< [S]
    kExtraVerbose = 0,    ///< [X]
    kVerbose = 10,        ///< [V]
    kInfo = 20,           ///< [I]
    kStart = 22,          ///< [I] start of a tool ("RUNNING | ...")
    kFinish = 28,         ///< [I] end of a tool ("PASSED | ...")
    kWarning = 30,        ///< [W]
    kError = 40,          ///< [E]
    kCritical = 50,       ///< [!]
    kSilent = 100,        ///< nothing is printed
};

/// Parses "VERBOSE", "info", "extra_verbose", "warning"... (case-insensitive).
bool severity_from_name(std::string_view name, Severity& out);

/// The path a source file is known by in per-path severities and `line-info` prefixes, as
/// Polygraphy names its files relative to its package folder: the part of `file` (a compiler's file
/// name) after its last `src/` or `include/polygraphy/` folder, e.g. "backend/onnx/loader.cpp";
/// `file` itself when it has neither.
std::string logging_source_path(std::string_view file);

/// The process-wide logger (Polygraphy's G_LOGGER). Thread-safe.
///
/// Messages go to stdout (Polygraphy prints nothing on stderr), prefixed with the severity letter;
/// every line after the first is indented to line up with the first line's text. indent() adds
/// four spaces after the prefix for everything logged while the returned guard lives.
/// Colours are used only when stdout is a terminal. The library logs only through this object,
/// which is silent until enabled: API users call set_severity(Severity::kInfo) (or any level) to see
/// what the library does; the `polygraphy` tools start at INFO, as Polygraphy does.
class Logger {
public:
    /// The process-wide instance.
    static Logger& global();

    /// Messages below `severity` are dropped (Severity::kSilent drops everything), except in files a
    /// per-path severity names.
    void set_severity(Severity severity);
    /// The default threshold (the one of files no per-path severity names).
    Severity severity() const;
    /// Per-path thresholds, as Polygraphy's `--verbosity path:LEVEL`: a message logged from a file
    /// under `path` (whole components of its logging_source_path(), e.g. "backend/onnx" or
    /// "backend/onnx/loader.cpp") uses that threshold; the longest matching path wins, and the last
    /// of equally long ones. The last component also names a file whatever its extension, so
    /// Polygraphy's "backend/onnx/loader.py" names "backend/onnx/loader.cpp". Replaces earlier ones.
    void set_path_severities(const std::vector<std::pair<std::string, Severity>>& severities);
    /// Whether a message of `severity` may be printed from some file (to skip building costly
    /// messages): checks the lowest of the default and per-path thresholds.
    bool enabled(Severity severity) const { return static_cast<int>(severity) >= static_cast<int>(severity_); }

    /// Also append every message (without colours) to `path`; parent folders are created.
    /// Throws PolygraphyException when the file cannot be opened.
    void set_log_file(const std::string& path);
    /// Colours on or off (default: on when stdout is a terminal).
    void set_colors(bool enabled);

    /// The caller's source location (the default argument of the logging functions below). Not
    /// std::source_location: clang 14 (the fuzz build, plugin authors) has no such type with
    /// libstdc++ 12, while both compilers expand these builtins at the call site.
    class Where {
    public:
        /// The location of the expression that calls current(), or that uses it as a default argument.
        static constexpr Where current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) noexcept {
            return Where(file, line);
        }
        /// The source file, as the compiler names it.
        constexpr const char* file_name() const noexcept { return file_; }
        /// The line in file_name().
        constexpr unsigned line() const noexcept { return line_; }

    private:
        constexpr Where(const char* file, unsigned line) noexcept : file_(file), line_(line) {}
        const char* file_;
        unsigned line_;
    };

    /// Prints `message` with the prefix of `severity` when the threshold of the file `where` names
    /// lets it through.
    void log(Severity severity, std::string_view message, const Where& where = Where::current());
    /// Logs a message only the first time this exact text is seen.
    void log_once(Severity severity, std::string_view message, const Where& where = Where::current());

    /// log() at the severity the name says, from the caller's source location.
    /// @{
    void ultra_verbose(std::string_view m, const Where& w = Where::current()) { log(Severity::kUltraVerbose, m, w); }
    void super_verbose(std::string_view m, const Where& w = Where::current()) { log(Severity::kSuperVerbose, m, w); }
    void extra_verbose(std::string_view m, const Where& w = Where::current()) { log(Severity::kExtraVerbose, m, w); }
    void verbose(std::string_view m, const Where& w = Where::current()) { log(Severity::kVerbose, m, w); }
    void info(std::string_view m, const Where& w = Where::current()) { log(Severity::kInfo, m, w); }
    void start(std::string_view m, const Where& w = Where::current()) { log(Severity::kStart, m, w); }
    void finish(std::string_view m, const Where& w = Where::current()) { log(Severity::kFinish, m, w); }
    void warning(std::string_view m, const Where& w = Where::current()) { log(Severity::kWarning, m, w); }
    void error(std::string_view m, const Where& w = Where::current()) { log(Severity::kError, m, w); }
    /// @}
    /// Prints `[!] message` (tools use it for exceptions; library code throws instead).
    void critical(std::string_view m, const Where& w = Where::current()) { log(Severity::kCritical, m, w); }

    /// Undoes an indent() when destroyed (movable, not copyable).
    class IndentGuard {
    public:
        /// Indents `logger` by `spaces` more (called by indent()).
        explicit IndentGuard(Logger& logger, int spaces) : logger_(&logger), spaces_(spaces) {}
        /// Takes over `other`'s indentation.
        IndentGuard(IndentGuard&& other) noexcept : logger_(other.logger_), spaces_(other.spaces_) {
            other.logger_ = nullptr;
        }
        IndentGuard(const IndentGuard&) = delete;
        IndentGuard& operator=(const IndentGuard&) = delete;
        ~IndentGuard();

    private:
        Logger* logger_;
        int spaces_;
    };
    /// Indents everything logged until the guard is destroyed.
    [[nodiscard]] IndentGuard indent(int levels = 1);

    /// A status line for long runs ("slice 3 of 12 | 250 layers compared"), shown only when stdout
    /// is a terminal and INFO is enabled: it stays below the messages logged after it until it is
    /// replaced or cleared. Never written to a log file or to a pipe, so logs stay quiet.
    void progress(std::string_view status);
    /// Removes the status line of progress(), if one is shown.
    void clear_progress();

    /// Restores defaults (severity INFO, no per-path severities, plain format, no indentation, no log
    /// file, no once-cache). For tests.
    void reset();

private:
    Logger();
    // Whether a message of `severity` from `where` passes the threshold of its file.
    bool passes_locked(Severity severity, const Where& where) const;
    void write_locked(Severity severity, std::string_view message, const Where& where);
    void erase_progress_locked();

    mutable std::mutex mutex_;
    Severity severity_ = Severity::kInfo;          // the lowest threshold of all (enabled() reads it)
    Severity default_severity_ = Severity::kInfo;  // set_severity()
    // set_path_severities(), each path split into its components.
    std::vector<std::pair<std::vector<std::string>, Severity>> path_severities_;
    int indent_ = 0;
    bool colors_ = false;
    bool terminal_ = false;  // stdout is a terminal: progress() may show a status line
    std::string progress_;   // the status line shown, "" when none
    std::unique_ptr<std::ofstream> log_file_;
    std::set<std::string> seen_once_;
};

/// Shorthand for Logger::global(), like Polygraphy's G_LOGGER.
inline Logger& logger() {
    return Logger::global();
}

}  // namespace polygraphy
