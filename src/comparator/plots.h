// Internal: Polygraphy's comparison figures (`--save-heatmaps`, `--save-error-metrics-plot`) as SVG
// files, drawn while the compared tensors still exist.
#pragma once

#include <string>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy::plots {

/// Polygraphy's util.sanitize_filename: path separators ('/') become '_'.
std::string sanitize_filename(const std::string& name);

/// Grid of heatmaps of one figure, as Polygraphy's comparator/util.py build_heatmaps lays them out:
/// the tensor is seen as N images of its last two dimensions (leading 1s added below rank 3), at most
/// min(1080 / height, 14) rows by min(1920 / width, 7) columns per figure (at least 1 each, where
/// Polygraphy would divide by zero), fewer columns when there are fewer images.
struct HeatmapGrid {
    int64_t images = 0, height = 0, width = 0;  ///< N, and the size of each image
    int64_t rows = 0, cols = 0;                 ///< per figure
    int64_t figures = 0;                        ///< ceil(N / (rows * cols))
};
/// The grid for a tensor of `shape`.
HeatmapGrid heatmap_grid(const Shape& shape);

/// Writes heatmaps of `diff` (a difference tensor) into `dir`: one SVG per figure of the grid, named
/// `<sanitized title>.svg` with the title "<prefix>: (<first image's index>,0:H,0:W) to (<last's>)",
/// as Polygraphy names them. `log_scale` colours by log10 (the relative error; the title then gets
/// " (Log Scale)" unless all values are equal, as in Polygraphy). Images larger than 256 pixels on a side are
/// shown by the maximum of each block (NaN wins, in grey). Logs like Polygraphy. Returns the paths.
std::vector<std::string> save_heatmaps(const Tensor& diff, std::string prefix, const std::string& dir, bool log_scale);

/// Writes Polygraphy's error metrics plot: the absolute (linear) and relative (log10 unless all values
/// are equal) differences against the magnitude of the second output `reference`, drawn as point
/// densities, to `<dir>/error_metrics_<out0_name>.svg` (Polygraphy writes a PNG of a scatter plot).
/// Returns the path.
std::string save_error_metrics_plot(const Tensor& absdiff, const Tensor& reldiff, const Tensor& reference,
                                    const std::string& runner0, const std::string& runner1,
                                    const std::string& out0_name, const std::string& out1_name, const std::string& dir);

}  // namespace polygraphy::plots
