#include "backend/ref/compute/image_codecs.h"

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <jerror.h>
#include <jpeglib.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "polygraphy/common/exception.h"

namespace polygraphy::ref {
namespace {

constexpr int64_t kMaxSide = 65535;
constexpr int64_t kMaxPixels = int64_t{1} << 28;

[[noreturn]] void corrupt(ImageFormat format, const std::string& why) {
    throw InputError(fmt::format("{} stream cannot be decoded: {}", image_format_name(format), why));
}

// An image of this size, checked against the limits before anything is allocated.
DecodedImage sized_image(ImageFormat format, int64_t width, int64_t height) {
    if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide || width * height > kMaxPixels)
        corrupt(format, fmt::format("image size {}x{} is invalid or too large", width, height));
    DecodedImage image;
    image.width = width;
    image.height = height;
    image.rgb.resize(static_cast<std::size_t>(width * height * 3));
    return image;
}

// ---- BMP and PNM (by hand) -----------------------------------------------------------------------

uint32_t little_endian(const uint8_t* p, int bytes) {
    uint32_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
    return value;
}

// Uncompressed BMP (BITMAPINFOHEADER or newer, 24 or 32 bits per pixel, bottom-up or top-down).
DecodedImage decode_bmp(const uint8_t* data, std::size_t size) {
    const ImageFormat format = ImageFormat::kBmp;
    if (size < 54) corrupt(format, "truncated header");
    const uint32_t offset = little_endian(data + 10, 4);
    const auto width = static_cast<int32_t>(little_endian(data + 18, 4));
    const auto height = static_cast<int32_t>(little_endian(data + 22, 4));
    const uint32_t bits = little_endian(data + 28, 2), compression = little_endian(data + 30, 4);
    if ((bits != 24 && bits != 32) || (compression != 0 && compression != 3))
        throw UnsupportedError(
            fmt::format("only uncompressed 24- and 32-bit BMP images are supported (this one has "
                        "{} bits per pixel, compression {})",
                        bits, compression));
    if (height == std::numeric_limits<int32_t>::min()) corrupt(format, "invalid height");
    DecodedImage image = sized_image(format, width, std::abs(height));
    const std::size_t stride = (static_cast<std::size_t>(width) * (bits / 8) + 3) / 4 * 4;
    if (offset > size || stride * static_cast<std::size_t>(image.height) > size - offset)
        corrupt(format, "truncated pixel data");
    for (int64_t row = 0; row < image.height; ++row) {
        const int64_t source_row = height > 0 ? image.height - 1 - row : row;  // positive height: bottom-up
        const uint8_t* pixel = data + offset + static_cast<std::size_t>(source_row) * stride;
        for (int64_t x = 0; x < image.width; ++x, pixel += bits / 8) {
            uint8_t* out = &image.rgb[static_cast<std::size_t>((row * image.width + x) * 3)];
            out[0] = pixel[2];  // stored as BGR(A)
            out[1] = pixel[1];
            out[2] = pixel[0];
        }
    }
    return image;
}

// Binary PNM: P6 (RGB) and P5 (gray), maxval up to 255.
DecodedImage decode_pnm(const uint8_t* data, std::size_t size) {
    const ImageFormat format = ImageFormat::kPnm;
    std::size_t at = 2;
    auto next_number = [&]() -> int64_t {
        while (at < size) {
            if (data[at] == '#') {
                while (at < size && data[at] != '\n') ++at;
            } else if (std::isspace(data[at])) {
                ++at;
            } else {
                break;
            }
        }
        int64_t value = 0;
        std::size_t digits = 0;
        while (at < size && std::isdigit(data[at]) && digits < 9) value = value * 10 + (data[at++] - '0'), ++digits;
        if (digits == 0) corrupt(format, "malformed header");
        return value;
    };
    const bool color = data[1] == '6';
    const int64_t width = next_number();
    const int64_t height = next_number();
    const int64_t maxval = next_number();
    ++at;  // the single whitespace before the pixels
    if (maxval <= 0 || maxval > 255)
        throw UnsupportedError(fmt::format("only 8-bit PNM images are supported (maxval {})", maxval));
    DecodedImage image = sized_image(format, width, height);
    const std::size_t channels = color ? 3 : 1;
    const auto pixels = static_cast<std::size_t>(width * height);
    if (at > size || size - at < pixels * channels) corrupt(format, "truncated pixel data");
    for (std::size_t i = 0; i < pixels; ++i)
        for (std::size_t c = 0; c < 3; ++c) {
            const uint32_t value = data[at + i * channels + (color ? c : 0)];
            image.rgb[i * 3 + c] = static_cast<uint8_t>(maxval == 255 ? value : value * 255 / maxval);
        }
    return image;
}

// ---- JPEG (libjpeg-turbo) ------------------------------------------------------------------------

struct JpegErrors {
    jpeg_error_mgr manager;  // first: libjpeg hands back a pointer to it
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    bool truncated = false;  // libjpeg only warns, filling the missing rows with gray
};

[[noreturn]] void jpeg_error_exit(j_common_ptr info) {
    auto* errors = reinterpret_cast<JpegErrors*>(info->err);
    (*info->err->format_message)(info, errors->message);
    std::longjmp(errors->jump, 1);
}

void jpeg_warning(j_common_ptr info, int level) {
    if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<JpegErrors*>(info->err)->truncated = true;
}

// Runs libjpeg on `info`; false when it reported an error (in errors.message). Kept apart from
// decode_jpeg so that no local variable lives across the setjmp.
bool read_jpeg(jpeg_decompress_struct& info, JpegErrors& errors, const uint8_t* data, std::size_t size,
               DecodedImage& image, std::string& refusal) {
    if (setjmp(errors.jump)) return false;
    jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
    jpeg_read_header(&info, TRUE);
    if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
        refusal = "CMYK and YCCK JPEG images are not supported";
        return true;
    }
    // Pillow decodes with libjpeg's defaults too: islow DCT and fancy upsampling.
    info.out_color_space = JCS_RGB;
    jpeg_calc_output_dimensions(&info);
    const int64_t width = info.output_width, height = info.output_height;
    if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide || width * height > kMaxPixels ||
        info.output_components != 3) {
        refusal = fmt::format("image size {}x{} is invalid or too large", width, height);
        return true;
    }
    image.width = width;
    image.height = height;
    image.rgb.resize(static_cast<std::size_t>(width * height * 3));
    jpeg_start_decompress(&info);
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = &image.rgb[static_cast<std::size_t>(info.output_scanline) * info.output_width * 3];
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    return true;
}

