// Running the built `polygraphy` with a chosen POLYGRAPHY_PLUGIN_PATH (tests of extension modules).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_builder.h"
#include "build_paths.h"

namespace polygraphy::testing {

inline std::string shell_quote_arg(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

/// `polygraphy <args>` with POLYGRAPHY_PLUGIN_PATH set to `plugin_path` (unset when nullopt), run
/// from `cwd` (this process's folder when empty).
inline CommandResult run_with_plugins(const std::optional<std::string>& plugin_path,
                                      const std::vector<std::string>& args, const std::string& cwd = "") {
    std::string command;
    if (!cwd.empty()) command += "cd " + shell_quote_arg(cwd) + " && ";
    command +=
        plugin_path ? "env POLYGRAPHY_PLUGIN_PATH=" + shell_quote_arg(*plugin_path) : "env -u POLYGRAPHY_PLUGIN_PATH";
    // Appended piece by piece (`" " + quote(x)` trips a GCC 12 -Wrestrict false positive).
    command += ' ';
    command += shell_quote_arg(POLYGRAPHY_CLI_PATH);
    for (const auto& arg : args) {
        command += ' ';
        command += shell_quote_arg(arg);
    }
    return run_command(command);
}

}  // namespace polygraphy::testing
