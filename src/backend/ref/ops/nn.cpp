#include "backend/ref/ops/families.h"

namespace polygraphy::ref {

void register_nn_ops(OpRegistry& /*registry*/) {}

}  // namespace polygraphy::ref
