// Small images encoded by Pillow 9.4 in every format ImageDecoder reads through a codec library, for
// the operator's tests and the image_codecs fuzz target's seeds.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace polygraphy::testing {

/// The 4x2 RGB image (row-major, RGB) that the lossless encodings decode to.
extern const std::vector<double> kEncodedImagePixels;

/// Encoded streams by name: "PNG", "PNG RGBA" (alpha 255, 0, 128, 255 / 255, 255, 0, 10), "PNG gray"
/// (mode L), "TIFF", "WebP" (lossless), "JPEG 2000" (reversible), "JPEG" (quality 90).
const std::map<std::string, std::string>& encoded_images();

}  // namespace polygraphy::testing
