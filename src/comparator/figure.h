// Internal: the small drawing toolkit of the comparator's figures (heatmaps, error plots): indexed
// PNG images, colour maps, axis ticks and an SVG text builder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy::figure {

/// A colour.
struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
};

/// "#rrggbb".
std::string hex(Rgb colour);

/// A perceptually ordered dark-blue -> magenta -> yellow map (the look of matplotlib's "plasma",
/// from its published end and middle colours), for `t` in [0, 1] (clamped).
Rgb plasma(double t);

/// An 8-bit palette PNG (colour type 3) of `width` x `height` pixels, rows top to bottom, zlib
/// compressed. `pixels` holds width * height palette indices; `palette` at most 256 colours.
std::string encode_png(int width, int height, const std::vector<uint8_t>& pixels, const std::vector<Rgb>& palette);

/// "data:image/png;base64,..." for PNG bytes.
std::string png_data_uri(const std::string& png);

/// Short label of a tick value: "%.3g" (0 stays "0").
std::string tick_label(double value);

/// About `count` round tick values (1, 2 or 5 times a power of ten apart) covering [low, high].
std::vector<double> linear_ticks(double low, double high, int count);

/// Throws UnsupportedError: a tensor of `dtype` has no numbers to draw or count.
[[noreturn]] void throw_not_numeric(DataType dtype);

/// Calls `visit(const T* data, int64_t n)` with a numeric or bool tensor's elements as a plain array:
/// its own buffer for common types, a float32 copy for float16, bfloat16, float8 and int4 ones.
/// Strings and complex numbers throw UnsupportedError.
template <typename Visit>
void visit_numbers(const Tensor& tensor, Visit&& visit);

/// SVG text built element by element; every text is escaped.
class Svg {
public:
    /// A document of `width` x `height` user units, on a white background.
    Svg(double width, double height);
    /// `<text>` at (x, y); `anchor` is start, middle or end.
    void text(double x, double y, std::string_view content, double size = 10, std::string_view anchor = "start",
              double rotate = 0);
    /// A filled rectangle (`fill` a CSS colour, `stroke` "none" or a colour).
    void rect(double x, double y, double width, double height, std::string_view fill, std::string_view stroke = "none");
    /// A line; `dashed` draws it as a dashed grid line.
    void line(double x1, double y1, double x2, double y2, std::string_view stroke, bool dashed = false);
    /// An embedded image drawn without smoothing (one data pixel stays a sharp square).
    void image(double x, double y, double width, double height, const std::string& data_uri);
    /// The finished document.
    std::string finish() const;

private:
    double width_, height_;
    std::string body_;
};

// ---- template definition ----

template <typename Visit>
void visit_numbers(const Tensor& tensor, Visit&& visit) {
    const int64_t n = tensor.numel();
    switch (tensor.dtype()) {
        case DataType::kFloat32:
            return visit(tensor.data_as<float>(), n);
        case DataType::kFloat64:
            return visit(tensor.data_as<double>(), n);
        case DataType::kInt8:
            return visit(tensor.data_as<int8_t>(), n);
        case DataType::kInt16:
            return visit(tensor.data_as<int16_t>(), n);
        case DataType::kInt32:
            return visit(tensor.data_as<int32_t>(), n);
        case DataType::kInt64:
            return visit(tensor.data_as<int64_t>(), n);
        case DataType::kUInt8:
        case DataType::kBool:
            return visit(tensor.data_as<uint8_t>(), n);
        case DataType::kUInt16:
            return visit(tensor.data_as<uint16_t>(), n);
        case DataType::kUInt32:
            return visit(tensor.data_as<uint32_t>(), n);
        case DataType::kUInt64:
            return visit(tensor.data_as<uint64_t>(), n);
        case DataType::kString:
        case DataType::kComplex64:
        case DataType::kComplex128:
        case DataType::kUndefined:
            throw_not_numeric(tensor.dtype());
        default: {
            const Tensor widened = tensor.cast(DataType::kFloat32);
            return visit(widened.data_as<float>(), n);
        }
    }
}

}  // namespace polygraphy::figure
