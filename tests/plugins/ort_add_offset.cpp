// An ONNX Runtime custom-op library for the tests of --onnxrt-custom-op-libs: operator AddOffset of the
// domain "test.custom", Y = X + offset (float32; attribute `offset`, default 1), written against ONNX
// Runtime's C API only. add_offset_kernel_module.cpp gives the built-in runtime the same operator.
#include <cstring>
#include <vector>

#include <onnxruntime_c_api.h>

namespace {

const OrtApi* g_api = nullptr;

struct AddOffsetKernel {
    float offset = 1.0f;
};

void* create_kernel(const OrtCustomOp*, const OrtApi* api, const OrtKernelInfo* info) {
    auto* kernel = new AddOffsetKernel;
    float offset = 1.0f;
    if (OrtStatus* status = api->KernelInfoGetAttribute_float(info, "offset", &offset))
        api->ReleaseStatus(status);  // absent: the default
    else
        kernel->offset = offset;
    return kernel;
}

const char* op_name(const OrtCustomOp*) {
    return "AddOffset";
}
const char* provider(const OrtCustomOp*) {
    return "CPUExecutionProvider";
}
ONNXTensorElementDataType float_type(const OrtCustomOp*, size_t) {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
size_t one(const OrtCustomOp*) {
    return 1;
}

// Whether a call succeeded (a version-1 kernel cannot report a failure: it leaves the output unwritten).
bool ok(OrtStatus* status) {
    if (status == nullptr) return true;
    g_api->ReleaseStatus(status);
    return false;
}

void compute(void* state, OrtKernelContext* context) {
    const auto* kernel = static_cast<const AddOffsetKernel*>(state);
    const OrtValue* input = nullptr;
    OrtTensorTypeAndShapeInfo* info = nullptr;
    if (!ok(g_api->KernelContext_GetInput(context, 0, &input)) || !ok(g_api->GetTensorTypeAndShape(input, &info)))
        return;
    size_t rank = 0, count = 0;
    std::vector<int64_t> dims;
    const bool shaped = ok(g_api->GetDimensionsCount(info, &rank)) && (dims.resize(rank), true) &&
                        ok(g_api->GetDimensions(info, dims.data(), rank)) &&
                        ok(g_api->GetTensorShapeElementCount(info, &count));
    g_api->ReleaseTensorTypeAndShapeInfo(info);
    void* x = nullptr;
    void* y = nullptr;
    OrtValue* output = nullptr;
    if (!shaped || !ok(g_api->GetTensorMutableData(const_cast<OrtValue*>(input), &x)) ||
        !ok(g_api->KernelContext_GetOutput(context, 0, dims.data(), rank, &output)) ||
        !ok(g_api->GetTensorMutableData(output, &y)))
        return;
    for (size_t i = 0; i < count; ++i) static_cast<float*>(y)[i] = static_cast<const float*>(x)[i] + kernel->offset;
}

void destroy(void* state) {
    delete static_cast<AddOffsetKernel*>(state);
}

OrtCustomOpInputOutputCharacteristic required(const OrtCustomOp*, size_t) {
    return INPUT_OUTPUT_REQUIRED;
}
OrtMemType default_memory(const OrtCustomOp*, size_t) {
    return OrtMemTypeDefault;
}
int variadic_arity(const OrtCustomOp*) {
    return 1;
}
int first_opset(const OrtCustomOp*) {
    return 1;
}
int last_opset(const OrtCustomOp*) {
    return 1 << 30;
}
size_t no_pairs(int** inputs, int** outputs) {
    *inputs = nullptr;
    *outputs = nullptr;
    return 0;
}
void release_pairs(int*, int*) {}

OrtCustomOp make_op() {
    OrtCustomOp op;
    std::memset(&op, 0, sizeof(op));
    op.version = ORT_API_VERSION;  // the header's version; the V2 entry points stay null (ONNX Runtime then uses V1)
    op.CreateKernel = create_kernel;
    op.GetName = op_name;
    op.GetExecutionProviderType = provider;
    op.GetInputType = float_type;
    op.GetInputTypeCount = one;
    op.GetOutputType = float_type;
    op.GetOutputTypeCount = one;
    op.KernelCompute = compute;
    op.KernelDestroy = destroy;
    op.GetInputCharacteristic = required;
    op.GetOutputCharacteristic = required;
    op.GetInputMemoryType = default_memory;
    op.GetVariadicInputMinArity = variadic_arity;
    op.GetVariadicInputHomogeneity = variadic_arity;
    op.GetVariadicOutputMinArity = variadic_arity;
    op.GetVariadicOutputHomogeneity = variadic_arity;
    op.GetStartVersion = first_opset;
    op.GetEndVersion = last_opset;
    op.GetMayInplace = no_pairs;
    op.ReleaseMayInplace = release_pairs;
    op.GetAliasMap = no_pairs;
    op.ReleaseAliasMap = release_pairs;
    return op;
}

OrtCustomOp g_op = make_op();

}  // namespace

extern "C" __attribute__((visibility("default"))) OrtStatus* RegisterCustomOps(OrtSessionOptions* options,
                                                                               const OrtApiBase* api_base) {
    g_api = api_base->GetApi(ORT_API_VERSION);
    OrtCustomOpDomain* domain = nullptr;
    if (OrtStatus* status = g_api->CreateCustomOpDomain("test.custom", &domain)) return status;
    if (OrtStatus* status = g_api->CustomOpDomain_Add(domain, &g_op)) return status;
    return g_api->AddCustomOpDomain(options, domain);
}
