// Image operators (src/backend/ref/ops/image.cpp). x = np.array([[1, 2], [3, 4]], np.float32)[None, None].
#include "op_test_util.h"

#include "encoded_images.h"

namespace polygraphy::ref {
namespace {

using testing::encoded_images;
using testing::f32;
using testing::i64;
using testing::kEncodedImagePixels;
using testing::OpTester;
using testing::tensors_near;

Tensor image() { return f32({1, 1, 2, 2}, {1, 2, 3, 4}); }

TEST(ImageOps, ResizeNearestAsymmetricRepeats) {
    // nearest_mode floor: x.repeat(2, axis=2).repeat(3, axis=3)
    const Tensor y = OpTester("Resize", 13)
                         .input(image())
                         .omit()
                         .constant(f32({4}, {1, 1, 2, 3}))
                         .attr("mode", "nearest")
                         .attr("nearest_mode", "floor")
                         .attr("coordinate_transformation_mode", "asymmetric")
                         .run();
    EXPECT_TRUE(tensors_near(y, f32({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,  //
                                                   3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4})));
    // round_prefer_floor (default): column o reads np.floor(o / 3 + 0.5) clamped to 1 -> [0, 0, 1, 1, 1, 1]
    const Tensor rounded = OpTester("Resize", 13)
                               .input(f32({1, 1, 1, 2}, {1, 2}))
                               .omit()
                               .constant(f32({4}, {1, 1, 1, 3}))
                               .attr("coordinate_transformation_mode", "asymmetric")
                               .run();
    EXPECT_TRUE(tensors_near(rounded, f32({1, 1, 1, 6}, {1, 1, 2, 2, 2, 2})));
}

TEST(ImageOps, ResizeLinearHalfPixelAndAlignCorners) {
    // half_pixel, scale 2: w = np.array([1, .75, .25, 0]) per axis (edge-clamped bilinear), as torch
    // F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)
    const Tensor half = OpTester("Resize", 13).input(image()).omit().constant(f32({4}, {1, 1, 2, 2})).attr("mode", "linear").run();
    EXPECT_TRUE(tensors_near(half, f32({1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5,  //
                                                      2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4})));
    // align_corners to sizes 3x3: np.linspace interpolation, [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]
    const Tensor corners = OpTester("Resize", 13)
                               .input(image())
                               .omit()
                               .omit()
                               .constant(i64({4}, {1, 1, 3, 3}))
                               .attr("mode", "linear")
                               .attr("coordinate_transformation_mode", "align_corners")
                               .run();
    EXPECT_TRUE(tensors_near(corners, f32({1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4})));
}

TEST(ImageOps, ResizeAxesAndAspectRatio) {
    // axes [3], sizes [4], not_larger from (2, 2): scale 2 on axis 3 only -> x.repeat(2, axis=3)
    const Tensor y = OpTester("Resize", 18)
                         .input(image())
                         .omit()
                         .omit()
                         .constant(i64({1}, {4}))
                         .ints("axes", {3})
                         .attr("keep_aspect_ratio_policy", "not_larger")
                         .attr("coordinate_transformation_mode", "asymmetric")
                         .run();
    EXPECT_TRUE(tensors_near(y, f32({1, 1, 2, 4}, {1, 1, 2, 2, 3, 3, 4, 4})));
}

TEST(ImageOps, UpsampleNearest) {
    // Upsample-9: x.repeat(2, axis=2).repeat(2, axis=3)
    const Tensor y = OpTester("Upsample", 9).input(image()).constant(f32({4}, {1, 1, 2, 2})).run();
    EXPECT_TRUE(tensors_near(y, f32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4})));
}

TEST(ImageOps, ResizeRejectsBadAttributesAndInputs) {
    EXPECT_THROW_MESSAGE(
        OpTester("Resize", 13).input(image()).omit().constant(f32({4}, {1, 1, 2, 2})).attr("mode", "area").run(),
        ModelError, "attribute 'mode' must be 'nearest', 'linear' or 'cubic', but it is 'area'");
    EXPECT_THROW_MESSAGE(OpTester("Resize", 13).input(image()).omit().constant(f32({2}, {2, 2})).run(), ModelError,
                         "scales must have 4 elements, but it has 2");
    EXPECT_THROW_MESSAGE(OpTester("Resize", 13).input(image()).omit().omit().omit().run(), ModelError,
                         "exactly one of 'scales' and 'sizes' must be given");
}

Tensor bytes(const std::string& data) {
    return Tensor::from_bytes(DataType::kUInt8, {static_cast<int64_t>(data.size())}, data.data(), data.size());
}

