// Fuzzes ImageDecoder's decoders (src/backend/ref/compute/image_codecs.h): BMP and PNM by hand, and
// libjpeg-turbo, libpng, libtiff, libwebp and OpenJPEG as the built-in runtime calls them on an
// operator's input bytes. A stream is refused with InputError or UnsupportedError, or decodes to an
// image within the size limits whose pixel buffer holds exactly height * width * 3 bytes.
#include <cstddef>
#include <cstdint>

#include "backend/ref/compute/image_codecs.h"
#include "fuzz_support.h"
#include "polygraphy/common/exception.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace polygraphy;
    const ref::ImageFormat format = ref::detect_image_format(data, size);
    if (format == ref::ImageFormat::kUnknown) return 0;
    try {
        const ref::DecodedImage image = ref::decode_image(format, data, size);
        FUZZ_CHECK(image.height > 0 && image.width > 0 && image.height <= 65535 && image.width <= 65535);
        FUZZ_CHECK(image.rgb.size() == static_cast<std::size_t>(image.height * image.width * 3));
    } catch (const InputError&) {
    } catch (const UnsupportedError&) {
    }
    return 0;
}