DecodedImage decode_jpeg(const uint8_t* data, std::size_t size) {
    jpeg_decompress_struct info{};
    JpegErrors errors{};
    info.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = jpeg_error_exit;
    errors.manager.emit_message = jpeg_warning;
    jpeg_create_decompress(&info);
    DecodedImage image;
    std::string refusal;
    const bool read = read_jpeg(info, errors, data, size, image, refusal);
    jpeg_destroy_decompress(&info);
    if (!read) corrupt(ImageFormat::kJpeg, errors.message);
    // Pillow refuses a truncated file too (LOAD_TRUNCATED_IMAGES is off by default).
    if (errors.truncated) corrupt(ImageFormat::kJpeg, "premature end of data");
    if (refusal.rfind("CMYK", 0) == 0) throw UnsupportedError(refusal);
    if (!refusal.empty()) corrupt(ImageFormat::kJpeg, refusal);
    return image;
}

// ---- PNG (libpng's simplified API: no setjmp, errors in the image's message) ---------------------

DecodedImage decode_png(const uint8_t* data, std::size_t size) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, data, size)) corrupt(ImageFormat::kPng, png.message);
    // Read with alpha and drop it (Pillow's convert("RGB") drops it; libpng would composite it).
    png.format = PNG_FORMAT_RGBA;
    const int64_t width = png.width, height = png.height;
    if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide || width * height > kMaxPixels) {
        png_image_free(&png);
        corrupt(ImageFormat::kPng, fmt::format("image size {}x{} is invalid or too large", width, height));
    }
    std::vector<uint8_t> rgba(static_cast<std::size_t>(width * height * 4));
    if (!png_image_finish_read(&png, nullptr, rgba.data(), 0, nullptr)) {
        const std::string why = png.message;
        png_image_free(&png);
        corrupt(ImageFormat::kPng, why);
    }
    DecodedImage image = sized_image(ImageFormat::kPng, width, height);
    for (std::size_t i = 0, pixels = static_cast<std::size_t>(width * height); i < pixels; ++i)
        std::memcpy(&image.rgb[i * 3], &rgba[i * 4], 3);
    return image;
}

