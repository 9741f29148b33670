// Fuzzes .npy decoding (include/polygraphy/common/npy.h): npy::load on the raw bytes, and
// npy::load_base64 / base64_length_hint on their base64 text (the path RunResults files take),
// which must agree with it; every accepted array must survive save -> load.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/npy.h"

namespace {

using namespace polygraphy;

std::optional<Tensor> try_load(const uint8_t* data, std::size_t size) {
    try {
        return npy::load(data, size);
    } catch (const FormatError&) {
        return std::nullopt;
    }
}

// Equal dtype, shape and contents. Strings are compared as np.save writes them, since '|S' byte
// strings that are not UTF-8 are written as '<U' with U+FFFD.
bool same(const Tensor& a, const Tensor& b) {
    if (a.dtype() == DataType::kString && b.dtype() == DataType::kString) return npy::save(a) == npy::save(b);
    return a.equals(b);
}

// Touches every element; bool arrays hold only 0/1.
void touch(const Tensor& tensor) {
    polygraphy::fuzz::touch(tensor);
    if (tensor.dtype() != DataType::kBool) return;
    const auto* bytes = static_cast<const uint8_t*>(tensor.data());
    for (std::size_t i = 0; i < tensor.nbytes(); ++i) FUZZ_CHECK(bytes[i] <= 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::optional<Tensor> tensor = try_load(data, size);
    if (tensor) {
        touch(*tensor);
        FUZZ_CHECK(tensor->defined());
    }

    // The base64 path decodes the same bytes in place and must agree exactly.
    const std::string text = base64::encode(data, size);
    std::optional<Tensor> from_text;
    try {
        from_text = npy::load_base64(text);
    } catch (const FormatError&) {
    }
    FUZZ_CHECK(from_text.has_value() == tensor.has_value());
    if (tensor) {
        FUZZ_CHECK(tensor->equals(*from_text));
        // The length hint sizes the string from the header alone; for a valid file it is exact
        // when given (it is not for empty arrays whose header ends in a padded final group: the
        // reader then takes its slow path).
        const auto hint = npy::base64_length_hint(text.data(), text.size());
        FUZZ_CHECK(!hint || *hint == text.size());
    } else {
        // The hint must never claim more text than there is.
        const auto hint = npy::base64_length_hint(text.data(), text.size());
        FUZZ_CHECK(!hint || *hint <= text.size() + 4);
    }

    // Round trip: what np.save would write loads back to the same array, and saving is stable.
    if (tensor) {
        const std::string saved = npy::save(*tensor);
        const std::optional<Tensor> reloaded = try_load(reinterpret_cast<const uint8_t*>(saved.data()), saved.size());
        FUZZ_CHECK(reloaded.has_value());
        FUZZ_CHECK(same(*tensor, *reloaded));
        FUZZ_CHECK(npy::save(*reloaded) == saved);
    }
    return 0;
}