// A 2x1 (width x height) 24-bit bottom-up BMP: pixels (R, G, B) = (10, 20, 30) and (40, 50, 60).
std::string tiny_bmp() {
    std::string header(54, '\0');
    auto put = [&](std::size_t at, uint32_t value, int bytes) {
        for (int i = 0; i < bytes; ++i) header[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
    };
    header[0] = 'B';
    header[1] = 'M';
    put(2, 54 + 8, 4);
    put(10, 54, 4);
    put(14, 40, 4);
    put(18, 2, 4);
    put(22, 1, 4);
    put(26, 1, 2);
    put(28, 24, 2);
    const std::string pixels = {30, 20, 10, 60, 50, 40, 0, 0};  // BGR, row padded to 8 bytes
    return header + pixels;
}

TEST(ImageDecoderOp, DecodesBmpAndPnmToRgbBgrOrGray) {
    const Tensor rgb = OpTester("ImageDecoder", 20).input(bytes(tiny_bmp())).run();
    EXPECT_EQ(rgb.shape(), (Shape{1, 2, 3}));
    EXPECT_EQ(testing::values_of(rgb), (std::vector<double>{10, 20, 30, 40, 50, 60}));
    const Tensor bgr = OpTester("ImageDecoder", 20).input(bytes(tiny_bmp())).attr("pixel_format", "BGR").run();
    EXPECT_EQ(testing::values_of(bgr), (std::vector<double>{30, 20, 10, 60, 50, 40}));
    const std::string pnm = std::string("P6\n# comment\n1 2\n255\n") + std::string{1, 2, 3, 4, 5, 6};
    const Tensor image = OpTester("ImageDecoder", 20).input(bytes(pnm)).run();
    EXPECT_EQ(image.shape(), (Shape{2, 1, 3}));
    EXPECT_EQ(testing::values_of(image), (std::vector<double>{1, 2, 3, 4, 5, 6}));
    // Gray: (10 * 299 + 20 * 587 + 30 * 114 + 500) / 1000 = 18
    const Tensor gray = OpTester("ImageDecoder", 20).input(bytes(tiny_bmp())).attr("pixel_format", "Grayscale").run();
    EXPECT_EQ(gray.shape(), (Shape{1, 2, 1}));
    EXPECT_EQ(testing::values_of(gray)[0], 18);
}

TEST(ImageDecoderOp, RejectsUnknownFormatsTruncatedStreamsAndBadAttributes) {
    EXPECT_THROW_MESSAGE(OpTester("ImageDecoder", 20).input(bytes("GIF89a....")).run(), ModelError,
                         "the stream is no BMP, PNM, JPEG, PNG, TIFF, WebP or JPEG 2000 image");
    EXPECT_THROW_MESSAGE(OpTester("ImageDecoder", 20).input(bytes(tiny_bmp().substr(0, 58))).run(), ModelError,
                         "BMP stream cannot be decoded: truncated pixel data");
    EXPECT_THROW_MESSAGE(OpTester("ImageDecoder", 20).input(bytes(tiny_bmp())).attr("pixel_format", "CMYK").run(),
                         ModelError, "attribute 'pixel_format' must be RGB, BGR or Grayscale, but it is 'CMYK'");
}

TEST(ImageDecoderOp, DecodesEveryFormatThroughItsCodecAsPillowDoes) {
    for (const char* format : {"PNG", "PNG RGBA", "TIFF", "WebP", "JPEG 2000"}) {
        SCOPED_TRACE(format);
        const Tensor rgb = OpTester("ImageDecoder", 20).input(bytes(encoded_images().at(format))).run();
        EXPECT_EQ(rgb.shape(), (Shape{2, 4, 3}));
        EXPECT_EQ(testing::values_of(rgb), kEncodedImagePixels);
    }
    // Lossy JPEG: the values Pillow decodes (libjpeg's islow DCT and fancy upsampling), and its
    // convert("L") luma for Grayscale.
    const std::string jpeg = encoded_images().at("JPEG");
    EXPECT_EQ(testing::values_of(OpTester("ImageDecoder", 20).input(bytes(jpeg)).run()),
              (std::vector<double>{80, 85, 21, 153, 158, 94,  32, 18, 69, 156, 142, 193,
                                   24, 29, 0,  203, 208, 144, 4,  0,  41, 136, 122, 173}));
    const Tensor gray = OpTester("ImageDecoder", 20).input(bytes(jpeg)).attr("pixel_format", "Grayscale").run();
    EXPECT_EQ(gray.shape(), (Shape{2, 4, 1}));
    EXPECT_EQ(testing::values_of(gray), (std::vector<double>{76, 149, 28, 152, 24, 199, 6, 132}));
    const Tensor bgr = OpTester("ImageDecoder", 20).input(bytes(jpeg)).attr("pixel_format", "BGR").run();
    EXPECT_EQ(testing::values_of(bgr)[0], 21);
    // A gray PNG is replicated to RGB.
    const std::vector<double> gray_png =
        testing::values_of(OpTester("ImageDecoder", 20).input(bytes(encoded_images().at("PNG gray"))).run());
    EXPECT_EQ(gray_png, (std::vector<double>{76, 76, 76, 150, 150, 150, 29, 29, 29, 150, 150, 150,
                                             18, 18, 18, 200, 200, 200, 0,  0,  0,  136, 136, 136}));
}

TEST(ImageDecoderOp, CorruptStreamsOfEveryFormatAreOneLineErrors) {
    for (const auto& [format, encoded] : encoded_images()) {
        if (format == "PNG gray" || format == "PNG RGBA") continue;
        // The signature survives; the rest is cut short or overwritten.
        for (const std::string& stream : {encoded.substr(0, 16), encoded.substr(0, encoded.size() / 2),
                                          encoded.substr(0, 12) + std::string(encoded.size() - 12, '\x5a')}) {
            SCOPED_TRACE(format + " of " + std::to_string(stream.size()) + " bytes");
            try {
                OpTester("ImageDecoder", 20).input(bytes(stream)).run();
                ADD_FAILURE() << "decoded";
            } catch (const ModelError& error) {
                EXPECT_THAT(error.what(), ::testing::HasSubstr(format + " stream cannot be decoded: "));
                EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
            }
        }
    }
}

}  // namespace
}  // namespace polygraphy::ref