// ---- TIFF (libtiff, read from memory) ------------------------------------------------------------

struct MemoryFile {
    const uint8_t* data;
    toff_t size;
    toff_t position = 0;
    std::string error;
};

tmsize_t tiff_read(thandle_t handle, void* buffer, tmsize_t count) {
    auto* file = static_cast<MemoryFile*>(handle);
    if (count < 0 || file->position >= file->size) return 0;
    const toff_t n = std::min<toff_t>(static_cast<toff_t>(count), file->size - file->position);
    std::memcpy(buffer, file->data + file->position, n);
    file->position += n;
    return static_cast<tmsize_t>(n);
}
tmsize_t tiff_write(thandle_t /*handle*/, void* /*buffer*/, tmsize_t /*count*/) {
    return 0;
}
toff_t tiff_seek(thandle_t handle, toff_t offset, int whence) {
    auto* file = static_cast<MemoryFile*>(handle);
    const toff_t base = whence == SEEK_CUR ? file->position : whence == SEEK_END ? file->size : 0;
    file->position = base + offset;
    return file->position;
}
int tiff_close(thandle_t /*handle*/) {
    return 0;
}
toff_t tiff_size(thandle_t handle) {
    return static_cast<MemoryFile*>(handle)->size;
}
int tiff_map(thandle_t /*handle*/, void** /*base*/, toff_t* /*size*/) {
    return 0;
}
void tiff_unmap(thandle_t /*handle*/, void* /*base*/, toff_t /*size*/) {}

int tiff_error(TIFF* /*tiff*/, void* user_data, const char* module, const char* format, va_list arguments) {
    auto* file = static_cast<MemoryFile*>(user_data);
    if (file->error.empty()) {
        char message[512];
        std::vsnprintf(message, sizeof message, format, arguments);
        file->error = module ? std::string(module) + ": " + message : message;
    }
    return 1;  // handled: libtiff prints nothing
}
int tiff_warning(TIFF* /*tiff*/, void* /*user_data*/, const char* /*module*/, const char* /*format*/,
                 va_list /*arguments*/) {
    return 1;
}

