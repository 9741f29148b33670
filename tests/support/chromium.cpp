#include "chromium.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "polygraphy/common/file_io.h"

namespace polygraphy::testing {
namespace {

// A fresh profile per run; the flags keep Chromium off the network (the report needs none) and quiet.
std::string chromium_command(const std::string& chromium, const std::string& scratch_dir, int width, int height) {
    static std::atomic<int> runs{0};
    const std::string profile = scratch_dir + "/chromium-profile-" + std::to_string(runs++);
    return shell_quote(chromium) +
           " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
           " --disable-component-update --disable-sync --disable-dev-shm-usage --disable-extensions --mute-audio"
           " --hide-scrollbars --enable-logging=stderr --v=0 --virtual-time-budget=5000 --window-size=" +
           std::to_string(width) + "," + std::to_string(height) + " --user-data-dir=" + shell_quote(profile);
}

std::string file_url(const std::string& path) {
    return "file://" + std::filesystem::absolute(path).string();
}

}  // namespace

std::optional<std::string> find_chromium() {
    std::vector<std::string> candidates = {"chromium", "chromium-browser"};
    if (const char* configured = std::getenv("POLYGRAPHY_CHROMIUM"); configured && *configured)
        candidates = {configured};
    for (const std::string& name : candidates) {
        const CommandResult found = run_command("command -v " + shell_quote(name));
        if (found.exit_code == 0 && !found.output.empty()) return name;
    }
    return std::nullopt;
}

BrowserPage load_in_chromium(const std::string& chromium, const std::string& html_path,
                             const std::string& scratch_dir) {
    const std::string dom_path = scratch_dir + "/dom.html", log_path = scratch_dir + "/chromium.log";
    // In a group: run_command sends the group's stderr to its output, the browser's goes to the log.
    const CommandResult result = run_command("{ " + chromium_command(chromium, scratch_dir, 1400, 1000) +
                                             " --dump-dom " + shell_quote(file_url(html_path)) + " > " +
                                             shell_quote(dom_path) + " 2> " + shell_quote(log_path) + "; }");
    BrowserPage page;
    page.exit_code = result.exit_code;
    page.dom = std::filesystem::exists(dom_path) ? read_file(dom_path) : "";
    page.log = std::filesystem::exists(log_path) ? read_file(log_path) : "";
    std::istringstream lines(page.log);
    for (std::string line; std::getline(lines, line);)
        if (line.find(":CONSOLE") != std::string::npos) page.console_errors.push_back(line);
    return page;
}

CommandResult screenshot_in_chromium(const std::string& chromium, const std::string& html_path,
                                     const std::string& png_path, const std::string& scratch_dir, int width,
                                     int height) {
    return run_command(chromium_command(chromium, scratch_dir, width, height) +
                       " --screenshot=" + shell_quote(png_path) + " " + shell_quote(file_url(html_path)));
}

}  // namespace polygraphy::testing
