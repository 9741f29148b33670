// libonnx 1.12's shape inference, with every operator's inference and data-propagation functions
// wrapped so that none runs with an input it has no type for. libonnx leaves a tensor untyped when
// its producer has no schema (custom and contrib operators, an operator below its first opset) or
// when the producer's own inference failed, and several inference functions (Shape's among them)
// then dereference the null type and crash. The wrapper turns that into an inference error for
// that one node, which libonnx records and goes on from, as it does for any other failed node.
#include "backend/onnx/graph_internal.h"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace polygraphy {
namespace {

// Whether the input at `index` must be there: a single or variadic formal parameter. An optional
// one has no type when it is left out (an empty name), so a null type says nothing there, and
// inference functions test those themselves.
bool input_is_required(const onnx::OpSchema& schema, std::size_t index) {
    const auto& formal = schema.inputs();
    if (formal.empty()) return false;
    const auto& parameter = formal[std::min(index, formal.size() - 1)];
    if (index >= formal.size() && parameter.GetOption() != onnx::OpSchema::Variadic) return false;
    return parameter.GetOption() != onnx::OpSchema::Optional;
}

template <typename Context>
bool lacks_required_input_type(const onnx::OpSchema& schema, const Context& context, std::size_t& missing) {
    for (std::size_t i = 0; i < context.getNumInputs(); ++i) {
        if (context.getInputType(i) == nullptr && input_is_required(schema, i)) {
            missing = i;
            return true;
        }
    }
    return false;
}

int declared_rank(const onnx::InferenceContext& context, std::size_t index) {
    if (index >= context.getNumInputs()) return -1;
    const onnx::TypeProto* type = context.getInputType(index);
    if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return -1;
    return type->tensor_type().shape().dim_size();
}

// What an inference function assumes of its inputs' types without testing it, where a model
// breaking the assumption crashes libonnx 1.12 (each found by fuzzing; RELIABILITY.md).
using Precondition = void (*)(const onnx::InferenceContext&);

template <std::size_t Data, std::size_t Weight>
void same_rank_as_weight(const onnx::InferenceContext& context) {
    // convPoolShapeInference sizes its per-axis attributes by the data's rank and the kernel by the
    // weight's, then indexes one by the other.
    const int data = declared_rank(context, Data);
    const int weight = declared_rank(context, Weight);
    if (data >= 0 && weight >= 0 && data != weight)
        fail_shape_inference("the data has rank ", data, " and the weight rank ", weight);
}

const std::unordered_map<std::string, Precondition>& preconditions() {
    static const std::unordered_map<std::string, Precondition> table = {
        {"Conv", same_rank_as_weight<0, 1>},
        {"ConvInteger", same_rank_as_weight<0, 1>},
        {"ConvTranspose", same_rank_as_weight<0, 1>},
        {"QLinearConv", same_rank_as_weight<0, 3>},
    };
    return table;
}

void guard_schema(onnx::OpSchema& schema) {
    // Operators without an inference function are inferred through their function body; giving
    // them one would switch that off.
    if (schema.has_type_and_shape_inference_function()) {
        onnx::InferenceFunction original = schema.GetTypeAndShapeInferenceFunction();
        const onnx::OpSchema* self = &schema;
        Precondition precondition = nullptr;
        if (schema.domain().empty())
            if (auto found = preconditions().find(schema.Name()); found != preconditions().end())
                precondition = found->second;
        schema.TypeAndShapeInferenceFunction([original, self, precondition](onnx::InferenceContext& context) {
            std::size_t missing = 0;
            if (lacks_required_input_type(*self, context, missing))
                fail_type_inference("input ", missing, " of ", self->Name(), " has no type");
            if (precondition) precondition(context);
            original(context);
        });
    }
    if (schema.has_data_propagation_function()) {
        onnx::DataPropagationFunction original = schema.GetDataPropagationFunction();
        const onnx::OpSchema* self = &schema;
        schema.PartialDataPropagationFunction([original, self](onnx::DataPropagationContext& context) {
            std::size_t missing = 0;
            if (lacks_required_input_type(*self, context, missing)) return;  // nothing to propagate
            original(context);
        });
    }
}

void guard_all_schemas() {
    for (const onnx::OpSchema& listed : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
        // The registry hands out const pointers to the schemas it owns (non-const objects), and
        // offers no other way to replace an inference function after registration.
        const onnx::OpSchema* owned =
            onnx::OpSchemaRegistry::Schema(listed.Name(), listed.SinceVersion(), listed.domain());
        if (owned && owned->SinceVersion() == listed.SinceVersion()) guard_schema(const_cast<onnx::OpSchema&>(*owned));
    }
}

}  // namespace

void run_libonnx_inference(onnx::ModelProto& model, bool data_propagation) {
    static std::once_flag guarded;
    std::call_once(guarded, guard_all_schemas);
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, data_propagation);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
}

}  // namespace polygraphy
