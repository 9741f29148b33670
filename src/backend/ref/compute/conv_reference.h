// The plain convolution loops: any rank, any group, float64 sums. They run float64 models, more
// than 3 spatial dims and what oneDNN refuses.
#pragma once

#include "backend/ref/compute/conv_problem.h"

namespace polygraphy::ref::conv {

/// y = conv(x, w) + bias (nullptr: none), NCHW, T = float or double.
template <typename T>
void conv_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads);
/// y = conv_transpose(x, w) + bias (nullptr: none), NCHW, T = float or double.
template <typename T>
void conv_transpose_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads);

}  // namespace polygraphy::ref::conv
