#include "backend/ref/thread_budget.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

namespace polygraphy::ref {

int idle_core_threads(int cores, int runnable) {
    const int others = std::max(runnable - 1, 0);
    return std::clamp(cores - others, 1, std::max(cores, 1));
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

int threads_for_current_load(int cores) {
    using Clock = std::chrono::steady_clock;
    static std::atomic<int64_t> last_read{-1000000};  // long enough ago: the first call reads
    static std::atomic<int> last_runnable{-1};
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
    if (now - last_read.load(std::memory_order_relaxed) >= 100) {
        std::ifstream file("/proc/loadavg");
        std::string text;
        std::getline(file, text);
        last_runnable.store(runnable_from_loadavg(text).value_or(-1), std::memory_order_relaxed);
        last_read.store(now, std::memory_order_relaxed);
    }
    const int runnable = last_runnable.load(std::memory_order_relaxed);
    return runnable < 0 ? cores : idle_core_threads(cores, runnable);
}

}  // namespace polygraphy::ref