DecodedImage decode_tiff(const uint8_t* data, std::size_t size) {
    MemoryFile file{data, static_cast<toff_t>(size), 0, {}};
    TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_error, &file);
    TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_warning, &file);
    TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(kMaxPixels) * 4);
    TIFF* tiff = TIFFClientOpenExt("stream", "rm", &file, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                                   tiff_map, tiff_unmap, options);
    TIFFOpenOptionsFree(options);
    if (!tiff) corrupt(ImageFormat::kTiff, file.error.empty() ? "not a TIFF file" : file.error);
    uint32_t width = 0, height = 0;
    TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
    TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
    if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide || int64_t{width} * height > kMaxPixels) {
        TIFFClose(tiff);
        corrupt(ImageFormat::kTiff, fmt::format("image size {}x{} is invalid or too large", width, height));
    }
    std::vector<uint32_t> raster(static_cast<std::size_t>(width) * height);
    const int read = TIFFReadRGBAImageOriented(tiff, width, height, raster.data(), ORIENTATION_TOPLEFT, 0);
    TIFFClose(tiff);
    if (!read) corrupt(ImageFormat::kTiff, file.error.empty() ? "unreadable pixel data" : file.error);
    DecodedImage image = sized_image(ImageFormat::kTiff, width, height);
    for (std::size_t i = 0; i < raster.size(); ++i) {
        image.rgb[i * 3] = static_cast<uint8_t>(TIFFGetR(raster[i]));
        image.rgb[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
        image.rgb[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
    }
    return image;
}

// ---- WebP (libwebp) --------------------------------------------------------------------------------

DecodedImage decode_webp(const uint8_t* data, std::size_t size) {
    int width = 0, height = 0;
    if (!WebPGetInfo(data, size, &width, &height)) corrupt(ImageFormat::kWebp, "invalid header");
    DecodedImage image = sized_image(ImageFormat::kWebp, width, height);
    // Decoded as RGBA and the alpha dropped, as Pillow decodes (RGB values are the same either way).
    std::vector<uint8_t> rgba(static_cast<std::size_t>(width) * height * 4);
    if (!WebPDecodeRGBAInto(data, size, rgba.data(), rgba.size(), width * 4))
        corrupt(ImageFormat::kWebp, "corrupt or truncated bitstream");
    for (std::size_t i = 0, pixels = static_cast<std::size_t>(width) * height; i < pixels; ++i)
        std::memcpy(&image.rgb[i * 3], &rgba[i * 4], 3);
    return image;
}

// ---- JPEG 2000 (OpenJPEG) --------------------------------------------------------------------------

struct OpjMemory {
    const uint8_t* data;
    OPJ_UINT64 size;
    OPJ_UINT64 position = 0;
    std::string error;
};

OPJ_SIZE_T opj_memory_read(void* buffer, OPJ_SIZE_T count, void* user) {
    auto* memory = static_cast<OpjMemory*>(user);
    if (memory->position >= memory->size) return static_cast<OPJ_SIZE_T>(-1);
    const OPJ_SIZE_T n = static_cast<OPJ_SIZE_T>(std::min<OPJ_UINT64>(count, memory->size - memory->position));
    std::memcpy(buffer, memory->data + memory->position, n);
    memory->position += n;
    return n;
}
OPJ_OFF_T opj_memory_skip(OPJ_OFF_T count, void* user) {
    auto* memory = static_cast<OpjMemory*>(user);
    if (count < 0) {
        const auto back = std::min<OPJ_UINT64>(static_cast<OPJ_UINT64>(-count), memory->position);
        memory->position -= back;
        return -static_cast<OPJ_OFF_T>(back);
    }
    const auto forward = std::min<OPJ_UINT64>(static_cast<OPJ_UINT64>(count), memory->size - memory->position);
    memory->position += forward;
    return static_cast<OPJ_OFF_T>(forward);
}
OPJ_BOOL opj_memory_seek(OPJ_OFF_T offset, void* user) {
    auto* memory = static_cast<OpjMemory*>(user);
    if (offset < 0 || static_cast<OPJ_UINT64>(offset) > memory->size) return OPJ_FALSE;
    memory->position = static_cast<OPJ_UINT64>(offset);
    return OPJ_TRUE;
}
void opj_record_error(const char* message, void* user) {
    auto* memory = static_cast<OpjMemory*>(user);
    if (memory->error.empty()) {
        memory->error = message;
        while (!memory->error.empty() && std::isspace(static_cast<unsigned char>(memory->error.back())))
            memory->error.pop_back();
    }
}
void opj_quiet(const char* /*message*/, void* /*user*/) {}

DecodedImage decode_jpeg2000(const uint8_t* data, std::size_t size) {
    const ImageFormat format = ImageFormat::kJpeg2000;
    OpjMemory memory{data, size, 0, {}};
    const bool codestream = size >= 2 && data[0] == 0xFF && data[1] == 0x4F;  // a bare J2K codestream
    opj_codec_t* codec = opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
    opj_set_error_handler(codec, opj_record_error, &memory);
    opj_set_warning_handler(codec, opj_quiet, &memory);
    opj_set_info_handler(codec, opj_quiet, &memory);
    opj_stream_t* stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
    opj_stream_set_user_data(stream, &memory, nullptr);
    opj_stream_set_user_data_length(stream, size);
    opj_stream_set_read_function(stream, opj_memory_read);
    opj_stream_set_skip_function(stream, opj_memory_skip);
    opj_stream_set_seek_function(stream, opj_memory_seek);
    opj_dparameters_t parameters;
    opj_set_default_decoder_parameters(&parameters);
    opj_image_t* decoded = nullptr;
    const auto release = [&] {
        if (decoded) opj_image_destroy(decoded);
        opj_stream_destroy(stream);
        opj_destroy_codec(codec);
    };
    // Strict: a truncated codestream is an error, not a partly decoded image.
    bool ok = opj_setup_decoder(codec, &parameters) && opj_decoder_set_strict_mode(codec, OPJ_TRUE) &&
              opj_read_header(stream, codec, &decoded);
    // The header's size is checked before the tiles are decoded (and allocated).
    if (ok && (decoded->x1 <= decoded->x0 || decoded->y1 <= decoded->y0 || decoded->x1 - decoded->x0 > kMaxSide ||
               decoded->y1 - decoded->y0 > kMaxSide)) {
        release();
        corrupt(format, "image size is invalid or too large");
    }
    ok = ok && opj_decode(codec, stream, decoded) && opj_end_decompress(codec, stream);
    if (!ok) {
        const std::string why = memory.error.empty() ? "invalid codestream" : memory.error;
        release();
        corrupt(format, why);
    }
    const OPJ_UINT32 channels = decoded->numcomps;
    std::string unsupported;
    if (channels == 0 || channels > 4) unsupported = fmt::format("{} components", channels);
    for (OPJ_UINT32 c = 0; c < channels && unsupported.empty(); ++c) {
        const opj_image_comp_t& component = decoded->comps[c];
        if (component.dx != 1 || component.dy != 1)
            unsupported = "subsampled components";
        else if (component.prec > 16 || component.sgnd)
            unsupported = "signed or deeper than 16-bit components";
        else if (component.w != decoded->comps[0].w || component.h != decoded->comps[0].h || !component.data)
            unsupported = "components of different sizes";
    }
    if (!unsupported.empty()) {
        release();
        throw UnsupportedError("JPEG 2000 images with " + unsupported + " are not supported");
    }
    const int64_t width = decoded->comps[0].w, height = decoded->comps[0].h;
    DecodedImage image;
    try {
        image = sized_image(format, width, height);
    } catch (...) {
        release();
        throw;
    }
    // Gray (+ alpha) is replicated; RGB(A) kept; alpha dropped. Precisions other than 8 bits are
    // rescaled to 8 bits by shifting, as Pillow does.
    const bool color = channels >= 3;
    for (int c = 0; c < 3; ++c) {
        const opj_image_comp_t& component = decoded->comps[color ? c : 0];
        const int shift = static_cast<int>(component.prec) - 8;
        for (std::size_t i = 0, pixels = static_cast<std::size_t>(width * height); i < pixels; ++i) {
            const int32_t value = component.data[i];
            const int32_t scaled = shift >= 0 ? value >> shift : value << -shift;
            image.rgb[i * 3 + static_cast<std::size_t>(c)] = static_cast<uint8_t>(std::clamp(scaled, 0, 255));
        }
    }
    release();
    return image;
}

}  // namespace

