// Time to first render of an HTML report in headless Chromium (the page records it when its script
// has drawn everything: performance.now() since navigation start, so it includes parsing the page and
// its data), and the time to redraw the whole graph zoomed out to fit:
//     report_render_time REPORT.html [RUNS=5]
// Prints the medians over RUNS page loads. Needs chromium (scripts/setup.sh installs it).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "chromium.h"

namespace {

double attribute(const std::string& dom, const std::string& name) {
    std::smatch match;
    if (!std::regex_search(dom, match, std::regex(name + "=\"([0-9.]+)\""))) return -1;
    return std::stod(match[1]);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? -1 : values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    using namespace polygraphy::testing;
    if (argc < 2) {
        std::fprintf(stderr, "usage: report_render_time REPORT.html [RUNS=5]\n");
        return 2;
    }
    const std::string report = argv[1];
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    const auto chromium = find_chromium();
    if (!chromium) {
        std::fprintf(stderr, "report_render_time: chromium is not installed\n");
        return 77;
    }
    TempDir scratch;
    std::vector<double> first_render, fit_draw;
    double nodes = -1;
    for (int run = 0; run < runs; ++run) {
        // "?bench" asks the page to time redraws of its whole graph.
        const BrowserPage loaded = load_in_chromium(*chromium, report + "?bench", scratch.path());
        if (loaded.exit_code != 0 || !loaded.console_errors.empty() ||
            loaded.dom.find("data-status=\"ready\"") == std::string::npos) {
            std::fprintf(stderr, "report_render_time: the page did not load cleanly\n%s\n", loaded.log.c_str());
            return 1;
        }
        first_render.push_back(attribute(loaded.dom, "data-first-render-ms"));
        fit_draw.push_back(attribute(loaded.dom, "data-fit-draw-ms"));
        nodes = attribute(loaded.dom, "data-fit-nodes-drawn");
    }
    std::printf("%s: first render %.0f ms (median of %d), whole graph redrawn zoomed out in %.1f ms (%.0f nodes)\n",
                report.c_str(), median(first_render), runs, median(fit_draw), nodes);
    return 0;
}
