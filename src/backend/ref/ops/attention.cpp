// ONNX Runtime's fused attention operators (com.microsoft): Attention, MultiHeadAttention and
// GroupQueryAttention (being written: none registered yet).
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {

void register_attention_ops(OpRegistry& registry) {
    (void)registry;
}

}  // namespace polygraphy::ref
