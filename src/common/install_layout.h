// Where the installed files are, found from libpolygraphy's own location so that an installed prefix
// (cmake --install, the .deb) keeps working after it is moved.
#pragma once

#include <filesystem>

namespace polygraphy::install_layout {

/// The folder holding the loaded libpolygraphy (its canonical path), or empty when the dynamic loader
/// cannot say (a static build).
std::filesystem::path library_folder();

/// `<library folder>/polygraphy`: the package's private files (extension modules in plugins/, the bundled
/// ONNX Runtime in onnxruntime/). Empty when library_folder() is.
std::filesystem::path private_folder();

}  // namespace polygraphy::install_layout
