// Large, aligned buffers for tensors and packed weights, and giving back the pages of weights that
// were copied into another layout.
#pragma once

#include <cstddef>
#include <memory>

namespace polygraphy {

/// The size of a transparent huge page.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// An uninitialised buffer of at least `nbytes` bytes, 64-byte aligned, freed with its last owner;
/// null when the memory cannot be had. From 2 MiB on it is mapped directly, 2 MiB-aligned with
/// transparent huge pages requested (the system's default is to give them only where asked): a
/// kernel that streams such a buffer (a model's weights, a planned run's tensors) then takes a TLB
/// miss per 2 MiB instead of one per 4 KiB, and the memory goes back to the system when freed.
std::shared_ptr<void> allocate_aligned(std::size_t nbytes);

/// When [data, data + nbytes) lies in a mapping of a file (weights in a model's external data file),
/// asks the kernel to drop its whole pages from this process now (MADV_PAGEOUT): they stay in the
/// file and are read again only if touched. For the source of a copy that is not read again (weights
/// packed into another layout), so that the weights are not held twice. Memory of no file (weights
/// inside the model, converted copies) is left alone: it could only go to swap. Returns the bytes
/// given back.
std::size_t release_file_pages(const void* data, std::size_t nbytes);

}  // namespace polygraphy
