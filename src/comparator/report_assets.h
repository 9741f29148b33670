// Internal: the HTML report's script and styles, from src/comparator/report_assets/ (embedded into the
// library at build time by cmake/EmbedAssets.cmake, so that a report is one self-contained file).
#pragma once

#include <string_view>

namespace polygraphy::report_assets {

/// report.css.
std::string_view css();
/// report.js.
std::string_view script();

}  // namespace polygraphy::report_assets
