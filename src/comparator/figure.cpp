#include "comparator/figure.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "common/text_util.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::figure {
namespace {

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.6g", value);
    return text;
}

void put_u32(std::string& out, uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

void put_chunk(std::string& png, const char type[4], const std::string& data) {
    put_u32(png, static_cast<uint32_t>(data.size()));
    const std::string typed = std::string(type, 4) + data;
    png += typed;
    put_u32(png, static_cast<uint32_t>(
                     crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()))));
}

}  // namespace

void throw_not_numeric(DataType dtype) {
    throw UnsupportedError("Cannot draw or count the values of a tensor of type " + std::string(dtype_name(dtype)));
}

std::string hex(Rgb colour) {
    char text[8];
    std::snprintf(text, sizeof(text), "#%02x%02x%02x", colour.r, colour.g, colour.b);
    return text;
}

Rgb plasma(double t) {
    static constexpr std::array<Rgb, 5> kStops = {
        {{13, 8, 135}, {126, 3, 168}, {204, 71, 120}, {248, 149, 64}, {240, 249, 33}}};
    t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
    const double position = t * (kStops.size() - 1);
    const std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(position), kStops.size() - 2);
    const double f = position - static_cast<double>(index);
    auto mix = [f](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround(a + (b - a) * f)); };
    const Rgb a = kStops[index], b = kStops[index + 1];
    return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

std::string encode_png(int width, int height, const std::vector<uint8_t>& pixels, const std::vector<Rgb>& palette) {
    if (width <= 0 || height <= 0 ||
        pixels.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) || palette.empty() ||
        palette.size() > 256)
        throw InternalError("encode_png: bad image geometry or palette");
    std::string png = "\x89PNG\r\n\x1a\n";
    std::string header;
    put_u32(header, static_cast<uint32_t>(width));
    put_u32(header, static_cast<uint32_t>(height));
    header += std::string("\x08\x03\x00\x00\x00", 5);  // 8-bit palette indices, no interlace
    put_chunk(png, "IHDR", header);
    std::string colours;
    for (const Rgb& colour : palette)
        colours += {static_cast<char>(colour.r), static_cast<char>(colour.g), static_cast<char>(colour.b)};
    put_chunk(png, "PLTE", colours);

    // Each row starts with its filter type (0: none).
    std::string raw;
    raw.reserve(pixels.size() + static_cast<std::size_t>(height));
    for (int row = 0; row < height; ++row) {
        raw += '\0';
        raw.append(reinterpret_cast<const char*>(pixels.data()) + static_cast<std::size_t>(row) * width,
                   static_cast<std::size_t>(width));
    }
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    std::string compressed(size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(compressed.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                  static_cast<uLong>(raw.size()), Z_BEST_SPEED) != Z_OK)
        throw PolygraphyException("Could not compress a PNG image of " + std::to_string(width) + "x" +
                                  std::to_string(height) + " pixels");
    compressed.resize(size);
    put_chunk(png, "IDAT", compressed);
    put_chunk(png, "IEND", "");
    return png;
}

std::string png_data_uri(const std::string& png) {
    return "data:image/png;base64," + base64::encode(png);
}

std::string tick_label(double value) {
    if (value == 0) return "0";
    char text[32];
    std::snprintf(text, sizeof(text), "%.3g", value);
    return text;
}

std::vector<double> linear_ticks(double low, double high, int count) {
    if (!(high > low) || count < 1) return {low};
    const double rough = (high - low) / count;
    const double power = std::pow(10.0, std::floor(std::log10(rough)));
    double step = power;
    for (const double factor : {1.0, 2.0, 5.0, 10.0})
        if (rough <= factor * power) {
            step = factor * power;
            break;
        }
    std::vector<double> ticks;
    const double first = std::ceil(low / step - 1e-9);
    for (double k = first; k * step <= high + step * 1e-9; ++k) ticks.push_back(k == 0 ? 0.0 : k * step);
    return ticks;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {
    rect(0, 0, width, height, "#ffffff");
}

void Svg::text(double x, double y, std::string_view content, double size, std::string_view anchor, double rotate) {
    body_ += "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" + number(size) + "\" text-anchor=\"" +
             std::string(anchor) + "\"";
    if (rotate != 0) body_ += " transform=\"rotate(" + number(rotate) + " " + number(x) + " " + number(y) + ")\"";
    body_ += '>';
    body_ += text::markup_escape(content);
    body_ += "</text>\n";
}

void Svg::rect(double x, double y, double width, double height, std::string_view fill, std::string_view stroke) {
    body_ += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(width) + "\" height=\"" +
             number(height) + "\" fill=\"" + std::string(fill) + "\" stroke=\"" + std::string(stroke) + "\"/>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, bool dashed) {
    body_ += "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" + number(y2) +
             "\" stroke=\"" + std::string(stroke) + "\"" +
             (dashed ? " stroke-dasharray=\"3,3\" stroke-width=\"0.5\"" : "") + "/>\n";
}

void Svg::image(double x, double y, double width, double height, const std::string& data_uri) {
    body_ += "<image x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(width) + "\" height=\"" +
             number(height) + "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"" + data_uri +
             "\"/>\n";
}

std::string Svg::finish() const {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
           number(width_) + "\" height=\"" + number(height_) + "\" viewBox=\"0 0 " + number(width_) + " " +
           number(height_) + "\" font-family=\"sans-serif\">\n" + body_ + "</svg>\n";
}

}  // namespace polygraphy::figure
