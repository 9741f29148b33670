// Protobuf's limits and logging, shared by the ONNX readers and writers (internal to the library).
#pragma once

#include <climits>
#include <cstddef>

namespace polygraphy {

/// The largest message protobuf parses or serializes: 2 GiB - 1.
inline constexpr std::size_t kProtobufLimit = static_cast<std::size_t>(INT_MAX);

/// Sends protobuf's own error reports to the logger (verbose) instead of stderr. Call before parsing;
/// the first call installs the handler.
void route_protobuf_logs();

}  // namespace polygraphy
