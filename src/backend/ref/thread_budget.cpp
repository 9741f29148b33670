#include "backend/ref/thread_budget.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace polygraphy::ref {

int idle_core_threads(int cores, int others_runnable) {
    return std::clamp(cores - std::max(others_runnable, 0), 1, std::max(cores, 1));
}

std::optional<int> runnable_from_loadavg(const std::string& text) {
    std::istringstream fields(text);
    std::string one, five, fifteen, tasks;
    if (!(fields >> one >> five >> fifteen >> tasks)) return std::nullopt;
    const std::size_t slash = tasks.find('/');
    if (slash == 0 || slash == std::string::npos) return std::nullopt;
    try {
        std::size_t used = 0;
        const int runnable = std::stoi(tasks.substr(0, slash), &used);
        if (used != slash || runnable < 0) return std::nullopt;
        return runnable;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

bool stat_says_running(const std::string& text) {
    // "<tid> (<name>) <state> ...": the name may hold spaces and parentheses, the state follows the last ')'.
    const std::size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'R';
}

namespace {

/// Threads of this process that are running or ready to run (this one included).
int own_runnable_threads() {
    int running = 0;
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
        std::ifstream stat(task.path() / "stat");
        std::string text;
        std::getline(stat, text);
        running += stat_says_running(text) ? 1 : 0;
    }
    return std::max(running, 1);
}

/// Runnable threads of other processes now; -1 when /proc/loadavg cannot be read.
int others_runnable_now() {
    std::ifstream file("/proc/loadavg");
    std::string text;
    std::getline(file, text);
    const std::optional<int> runnable = runnable_from_loadavg(text);
    // Our own OpenMP threads may still be spinning after the previous run: not others' load.
    return runnable ? std::max(*runnable - own_runnable_threads(), 0) : -1;
}

}  // namespace

int lasting_others(int previous, int current) {
    return std::min(previous, current);
}

int threads_for_current_load(int cores) {
    using Clock = std::chrono::steady_clock;
    static std::atomic<int64_t> last_read{-1000000};  // long enough ago: the first call reads
    static std::atomic<int> last_reading{-1};
    static std::atomic<int> last_others{-1};
    static std::once_flag first;
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
    if (now - last_read.load(std::memory_order_relaxed) >= 100) {
        std::call_once(first, [] {  // the first call has no reading before it: one 2 ms earlier
            last_reading.store(others_runnable_now(), std::memory_order_relaxed);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        });
        const int current = others_runnable_now();
        const int previous = last_reading.exchange(current, std::memory_order_relaxed);
        last_others.store(lasting_others(previous, current), std::memory_order_relaxed);
        last_read.store(now, std::memory_order_relaxed);
    }
    const int others = last_others.load(std::memory_order_relaxed);
    return others < 0 ? cores : idle_core_threads(cores, others);
}

}  // namespace polygraphy::ref
