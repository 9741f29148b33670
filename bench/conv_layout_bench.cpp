// What keeping convolutions in oneDNN's blocked layout would gain (issue 16): every 2-D Conv of a
// model (batch 1, shapes from shape inference) timed as a oneDNN primitive in two settings:
//   - as the built-in runtime runs it today: pointwise convolutions on the plain NCHW tensors
//     (oneDNN's GEMM, the folded activation not included: the runtime applies it as a separate
//     pass), the others in the layout oneDNN picks (the two reorders around them not included);
//   - with source and result in the 8-channel blocked layout (nChw8c) and the activation that
//     follows the node (Relu, Clip 0..6, SiLU) as a post-op, i.e. a network kept blocked between
//     convolutions, without any reorder.
// Depthwise convolutions run in the runtime's own kernel today; here both settings time oneDNN's.
// The first convolution (3 input channels) has no blocked form and is timed as today in both.
// Prints per-layer and total median thread-CPU milliseconds (CPU time, so that time slices lost to
// other processes on this shared machine do not count).
//
//   OMP_NUM_THREADS=1 build/bench/conv_layout_bench MODEL.onnx [--repeats R] [--layers]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_util.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/tensor_proto.h"

namespace {

using namespace polygraphy;
using dnnl::memory;

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct ConvLayer {
    std::string name;
    memory::dim in_channels, height, width, out_channels, out_height, out_width, group;
    memory::dims kernel, strides, pad_begin, pad_end;
    std::string activation;  // "relu", "clip", "swish" or ""
};

std::vector<int64_t> ints_attr(const onnx::NodeProto& node, const char* name, std::vector<int64_t> fallback) {
    for (const auto& attr : node.attribute())
        if (attr.name() == name) return {attr.ints().begin(), attr.ints().end()};
    return fallback;
}

std::vector<ConvLayer> conv_layers(onnx::ModelProto& model) {
    for (auto& input : *model.mutable_graph()->mutable_input()) {
        auto* dims = input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
        if (!dims->empty()) (*dims)[0].set_dim_value(1);
    }
    infer_shapes(model);
    std::map<std::string, std::vector<int64_t>> shapes;  // static dims (a dynamic one reads 0)
    auto record_shape = [&](const onnx::ValueInfoProto& info) {
        const MetadataEntry entry = metadata_from_value_info(info);
        std::vector<int64_t>& dims = shapes[info.name()];
        if (entry.shape)
            for (const Dim& dim : *entry.shape) dims.push_back(dim.is_dynamic() ? 0 : dim.value);
    };
    for (const auto& info : model.graph().value_info()) record_shape(info);
    for (const auto& input : model.graph().input()) record_shape(input);
    std::map<std::string, std::vector<int64_t>> weights;
    for (const auto& init : model.graph().initializer())
        weights[init.name()] = {init.dims().begin(), init.dims().end()};
    std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
    for (const auto& node : model.graph().node())
        for (const auto& input : node.input()) readers[input].push_back(&node);

    std::vector<ConvLayer> layers;
    for (const auto& node : model.graph().node()) {
        if (node.op_type() != "Conv" || node.input_size() < 2 || !weights.contains(node.input(1))) continue;
        const auto& x = shapes[node.input(0)];
        const auto& w = weights[node.input(1)];
        const auto& y = shapes[node.output(0)];
        if (x.size() != 4 || w.size() != 4 || y.size() != 4) continue;
        ConvLayer layer;
        layer.name = node.name();
        layer.in_channels = x[1];
        layer.height = x[2];
        layer.width = x[3];
        layer.out_channels = w[0];
        layer.out_height = y[2];
        layer.out_width = y[3];
        layer.group = 1;
        for (const auto& attr : node.attribute())
            if (attr.name() == "group") layer.group = attr.i();
        layer.kernel = {w[2], w[3]};
        const std::vector<int64_t> strides = ints_attr(node, "strides", {1, 1});
        const std::vector<int64_t> pads = ints_attr(node, "pads", {0, 0, 0, 0});
        layer.strides = {strides[0], strides[1]};
        layer.pad_begin = {pads[0], pads[1]};
        layer.pad_end = {pads[2], pads[3]};
        const auto& uses = readers[node.output(0)];
        if (uses.size() == 1 && uses[0]->op_type() == "Relu") layer.activation = "relu";
        if (uses.size() == 1 && uses[0]->op_type() == "Clip") layer.activation = "clip";
        if (uses.size() == 2 && (uses[0]->op_type() == "Sigmoid" || uses[1]->op_type() == "Sigmoid"))
            layer.activation = "swish";
        layers.push_back(layer);
    }
    return layers;
}

/// Median thread-CPU milliseconds of one execution of the layer's primitive.
double time_layer(const ConvLayer& l, bool blocked, int repeats, std::string& impl) {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const bool pointwise = l.group == 1 && l.kernel == memory::dims{1, 1} && l.strides == memory::dims{1, 1};
    // Three input channels have no blocked form: the stem runs as today in both settings.
    const bool blocked_here = blocked && l.in_channels % 8 == 0;
    const memory::format_tag today = pointwise ? memory::format_tag::nchw : memory::format_tag::any;
    const memory::format_tag src_tag = blocked_here ? memory::format_tag::nChw8c : today;
    const memory::format_tag dst_tag = blocked ? memory::format_tag::nChw8c : today;
    const memory::desc src({1, l.in_channels, l.height, l.width}, memory::data_type::f32, src_tag);
    const memory::desc dst({1, l.out_channels, l.out_height, l.out_width}, memory::data_type::f32, dst_tag);
    const memory::dims weight_dims =
        l.group > 1 ? memory::dims{l.group, l.out_channels / l.group, l.in_channels / l.group, l.kernel[0], l.kernel[1]}
                    : memory::dims{l.out_channels, l.in_channels, l.kernel[0], l.kernel[1]};
    const memory::desc weights(weight_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc bias({l.out_channels}, memory::data_type::f32, memory::format_tag::x);
    dnnl::primitive_attr attr;
    if (blocked && !l.activation.empty()) {
        dnnl::post_ops ops;
        if (l.activation == "relu") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        if (l.activation == "clip") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
        if (l.activation == "swish") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
        attr.set_post_ops(ops);
    }
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               src, weights, bias, dst, l.strides, l.pad_begin, l.pad_end);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
    impl = pd.impl_info_str();
    dnnl::memory src_memory(pd.src_desc(), engine), weights_memory(pd.weights_desc(), engine),
        bias_memory(bias, engine), dst_memory(pd.dst_desc(), engine);
    std::memset(src_memory.get_data_handle(), 0, pd.src_desc().get_size());
    std::memset(weights_memory.get_data_handle(), 0, pd.weights_desc().get_size());
    std::memset(bias_memory.get_data_handle(), 0, bias.get_size());
    const dnnl::convolution_forward conv(pd);
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const double start = thread_cpu_ms();
        conv.execute(stream, {{DNNL_ARG_SRC, src_memory},
                              {DNNL_ARG_WEIGHTS, weights_memory},
                              {DNNL_ARG_BIAS, bias_memory},
                              {DNNL_ARG_DST, dst_memory}});
        stream.wait();
        times.push_back(thread_cpu_ms() - start);
    }
    return bench::median(times);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: %s MODEL.onnx [--repeats R] [--layers]   (threads: OMP_NUM_THREADS)\n", argv[0]);
        return 2;
    }
    int repeats = 15;
    bool print_layers = false;
    for (int i = 2; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--repeats" && i + 1 < argc)
            repeats = std::max(1, std::atoi(argv[++i]));
        else if (flag == "--layers")
            print_layers = true;
        else {
            std::fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    try {
        onnx::ModelProto model = *OnnxFromPath(argv[1])();
        const std::vector<ConvLayer> layers = conv_layers(model);
        double totals[2] = {0.0, 0.0};
        if (print_layers)
            std::printf("| node | today ms | impl | blocked ms | impl |\n| --- | --- | --- | --- | --- |\n");
        for (const ConvLayer& layer : layers) {
            std::string impl_today, impl_blocked;
            const double today = time_layer(layer, false, repeats, impl_today);
            const double blocked = time_layer(layer, true, repeats, impl_blocked);
            totals[0] += today;
            totals[1] += blocked;
            if (print_layers)
                std::printf("| %s | %.3f | %s | %.3f | %s |\n", layer.name.c_str(), today, impl_today.c_str(), blocked,
                            impl_blocked.c_str());
        }
        std::printf("%s: %zu convolutions, today %.2f ms, kept blocked with post-ops %.2f ms (%.2fx)\n", argv[1],
                    layers.size(), totals[0], totals[1], totals[1] / std::max(totals[0], 1e-9));
    } catch (const std::exception& error) {
        std::fprintf(stderr, "[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
