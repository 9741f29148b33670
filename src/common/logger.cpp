#include "polygraphy/common/logger.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "common/log_format.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

const char* prefix_for(Severity severity) {
    switch (severity) {
        case Severity::kUltraVerbose:
            return "[U] ";
        case Severity::kSuperVerbose:
            return "[S] ";
        case Severity::kExtraVerbose:
            return "[X] ";
        case Severity::kVerbose:
            return "[V] ";
        case Severity::kInfo:
        case Severity::kStart:
        case Severity::kFinish:
            return "[I] ";
        case Severity::kWarning:
            return "[W] ";
        case Severity::kError:
            return "[E] ";
        default:
            return "[!] ";
    }
}

const char* color_for(Severity severity) {
    switch (severity) {
        case Severity::kUltraVerbose:
        case Severity::kSuperVerbose:
        case Severity::kExtraVerbose:
        case Severity::kVerbose:
            return "\033[90m";
        case Severity::kStart:
            return "\033[1;94m";
        case Severity::kFinish:
            return "\033[1;92m";
        case Severity::kWarning:
            return "\033[93m";
        case Severity::kError:
            return "\033[91m";
        case Severity::kCritical:
            return "\033[1;91m";
        default:
            return "";
    }
}

std::atomic<bool> g_timestamps{false};  // set_log_timestamps()
std::atomic<bool> g_line_info{false};   // set_log_line_info()

// The severity letter, then the time and the file and line when asked for:
// "[I] " or "[I] (12:34:56) [backend/onnx/loader.cpp:42] ".
std::string prefix_of(Severity severity, const Logger::Where& where) {
    std::string prefix = prefix_for(severity);
    if (g_timestamps.load(std::memory_order_relaxed)) {
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char clock[16];
        std::strftime(clock, sizeof(clock), "%H:%M:%S", &local);
        prefix.append("(").append(clock).append(") ");  // appends: GCC 12 misreads "(" + string (-Wrestrict)
    }
    if (g_line_info.load(std::memory_order_relaxed))
        prefix.append("[")
            .append(logging_source_path(where.file_name()))
            .append(":")
            .append(std::to_string(where.line()))
            .append("] ");
    return prefix;
}

// "[I] first line\n    second line": continuation lines are indented to the text column.
std::string format_message(Severity severity, std::string_view message, int indent, const Logger::Where& where) {
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    const std::string prefix = prefix_of(severity, where);
    const std::string continuation = std::string(prefix.size(), ' ') + pad;
    std::string text = prefix + pad;
    for (char c : message) {
        text += c;
        if (c == '\n') text += continuation;
    }
    return text;
}

// "a/b//c" -> {"a", "b", "c"} (empty components are skipped, as Polygraphy does).
std::vector<std::string> path_components(std::string_view path) {
    std::vector<std::string> components;
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        if (end > start) components.emplace_back(path.substr(start, end - start));
        start = end + 1;
    }
    return components;
}

std::string_view without_extension(std::string_view name) {
    const auto dot = name.rfind('.');
    return dot == std::string_view::npos || dot == 0 ? name : name.substr(0, dot);
}

// Whether the per-path entry `key` names the file with components `file`: a prefix of whole
// components, of which the file name may differ in its extension.
bool path_matches(const std::vector<std::string>& key, const std::vector<std::string>& file) {
    if (key.size() > file.size()) return false;
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (key[i] == file[i]) continue;
        const bool is_file_name = i + 1 == file.size();
        if (!is_file_name || without_extension(key[i]) != without_extension(file[i])) return false;
    }
    return true;
}

}  // namespace

void set_log_timestamps(bool enabled) {
    g_timestamps.store(enabled, std::memory_order_relaxed);
}

void set_log_line_info(bool enabled) {
    g_line_info.store(enabled, std::memory_order_relaxed);
}

std::string logging_source_path(std::string_view file) {
    for (std::string_view root : {std::string_view("include/polygraphy/"), std::string_view("src/")}) {
        const auto at = file.rfind(root);
        if (at != std::string_view::npos && (at == 0 || file[at - 1] == '/'))
            return std::string(file.substr(at + root.size()));
    }
    return std::string(file);
}

bool severity_from_name(std::string_view name, Severity& out) {
    std::string key(name);
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    static const std::pair<const char*, Severity> kNames[] = {
        {"ULTRA_VERBOSE", Severity::kUltraVerbose},
        {"SUPER_VERBOSE", Severity::kSuperVerbose},
        {"EXTRA_VERBOSE", Severity::kExtraVerbose},
        {"VERBOSE", Severity::kVerbose},
        {"INFO", Severity::kInfo},
        {"START", Severity::kStart},
        {"FINISH", Severity::kFinish},
        {"WARNING", Severity::kWarning},
        {"ERROR", Severity::kError},
        {"CRITICAL", Severity::kCritical},
    };
    for (const auto& [text, severity] : kNames) {
        if (key == text) {
            out = severity;
            return true;
        }
    }
    return false;
}