ImageFormat detect_image_format(const uint8_t* data, std::size_t size) {
    const auto starts_with = [&](std::initializer_list<uint8_t> bytes, std::size_t at = 0) {
        if (size < at + bytes.size()) return false;
        return std::equal(bytes.begin(), bytes.end(), data + at);
    };
    if (starts_with({'B', 'M'})) return ImageFormat::kBmp;
    if (starts_with({'P', '5'}) || starts_with({'P', '6'})) return ImageFormat::kPnm;
    if (starts_with({0xFF, 0xD8, 0xFF})) return ImageFormat::kJpeg;
    if (starts_with({0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A})) return ImageFormat::kPng;
    if (starts_with({'I', 'I', 0x2A, 0x00}) || starts_with({'M', 'M', 0x00, 0x2A})) return ImageFormat::kTiff;
    if (starts_with({'R', 'I', 'F', 'F'}) && starts_with({'W', 'E', 'B', 'P'}, 8)) return ImageFormat::kWebp;
    if (starts_with({0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}) ||
        starts_with({0xFF, 0x4F, 0xFF, 0x51}))
        return ImageFormat::kJpeg2000;
    return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat format) {
    switch (format) {
        case ImageFormat::kBmp:
            return "BMP";
        case ImageFormat::kPnm:
            return "PNM";
        case ImageFormat::kJpeg:
            return "JPEG";
        case ImageFormat::kPng:
            return "PNG";
        case ImageFormat::kTiff:
            return "TIFF";
        case ImageFormat::kWebp:
            return "WebP";
        case ImageFormat::kJpeg2000:
            return "JPEG 2000";
        case ImageFormat::kUnknown:
            break;
    }
    return "unknown";
}

DecodedImage decode_image(ImageFormat format, const uint8_t* data, std::size_t size) {
    switch (format) {
        case ImageFormat::kBmp:
            return decode_bmp(data, size);
        case ImageFormat::kPnm:
            return decode_pnm(data, size);
        case ImageFormat::kJpeg:
            return decode_jpeg(data, size);
        case ImageFormat::kPng:
            return decode_png(data, size);
        case ImageFormat::kTiff:
            return decode_tiff(data, size);
        case ImageFormat::kWebp:
            return decode_webp(data, size);
        case ImageFormat::kJpeg2000:
            return decode_jpeg2000(data, size);
        case ImageFormat::kUnknown:
            break;
    }
    throw InternalError("decode_image: unknown format");
}

}  // namespace polygraphy::ref
