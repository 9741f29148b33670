#include "common/install_layout.h"

#include <dlfcn.h>

namespace polygraphy::install_layout {

std::filesystem::path library_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&library_folder), &info) == 0 || !info.dli_fname) return {};
    std::error_code error;
    std::filesystem::path library = std::filesystem::weakly_canonical(std::filesystem::path(info.dli_fname), error);
    if (error) library = std::filesystem::path(info.dli_fname);
    return library.parent_path();
}

std::filesystem::path private_folder() {
    const std::filesystem::path folder = library_folder();
    return folder.empty() ? folder : folder / "polygraphy";
}

}  // namespace polygraphy::install_layout
