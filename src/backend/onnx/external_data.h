// Loading external data, for the loader (internal to the library; see external_data.cpp).
#pragma once

#include <filesystem>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// Loads the external data of every tensor of `model` (graph, subgraphs, functions) from files in
/// `folder`, moving it into raw_data. Throws as OnnxFromPath documents (paths that leave the folder,
/// offsets or lengths that disagree with the file or the tensor).
void load_external_data(onnx::ModelProto& model, const std::filesystem::path& folder);

}  // namespace polygraphy
