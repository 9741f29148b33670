#include "comparator/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "comparator/figure.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/histogram.h"

namespace polygraphy::plots {
namespace {

constexpr int64_t kMaxImageSide = 256;  // data pixels per side of one heatmap image
constexpr uint8_t kNanIndex = 255;      // palette slot of NaN pixels
constexpr int kColourLevels = 254;      // palette slots 0..253 hold the colour map

std::string join_path(const std::string& dir, const std::string& name) {
    return (std::filesystem::path(dir) / name).string();
}

// Maps a value to a palette index: linear or log10 between vmin and vmax.
struct ColourScale {
    double vmin = 0, vmax = 0;
    bool log = false;

    uint8_t index(double value) const {
        if (std::isnan(value)) return kNanIndex;
        double t;
        if (log) {
            t = value <= 0 ? 0.0 : (std::log10(value) - std::log10(vmin)) / (std::log10(vmax) - std::log10(vmin));
        } else {
            t = vmax > vmin ? (value - vmin) / (vmax - vmin) : 0.0;
        }
        t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
        return static_cast<uint8_t>(std::lround(t * (kColourLevels - 1)));
    }
};

std::vector<figure::Rgb> heatmap_palette() {
    std::vector<figure::Rgb> palette(256, figure::Rgb{128, 128, 128});
    for (int i = 0; i < kColourLevels; ++i)
        palette[static_cast<std::size_t>(i)] = figure::plasma(i / double(kColourLevels - 1));
    return palette;
}

// "(i,j,0:H,0:W)": the leading coordinates of image `image` in the (padded) shape.
std::string image_coordinates(int64_t image, const Shape& leading, int64_t height, int64_t width) {
    std::vector<int64_t> coordinates(leading.size());
    for (std::size_t axis = leading.size(); axis-- > 0;) {
        coordinates[axis] = image % leading[axis];
        image /= leading[axis];
    }
    std::string text = "(";
    for (const int64_t c : coordinates) text += std::to_string(c) + ",";
    return text + "0:" + std::to_string(height) + ",0:" + std::to_string(width) + ")";
}

// One image of the grid, reduced to at most kMaxImageSide pixels per side by the most severe value of
// each block (NaN, else the maximum).
std::vector<uint8_t> image_pixels(const Tensor& diff, int64_t image, const HeatmapGrid& grid, const ColourScale& scale,
                                  int64_t out_height, int64_t out_width) {
    std::vector<double> block(static_cast<std::size_t>(out_height * out_width),
                              -std::numeric_limits<double>::infinity());
    const int64_t base = image * grid.height * grid.width;
    for (int64_t y = 0; y < grid.height; ++y) {
        const int64_t row = y * out_height / grid.height;
        for (int64_t x = 0; x < grid.width; ++x) {
            const double value = diff.value_as_double(base + y * grid.width + x);
            double& cell = block[static_cast<std::size_t>(row * out_width + x * out_width / grid.width)];
            if (std::isnan(value) || std::isnan(cell))
                cell = std::numeric_limits<double>::quiet_NaN();
            else
                cell = std::max(cell, value);
        }
    }
    std::vector<uint8_t> pixels(block.size());
    for (std::size_t i = 0; i < block.size(); ++i) pixels[i] = scale.index(block[i]);
    return pixels;
}

// A vertical colour bar with tick labels at (x, y), `height` tall.
void colour_bar(figure::Svg& svg, double x, double y, double height, const ColourScale& scale) {
    std::vector<uint8_t> pixels(kColourLevels);
    for (int i = 0; i < kColourLevels; ++i)
        pixels[static_cast<std::size_t>(i)] = static_cast<uint8_t>(kColourLevels - 1 - i);
    svg.image(x, y, 14, height, figure::png_data_uri(figure::encode_png(1, kColourLevels, pixels, heatmap_palette())));
    svg.rect(x, y, 14, height, "none", "#333333");
    std::vector<double> ticks;
    if (scale.log) {
        for (double e = std::ceil(std::log10(scale.vmin)); e <= std::floor(std::log10(scale.vmax)); ++e)
            ticks.push_back(std::pow(10.0, e));
        if (ticks.size() < 2) ticks = {scale.vmin, scale.vmax};
    } else {
        ticks = figure::linear_ticks(scale.vmin, scale.vmax, 5);
    }
    for (const double tick : ticks) {
        double t = scale.log
                       ? (std::log10(tick) - std::log10(scale.vmin)) / (std::log10(scale.vmax) - std::log10(scale.vmin))
                       : (scale.vmax > scale.vmin ? (tick - scale.vmin) / (scale.vmax - scale.vmin) : 0.5);
        if (t < -1e-9 || t > 1 + 1e-9) continue;
        const double ty = y + height * (1 - t);
        svg.line(x + 14, ty, x + 18, ty, "#333333");
        svg.text(x + 20, ty + 3, figure::tick_label(tick), 8);
    }
}

}  // namespace

std::string sanitize_filename(const std::string& name) {
    std::string out = name;
    std::replace(out.begin(), out.end(), '/', '_');
    return out;
}

HeatmapGrid heatmap_grid(const Shape& shape) {
    Shape padded = shape;
    while (padded.size() < 3) padded.insert(padded.begin(), 1);
    HeatmapGrid grid;
    grid.height = padded[padded.size() - 2];
    grid.width = padded.back();
    grid.images = grid.height * grid.width == 0 ? 0 : shape_volume(shape) / (grid.height * grid.width);
    if (grid.images == 0) return grid;
    grid.rows = std::max<int64_t>(1, std::min<int64_t>(1080 / grid.height, 14));
    grid.cols = std::max<int64_t>(1, std::min<int64_t>(1920 / grid.width, 7));
    if (grid.images < grid.rows * grid.cols) {
        grid.cols = std::min(grid.images, grid.cols);
        grid.rows = (grid.images + grid.cols - 1) / grid.cols;
    }
    grid.figures = (grid.images + grid.rows * grid.cols - 1) / (grid.rows * grid.cols);
    return grid;
}

std::vector<std::string> save_heatmaps(const Tensor& diff, std::string prefix, const std::string& dir, bool log_scale) {
    logger().start("Building heatmaps for " + prefix + ". This may take a while...");
    auto guard = logger().indent();
    const HeatmapGrid grid = heatmap_grid(diff.shape());
    if (grid.images == 0) {
        logger().verbose("Nothing to draw: the tensor is empty");
        return {};
    }
    const ValueRange range = value_range(diff);
    ColourScale scale;
    // As Polygraphy: a log scale unless all values are equal; it starts at the smallest positive value
    // (zeros take the lowest colour), a decade below the largest when that is the only one.
    if (log_scale && range.min && *range.min != *range.max && *range.max > 0) {
        const double low =
            range.min_positive && *range.min_positive < *range.max ? *range.min_positive : *range.max / 10;
        scale = {low, *range.max, true};
        prefix += " (Log Scale)";
    } else if (range.min) {
        scale = {*range.min, *range.max, false};
    }

    Shape leading = diff.shape();
    while (leading.size() < 3) leading.insert(leading.begin(), 1);
    leading.resize(leading.size() - 2);

    const int64_t per_figure = grid.rows * grid.cols;
    const int64_t out_height = std::min(grid.height, kMaxImageSide), out_width = std::min(grid.width, kMaxImageSide);
    const double display = per_figure <= 4 ? 256.0 : 160.0;
    const double longest = static_cast<double>(std::max(grid.height, grid.width));
    const double cell_width = std::max(8.0, display * grid.width / longest);
    const double cell_height = std::max(8.0, display * grid.height / longest);
    const double label = 14, gap = 10, top = 34, left = 10;
    const double column_width = std::max(cell_width, 110.0);
    const double grid_width = grid.cols * (column_width + gap), grid_height = grid.rows * (cell_height + label + gap);
    const std::vector<figure::Rgb> palette = heatmap_palette();

    std::vector<std::string> paths;
    for (int64_t figure_index = 0; figure_index < grid.figures; ++figure_index) {
        const int64_t base = figure_index * per_figure;
        const int64_t last = std::min(base + per_figure, grid.images) - 1;
        const std::string title = prefix + ": " + image_coordinates(base, leading, grid.height, grid.width) + " to " +
                                  image_coordinates(last, leading, grid.height, grid.width);
        logger().extra_verbose("Building heatmaps for " + title);
        figure::Svg svg(left + grid_width + 70, top + std::max(grid_height, 160.0) + 10);
        svg.text(left, 20, title, 12);
        for (int64_t row = 0; row < grid.rows; ++row) {
            for (int64_t col = 0; col < grid.cols; ++col) {
                const int64_t image = base + col + row * grid.cols;
                const double x = left + col * (column_width + gap), y = top + row * (cell_height + label + gap);
                if (image >= grid.images) {
                    svg.text(x, y + 10, "Out Of Bounds", 8);
                    continue;
                }
                svg.text(x, y + 10, image_coordinates(image, leading, grid.height, grid.width), 8);
                const auto pixels = image_pixels(diff, image, grid, scale, out_height, out_width);
                svg.image(x, y + label, cell_width, cell_height,
                          figure::png_data_uri(figure::encode_png(static_cast<int>(out_width),
                                                                  static_cast<int>(out_height), pixels, palette)));
            }
        }
        colour_bar(svg, left + grid_width + 4, top + label, std::max(grid_height - label - gap, 140.0), scale);
        const std::string path = join_path(dir, sanitize_filename(title) + ".svg");
        logger().info("Saving '" + prefix + "' heatmap to: '" + path + "'");
        write_file_atomically(path, svg.finish());
        paths.push_back(path);
    }
    return paths;
}

namespace {

// One panel of the error metrics plot: point densities of (x, y) pairs on a raster, with axes.
struct Panel {
    static constexpr int kColumns = 300, kRows = 110;
    double x_max = 1, y_low = 0, y_high = 1;
    bool y_log = false;
    std::vector<int64_t> counts = std::vector<int64_t>(kColumns * kRows, 0);

