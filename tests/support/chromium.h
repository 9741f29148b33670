// Headless Chromium for tests and measurements of the HTML report (Debian's `chromium`, installed by
// scripts/setup.sh). Runs as root too (--no-sandbox) with a fresh profile and no network use.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_builder.h"

namespace polygraphy::testing {

/// The browser: $POLYGRAPHY_CHROMIUM when set (a command or a path), else `chromium` or
/// `chromium-browser` on PATH; nullopt when it cannot be found (the browser tests then skip).
std::optional<std::string> find_chromium();

/// A page as Chromium left it after running its scripts.
struct BrowserPage {
    int exit_code = -1;
    std::string dom;                          ///< the serialized DOM (--dump-dom)
    std::string log;                          ///< Chromium's own log (stderr)
    std::vector<std::string> console_errors;  ///< every console message and uncaught error of the page
};

/// Opens `html_path` headless and dumps its DOM; `scratch_dir` receives the throwaway profile.
BrowserPage load_in_chromium(const std::string& chromium, const std::string& html_path, const std::string& scratch_dir);

/// Writes a `width` x `height` screenshot of `html_path` to `png_path`.
CommandResult screenshot_in_chromium(const std::string& chromium, const std::string& html_path,
                                     const std::string& png_path, const std::string& scratch_dir, int width = 1400,
                                     int height = 1000);

}  // namespace polygraphy::testing
