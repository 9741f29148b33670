#include "backend/ref/ops/families.h"

namespace polygraphy::ref {

void register_conv_ops(OpRegistry& /*registry*/) {}

}  // namespace polygraphy::ref
