// Image decoding for ImageDecoder (ops/image.cpp): BMP and binary PNM by hand, JPEG, PNG, TIFF, WebP
// and JPEG 2000 through Debian's libjpeg-turbo, libpng, libtiff, libwebp and OpenJPEG, which only the
// built-in runtime links. Results follow what ONNX's reference (Pillow) gives: alpha is dropped, not
// composited; gray images are replicated to RGB; JPEG uses libjpeg's defaults (islow DCT, "fancy"
// chroma upsampling), as the operator's specification asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace polygraphy::ref {

/// A decoded image, 8-bit RGB, top row first.
struct DecodedImage {
    int64_t height = 0;
    int64_t width = 0;
    std::vector<uint8_t> rgb;  ///< height * width * 3
};

/// Image containers, told apart by their first bytes.
enum class ImageFormat { kUnknown, kBmp, kPnm, kJpeg, kPng, kTiff, kWebp, kJpeg2000 };

/// The format of an encoded stream from its signature; kUnknown when none matches.
ImageFormat detect_image_format(const uint8_t* data, std::size_t size);

/// The format's name in messages ("JPEG 2000").
const char* image_format_name(ImageFormat format);

/// Decodes `size` bytes of `format` (not kUnknown). InputError "<format> stream ...: <why>" for a
/// corrupt or truncated stream or an image larger than 65535 pixels a side or 2^28 pixels;
/// UnsupportedError for valid images of a kind the decoder does not handle (16-bit PNM, subsampled
/// JPEG 2000 components, CMYK JPEG). Never writes to stdout or stderr.
DecodedImage decode_image(ImageFormat format, const uint8_t* data, std::size_t size);

}  // namespace polygraphy::ref