    void add(double x, double y) {
        if (!std::isfinite(x) || !std::isfinite(y) || (y_log && y <= 0)) return;
        const double fy = y_log ? (std::log10(y) - y_low) / (y_high - y_low) : (y - y_low) / (y_high - y_low);
        const double fx = x / x_max;
        if (fx < 0 || fx > 1 || fy < 0 || fy > 1) return;
        const int column = std::min(kColumns - 1, static_cast<int>(fx * kColumns));
        const int row = std::min(kRows - 1, static_cast<int>((1 - fy) * kRows));
        ++counts[static_cast<std::size_t>(row * kColumns + column)];
    }

    // Draws the panel with its plot area at (x, y), `width` x `height`.
    void draw(figure::Svg& svg, double x, double y, double width, double height, const std::string& y_label,
              const std::string* x_label) const {
        int64_t most = 0;
        for (const int64_t count : counts) most = std::max(most, count);
        std::vector<figure::Rgb> palette(256, figure::Rgb{255, 255, 255});
        for (int i = 1; i < 256; ++i) {
            const double t = (i - 1) / 254.0;  // light to dark blue with density
            palette[static_cast<std::size_t>(i)] = {static_cast<uint8_t>(std::lround(158 - 150 * t)),
                                                    static_cast<uint8_t>(std::lround(202 - 154 * t)),
                                                    static_cast<uint8_t>(std::lround(225 - 118 * t))};
        }
        std::vector<uint8_t> pixels(counts.size(), 0);
        for (std::size_t i = 0; i < counts.size(); ++i)
            if (counts[i] > 0)
                pixels[i] =
                    static_cast<uint8_t>(1 + std::lround(254 * std::log1p(static_cast<double>(counts[i] - 1)) /
                                                         std::max(1e-9, std::log1p(static_cast<double>(most - 1)))));
        svg.image(x, y, width, height, figure::png_data_uri(figure::encode_png(kColumns, kRows, pixels, palette)));
        svg.rect(x, y, width, height, "none", "#333333");
        for (const double tick : figure::linear_ticks(0, x_max, 10)) {
            const double tx = x + width * tick / x_max;
            svg.line(tx, y, tx, y + height, "#999999", true);
            if (x_label) svg.text(tx, y + height + 12, figure::tick_label(tick), 8, "middle");
        }
        std::vector<std::pair<double, std::string>> y_ticks;  // (fraction up the axis, label)
        if (y_log) {
            for (double e = y_low; e <= y_high + 1e-9; ++e)
                y_ticks.push_back({(e - y_low) / (y_high - y_low), figure::tick_label(std::pow(10.0, e))});
        } else {
            for (const double tick : figure::linear_ticks(y_low, y_high, 6))
                y_ticks.push_back({(tick - y_low) / (y_high - y_low), figure::tick_label(tick)});
        }
        for (const auto& [fraction, text] : y_ticks) {
            const double ty = y + height * (1 - fraction);
            svg.line(x, ty, x + width, ty, "#999999", true);
            svg.text(x - 4, ty + 3, text, 8, "end");
        }
        svg.text(x - 46, y + height / 2, y_label, 9, "middle", -90);
        if (x_label) svg.text(x + width / 2, y + height + 26, *x_label, 9, "middle");
    }
};

}  // namespace

std::string save_error_metrics_plot(const Tensor& absdiff, const Tensor& reldiff, const Tensor& reference,
                                    const std::string& runner0, const std::string& runner1,
                                    const std::string& out0_name, const std::string& out1_name,
                                    const std::string& dir) {
    logger().start("Building error metrics plot for " + out0_name + ". This may take a while...");
    auto guard = logger().indent();
    const int64_t n = std::min({absdiff.numel(), reldiff.numel(), reference.numel()});
    const ValueRange reference_range = value_range(reference), abs_range = value_range(absdiff),
                     rel_range = value_range(reldiff);

    Panel absolute, relative;
    double x_max = 0;
    if (reference_range.min) x_max = std::max(std::fabs(*reference_range.min), std::fabs(*reference_range.max));
    absolute.x_max = relative.x_max = x_max > 0 ? x_max : 1;
    absolute.y_high = abs_range.max && *abs_range.max > 0 ? *abs_range.max : 1;
    std::string relative_label = "Relative error";
    // As Polygraphy: a log scale unless all values are equal (zeros cannot be drawn on it).
    if (rel_range.min && *rel_range.min != *rel_range.max && *rel_range.max > 0) {
        const double low = rel_range.min_positive && *rel_range.min_positive < *rel_range.max ? *rel_range.min_positive
                                                                                              : *rel_range.max / 10;
        relative.y_log = true;
        relative.y_low = std::floor(std::log10(low));
        relative.y_high = std::max(relative.y_low + 1, std::ceil(std::log10(*rel_range.max)));
        relative_label += " (log scale)";
    } else {
        relative.y_high = rel_range.max && *rel_range.max > 0 ? *rel_range.max : 1;
    }
    for (int64_t i = 0; i < n; ++i) {
        const double magnitude = std::fabs(reference.value_as_double(i));
        absolute.add(magnitude, absdiff.value_as_double(i));
        relative.add(magnitude, reldiff.value_as_double(i));
    }

    const double left = 70, width = 600, height = 220;
    figure::Svg svg(left + width + 30, 60 + 2 * height + 70);
    char runner0_padded[512], runner1_padded[512];
    std::snprintf(runner0_padded, sizeof(runner0_padded), "%-35s", runner0.c_str());
    std::snprintf(runner1_padded, sizeof(runner1_padded), "%-35s", runner1.c_str());
    svg.text(left + width / 2, 16, "Error metrics between output0 and output1", 11, "middle");
    svg.text(left + width / 2, 30, "output0: " + std::string(runner0_padded) + " | " + out0_name, 10, "middle");
    svg.text(left + width / 2, 44, "output1: " + std::string(runner1_padded) + " | " + out1_name, 10, "middle");
    const std::string x_label = "output1 magnitude";
    absolute.draw(svg, left, 56, width, height, "Absolute error", nullptr);
    relative.draw(svg, left, 56 + height + 12, width, height, relative_label, &x_label);

    const std::string path = join_path(dir, sanitize_filename("error_metrics_" + out0_name + ".svg"));
    logger().info("Saving error metrics plot to: '" + path + "'");
    write_file_atomically(path, svg.finish());
    return path;
}

}  // namespace polygraphy::plots