Logger& Logger::global() {
    static Logger instance;
    return instance;
}

// Silent until asked: a library prints nothing unless its user enables logging (the tools do).
Logger::Logger() : severity_(Severity::kSilent), default_severity_(Severity::kSilent) {
    terminal_ = isatty(STDOUT_FILENO) != 0;
    colors_ = terminal_;
}

void Logger::set_severity(Severity severity) {
    std::lock_guard<std::mutex> lock(mutex_);
    default_severity_ = severity;
    severity_ = severity;
    for (const auto& entry : path_severities_) severity_ = std::min(severity_, entry.second);
}

Severity Logger::severity() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return default_severity_;
}

void Logger::set_path_severities(const std::vector<std::pair<std::string, Severity>>& severities) {
    std::lock_guard<std::mutex> lock(mutex_);
    path_severities_.clear();
    severity_ = default_severity_;
    for (const auto& [path, severity] : severities) {
        path_severities_.emplace_back(path_components(path), severity);
        severity_ = std::min(severity_, severity);
    }
}

bool Logger::passes_locked(Severity severity, const Where& where) const {
    Severity threshold = default_severity_;
    if (!path_severities_.empty()) {
        const auto file = path_components(logging_source_path(where.file_name()));
        std::size_t longest = 0;
        for (const auto& [key, key_severity] : path_severities_) {
            if (key.size() >= longest && path_matches(key, file)) {
                longest = key.size();
                threshold = key_severity;
            }
        }
    }
    return static_cast<int>(severity) >= static_cast<int>(threshold);
}

void Logger::set_log_file(const std::string& path) {
    std::error_code error;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, error);
    auto file = std::make_unique<std::ofstream>(path, std::ios::app);
    if (!*file) throw PolygraphyException("Could not open log file: " + path);
    std::lock_guard<std::mutex> lock(mutex_);
    log_file_ = std::move(file);
}

void Logger::set_colors(bool enabled) {
    std::lock_guard<std::mutex> lock(mutex_);
    colors_ = enabled;
}

void Logger::log(Severity severity, std::string_view message, const Where& where) {
    if (!enabled(severity)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (passes_locked(severity, where)) write_locked(severity, message, where);
}

void Logger::log_once(Severity severity, std::string_view message, const Where& where) {
    if (!enabled(severity)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!passes_locked(severity, where) || !seen_once_.insert(std::string(message)).second) return;
    write_locked(severity, message, where);
}

void Logger::progress(std::string_view status) {
    if (!enabled(Severity::kInfo)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!terminal_) return;
    erase_progress_locked();
    progress_ = status;
    std::fprintf(stdout, "%s", progress_.c_str());
    std::fflush(stdout);
}

void Logger::clear_progress() {
    std::lock_guard<std::mutex> lock(mutex_);
    erase_progress_locked();
    progress_.clear();
    std::fflush(stdout);
}

void Logger::erase_progress_locked() {
    if (!progress_.empty()) std::fputs("\r\033[K", stdout);
}

void Logger::write_locked(Severity severity, std::string_view message, const Where& where) {
    erase_progress_locked();
    const std::string text = format_message(severity, message, indent_, where);
    const char* color = colors_ ? color_for(severity) : "";
    if (*color)
        std::fprintf(stdout, "%s%s\033[0m\n", color, text.c_str());
    else
        std::fprintf(stdout, "%s\n", text.c_str());
    if (!progress_.empty()) std::fprintf(stdout, "%s", progress_.c_str());  // kept below the messages
    std::fflush(stdout);
    if (log_file_) *log_file_ << text << '\n' << std::flush;
}

Logger::IndentGuard Logger::indent(int levels) {
    std::lock_guard<std::mutex> lock(mutex_);
    indent_ += 4 * levels;
    return IndentGuard(*this, 4 * levels);
}

Logger::IndentGuard::~IndentGuard() {
    if (!logger_) return;
    std::lock_guard<std::mutex> lock(logger_->mutex_);
    logger_->indent_ -= spaces_;
}

void Logger::reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    severity_ = Severity::kInfo;  // the tools' default; tests reset to it
    default_severity_ = Severity::kInfo;
    path_severities_.clear();
    indent_ = 0;
    g_timestamps.store(false, std::memory_order_relaxed);
    g_line_info.store(false, std::memory_order_relaxed);
    log_file_.reset();
    seen_once_.clear();
    progress_.clear();
}

}  // namespace polygraphy
