// Polygraphy-style logging: `[V] [I] [W] [E] [!]` prefixes on stdout, nested indentation.
#pragma once

#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

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

    /// Messages below `severity` are dropped (Severity::kSilent drops everything).
    void set_severity(Severity severity);
    /// The current threshold.
    Severity severity() const;
    /// Whether a message of `severity` would be printed (to skip building costly messages).
    bool enabled(Severity severity) const { return static_cast<int>(severity) >= static_cast<int>(severity_); }

    /// Also append every message (without colours) to `path`; parent folders are created.
    /// Throws PolygraphyException when the file cannot be opened.
    void set_log_file(const std::string& path);
    /// Colours on or off (default: on when stdout is a terminal).
    void set_colors(bool enabled);

    /// Prints `message` with the prefix of `severity` when enabled.
    void log(Severity severity, std::string_view message);
    /// Logs a message only the first time this exact text is seen.
    void log_once(Severity severity, std::string_view message);

    /// log() at the severity the name says.
    /// @{
    void ultra_verbose(std::string_view m) { log(Severity::kUltraVerbose, m); }
    void super_verbose(std::string_view m) { log(Severity::kSuperVerbose, m); }
    void extra_verbose(std::string_view m) { log(Severity::kExtraVerbose, m); }
    void verbose(std::string_view m) { log(Severity::kVerbose, m); }
    void info(std::string_view m) { log(Severity::kInfo, m); }
    void start(std::string_view m) { log(Severity::kStart, m); }
    void finish(std::string_view m) { log(Severity::kFinish, m); }
    void warning(std::string_view m) { log(Severity::kWarning, m); }
    void error(std::string_view m) { log(Severity::kError, m); }
    /// @}
    /// Prints `[!] message` (tools use it for exceptions; library code throws instead).
    void critical(std::string_view m) { log(Severity::kCritical, m); }

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

    /// Restores defaults (severity INFO, no indentation, no log file, no once-cache). For tests.
    void reset();

private:
    Logger();
    void write_locked(Severity severity, std::string_view message);
    void erase_progress_locked();

    mutable std::mutex mutex_;
    Severity severity_ = Severity::kInfo;
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
