// NumPy .npy files (the payload of Polygraphy's JSON arrays), read and written without numpy.
//
// Reading accepts format versions 1.0, 2.0 and 3.0; little-, big- and not-applicable-endian descrs
// ('<f4', '>f4', '|b1', '|i1', '|u1', '<f2', '<f8', '<c8', '<c16', '<i2'...'<u8'); fortran_order
// True (converted to C order); '<U<n>' / '>U<n>' (UTF-32, stored as UTF-8) and '|S<n>' (bytes)
// arrays as kString tensors with trailing NULs stripped, as numpy does. Object arrays (pickles),
// structured and datetime dtypes are refused with FormatError.
//
// Writing produces exactly what numpy 1.24's np.save(allow_pickle=False) writes: format 1.0 (2.0 only
// for headers over 64 KiB), header "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
// followed by numpy's spare space for the first axis, space padding and '\n' so that the data
// starts at a multiple of 64 bytes, then the little-endian C-order data.
// Types numpy has no descr for are widened, losslessly, with a verbose log line:
//   bfloat16 and the float8 variants -> '<f4' (float32; every value is exact),
//   int4 -> '|i1' (int8), uint4 -> '|u1' (uint8),
//   kString -> '<U<n>' with n the longest element in code points (at least 1; invalid UTF-8 bytes
//   become U+FFFD).
// So such a tensor loads back as float32 / int8 / uint8 (cast it back if the exact type matters).
//
// Every length in the input is untrusted: shapes are checked for overflow and the payload must be
// exactly as long as the shape needs. All problems throw FormatError with a one-line message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "polygraphy/common/tensor.h"

namespace polygraphy::npy {

/// Receives output bytes in order (chunks of any size).
using ByteSink = std::function<void(const void* data, std::size_t nbytes)>;

/// Parses a complete .npy file held in memory. Throws FormatError.
Tensor load(const void* data, std::size_t nbytes);
/// Like load(), but a tensor whose data can be used in place (little-endian, C order, numeric
/// other than bool, aligned to its element size) views `data` instead of copying it, keeping
/// `owner` (which must keep `data` valid) alive; others are decoded into a buffer of their own. The
/// view must not be written to when `data` is read-only (a file mapping).
Tensor load_view(const void* data, std::size_t nbytes, const std::shared_ptr<const void>& owner);
/// Reads a .npy file. Throws FormatError naming the file, PolygraphyException when it cannot be read.
Tensor load_file(const std::string& path);

/// Decodes base64 text holding a complete .npy file straight into the tensor's buffer (no
/// intermediate copy of the payload). `progress` as in base64::decode_to.
Tensor load_base64(std::string_view text, const std::function<void(std::size_t consumed)>& progress = {});

/// For readers that find the end of a huge string by arithmetic instead of scanning: the length of
/// the base64 text of a complete .npy file starting at `text` (of which `available` characters are
/// readable), judged from its header alone; nullopt when the header cannot be read. The caller must
/// still check that the text really ends there; load_base64 validates everything.
std::optional<std::size_t> base64_length_hint(const char* text, std::size_t available);

/// The bytes np.save would write for `tensor` (after the widening described above).
std::string save(const Tensor& tensor);
/// Streams the same bytes to `sink` in chunks (never the whole file at once).
void save_to(const Tensor& tensor, const ByteSink& sink);
/// Streams base64 of the same bytes; `sink` receives text chunks (see base64::StreamEncoder).
void save_base64(const Tensor& tensor, const std::function<void(const char* chars, std::size_t count)>& sink);
/// Writes a .npy file atomically.
void save_file(const Tensor& tensor, const std::string& path);

/// The .npy header (magic, version, length, dict, padding) that save() writes for this dtype/shape.
/// `dtype` must be one numpy knows (see npy_write_dtype); for kString, `string_length` is n of '<U<n>'.
std::string make_header(DataType dtype, const Shape& shape, std::size_t string_length = 1);

/// The dtype a tensor of `dtype` is stored as (identity except for the widening listed above).
DataType npy_write_dtype(DataType dtype);

}  // namespace polygraphy::npy
