// The plain convolution loops (conv_reference.h).
#include "backend/ref/compute/conv_reference.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"

namespace polygraphy::ref::conv {
namespace {

/// Offsets of every kernel tap: taps[t][d] is the tap's index along spatial dim d.
std::vector<std::vector<int64_t>> kernel_taps(const std::vector<int64_t>& kernel) {
    std::vector<std::vector<int64_t>> taps;
    std::vector<int64_t> index(kernel.size(), 0);
    const int64_t count = product(kernel);
    for (int64_t t = 0; t < count; ++t) {
        taps.push_back(index);
        for (std::size_t d = kernel.size(); d-- > 0;) {
            if (++index[d] < kernel[d]) break;
            index[d] = 0;
        }
    }
    return taps;
}

/// What both reference loops derive from a problem.
struct LoopSizes {
    explicit LoopSizes(const ConvProblem& p)
        : rank(p.geometry.rank()),
          in_size(product(p.geometry.input)),
          out_size(product(p.geometry.output)),
          taps_count(product(p.geometry.kernel)),
          cg(p.in_channels / p.group),
          mg(p.out_channels / p.group) {}
    std::size_t rank;
    int64_t in_size, out_size, taps_count;
    int64_t cg, mg;  // input / output channels per group
};

}  // namespace

template <typename T>
void conv_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads) {
    const Geometry& g = p.geometry;
    const LoopSizes sizes(p);
    const auto taps = kernel_taps(g.kernel);
    onednn::parallel_for(
        p.batch * p.out_channels, num_threads, sizes.out_size * sizes.cg * sizes.taps_count,
        [&](int64_t begin, int64_t end) {
            std::vector<int64_t> out_index(sizes.rank);
            std::vector<int64_t> in_index(sizes.rank);
            for (int64_t nm = begin; nm < end; ++nm) {
                const int64_t n = nm / p.out_channels;
                const int64_t m = nm % p.out_channels;
                const int64_t group = m / sizes.mg;
                T* y_plane = y + nm * sizes.out_size;
                for (int64_t o = 0; o < sizes.out_size; ++o) {
                    int64_t rest = o;
                    for (std::size_t d = sizes.rank; d-- > 0;) {
                        out_index[d] = rest % g.output[d];
                        rest /= g.output[d];
                    }
                    double acc = bias != nullptr ? static_cast<double>(bias[m]) : 0.0;
                    for (int64_t t = 0; t < sizes.taps_count; ++t) {
                        int64_t offset = 0;
                        bool inside = true;
                        for (std::size_t d = 0; d < sizes.rank && inside; ++d) {
                            in_index[d] = out_index[d] * g.strides[d] - g.pad_begin[d] + taps[t][d] * g.dilations[d];
                            inside = in_index[d] >= 0 && in_index[d] < g.input[d];
                            offset = offset * g.input[d] + in_index[d];
                        }
                        if (!inside) continue;
                        for (int64_t c = 0; c < sizes.cg; ++c) {
                            const T xv = x[((n * p.in_channels) + group * sizes.cg + c) * sizes.in_size + offset];
                            const T wv = w[(m * sizes.cg + c) * sizes.taps_count + t];
                            acc += static_cast<double>(xv) * static_cast<double>(wv);
                        }
                    }
                    y_plane[o] = static_cast<T>(acc);
                }
            }
        });
}

template <typename T>
void conv_transpose_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads) {
    const Geometry& g = p.geometry;
    const LoopSizes sizes(p);
    const auto taps = kernel_taps(g.kernel);
    onednn::parallel_for(
        p.batch * p.out_channels, num_threads, sizes.in_size * sizes.cg * sizes.taps_count,
        [&](int64_t begin, int64_t end) {
            std::vector<int64_t> in_index(sizes.rank);
            std::vector<double> acc(static_cast<std::size_t>(sizes.out_size));
            for (int64_t nm = begin; nm < end; ++nm) {
                const int64_t n = nm / p.out_channels;
                const int64_t m = nm % p.out_channels;
                const int64_t group = m / sizes.mg;
                const int64_t m_in_group = m % sizes.mg;
                std::fill(acc.begin(), acc.end(), bias != nullptr ? static_cast<double>(bias[m]) : 0.0);
                for (int64_t c = 0; c < sizes.cg; ++c) {
                    const int64_t channel = group * sizes.cg + c;
                    const T* x_plane = x + (n * p.in_channels + channel) * sizes.in_size;
                    const T* w_taps = w + (channel * sizes.mg + m_in_group) * sizes.taps_count;
                    for (int64_t i = 0; i < sizes.in_size; ++i) {
                        int64_t rest = i;
                        for (std::size_t d = sizes.rank; d-- > 0;) {
                            in_index[d] = rest % g.input[d];
                            rest /= g.input[d];
                        }
                        const double xv = static_cast<double>(x_plane[i]);
                        for (int64_t t = 0; t < sizes.taps_count; ++t) {
                            int64_t offset = 0;
                            bool inside = true;
                            for (std::size_t d = 0; d < sizes.rank && inside; ++d) {
                                const int64_t pos =
                                    in_index[d] * g.strides[d] - g.pad_begin[d] + taps[t][d] * g.dilations[d];
                                inside = pos >= 0 && pos < g.output[d];
                                offset = offset * g.output[d] + pos;
                            }
                            if (inside) acc[static_cast<std::size_t>(offset)] += xv * static_cast<double>(w_taps[t]);
                        }
                    }
                }
                T* y_plane = y + nm * sizes.out_size;
                for (int64_t o = 0; o < sizes.out_size; ++o)
                    y_plane[o] = static_cast<T>(acc[static_cast<std::size_t>(o)]);
            }
        });
}

template void conv_reference<float>(const ConvProblem&, const float*, const float*, const float*, float*, int);
template void conv_reference<double>(const ConvProblem&, const double*, const double*, const double*, double*, int);
template void conv_transpose_reference<float>(const ConvProblem&, const float*, const float*, const float*, float*,
                                              int);
template void conv_transpose_reference<double>(const ConvProblem&, const double*, const double*, const double*, double*,
                                               int);

}  // namespace polygraphy::ref::conv
