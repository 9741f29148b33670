// Fuzzes TensorProto decoding (include/polygraphy/backend/onnx/tensor_proto.h): tensor_from_proto
// on a parsed TensorProto, and tensor_from_pb_file on the same bytes as a file, which must agree;
// every decoded tensor must survive tensor_to_proto -> tensor_from_proto.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_support.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"

namespace {

using namespace polygraphy;

// An in-memory file that tensor_from_pb_file reads by path (/proc/self/fd/N), rewritten per input.
class MemoryFile {
public:
    MemoryFile() : fd_(memfd_create("tensor.pb", 0)) {
        if (fd_ < 0) polygraphy::fuzz::check_failed("memfd_create", __FILE__, __LINE__);
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    const std::string& write(const uint8_t* data, std::size_t size) {
        FUZZ_CHECK(ftruncate(fd_, 0) == 0);
        std::size_t done = 0;
        while (done < size) {
            const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
            FUZZ_CHECK(n > 0);
            done += static_cast<std::size_t>(n);
        }
        return path_;
    }

private:
    int fd_;
    std::string path_;
};

std::optional<Tensor> try_decode(const onnx::TensorProto& proto) {
    try {
        return tensor_from_proto(proto);
    } catch (const PolygraphyException&) {
        return std::nullopt;
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    onnx::TensorProto proto;
    std::optional<Tensor> tensor;
    if (proto.ParseFromArray(data, static_cast<int>(size))) {
        tensor = try_decode(proto);
        if (tensor) {
            polygraphy::fuzz::touch(*tensor);
            // Round trip through raw_data (string_data for strings).
            const onnx::TensorProto encoded = tensor_to_proto(*tensor, proto.name());
            const std::optional<Tensor> decoded = try_decode(encoded);
            FUZZ_CHECK(decoded && decoded->equals(*tensor));
        }
    }

    // The file reader parses with its own stream settings; when both accept, they must agree.
    static MemoryFile file;
    const std::string& path = file.write(data, size);
    try {
        std::string name;
        const Tensor from_file = tensor_from_pb_file(path, &name);
        polygraphy::fuzz::touch(from_file);
        if (tensor) FUZZ_CHECK(from_file.equals(*tensor) && name == proto.name());
    } catch (const PolygraphyException&) {
    }
    return 0;
}
