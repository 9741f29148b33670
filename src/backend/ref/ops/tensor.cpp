#include "backend/ref/ops/families.h"

namespace polygraphy::ref {

void register_tensor_ops(OpRegistry& /*registry*/) {}

}  // namespace polygraphy::ref
