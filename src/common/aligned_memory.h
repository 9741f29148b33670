// Large, aligned buffers for tensors and packed weights.
#pragma once

#include <cstddef>
#include <memory>

namespace polygraphy {

/// An uninitialised buffer of at least `nbytes` bytes, 64-byte aligned, freed with its last owner;
/// null when the memory cannot be had. From 4 MiB on it is mapped directly, 2 MiB-aligned with
/// transparent huge pages requested (the system's default is to give them only where asked): a
/// kernel that streams such a buffer (a model's weights, a planned run's tensors) then takes a TLB
/// miss per 2 MiB instead of one per 4 KiB, and the memory goes back to the system when freed.
std::shared_ptr<void> allocate_aligned(std::size_t nbytes);

}  // namespace polygraphy
