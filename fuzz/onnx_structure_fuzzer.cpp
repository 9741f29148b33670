// Structure-aware fuzzing of ONNX models (issue 33): a custom mutator that parses the input as an
// onnx::ModelProto and changes its structure (node inputs and outputs, attributes and their types,
// subgraph bodies, op types and domains, tensor names, opset imports, declared shapes), so that
// nearly every input is a model that parses and reaches the passes behind the tools, where
// byte-level mutation mostly breaks the protobuf encoding. The mutator is this project's own
// (onnx_mutator.h); it draws every choice from a std::minstd_rand seeded with libFuzzer's seed, so a
// run is reproducible.
//
// Each input goes, in process, through what the tools do with a model:
//   - load and check: onnx_from_bytes (which runs the node check), find_node_problems and
//     check_nodes directly;
//   - `check lint` (lint_onnx on the model as parsed, unchecked, as the tool does);
//   - `inspect capability` (infer_value_info, check_capability with the built-in runtime's checker);
//   - `surgeon sanitize --fold-constants`, `convert --fp-to-fp16`, shape inference, on copies;
//   - `surgeon extract` (extract_subgraph) with declared and with "auto" boundary types;
//   - `debug diff`'s matcher (match_graphs) against the model itself and a renamed copy;
//   - the built-in runtime's session preparation (never `run`: fuzzed shapes can ask for terabytes).
// Passes that may execute kernels (lint's test inference, capability, folding, fp16, shape inference
// with its runtime fallback, "auto" extraction) only see models whose tensors are all small and
// static and that have no operator whose output size comes from values (kernel_safe below).
//
// Properties checked besides "no crash, only PolygraphyException refuses":
//   - onnx_from_bytes accepts a parsed model exactly when find_node_problems finds nothing, and
//     refuses it with MalformedNodeError (listing the problems) otherwise; check_nodes agrees;
//   - every problem's message starts with "Malformed " and names the node;
//   - a model with problems is refused by every pass that reads nodes (shape inference, folding,
//     fp16, capability's inference, session preparation) and lint reports it as invalid;
//   - a model that passed the check still passes it after folding, fp16 conversion, shape
//     inference and extraction, and after a serialize/parse round trip.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuzz_support.h"
#include "onnx_mutator.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/ref/evaluator.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/comparator/graph_match.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace polygraphy;
using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// ---- what each input goes through ----------------------------------------------------------------

constexpr int64_t kMaxDim = 64;
constexpr int64_t kMaxTotalElements = 2048;  // over all inputs, initializers and constant tensors
constexpr int kMaxRank = 4;

// Operators whose output size comes from input values or attributes (or that loop on a value),
// which a fuzzed model can make astronomically large.
bool grows_from_values(const std::string& op) {
    static const std::vector<std::string> ops = {"ConstantOfShape",
                                                 "Expand",
                                                 "Tile",
                                                 "Range",
                                                 "Resize",
                                                 "Upsample",
                                                 "OneHot",
                                                 "Loop",
                                                 "Pad",
                                                 "CenterCropPad",
                                                 "Col2Im",
                                                 "MaxUnpool",
                                                 "ConvTranspose",
                                                 "RandomNormal",
                                                 "RandomUniform",
                                                 "RandomNormalLike",
                                                 "RandomUniformLike",
                                                 "Multinomial",
                                                 "Bernoulli",
                                                 "Einsum",
                                                 "TfIdfVectorizer",
                                                 "STFT",
                                                 "DFT",
                                                 "MelWeightMatrix",
                                                 "BlackmanWindow",
                                                 "HannWindow",
                                                 "HammingWindow",
                                                 "SequenceInsert",
                                                 "ConcatFromSequence",
                                                 "SplitToSequence",
                                                 "ImageDecoder",
                                                 "StringSplit",
                                                 "RegexFullMatch"};
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

struct Budget {
    int64_t elements = 0;
    bool add(int64_t n) {
        elements += n;
        return n >= 0 && elements <= kMaxTotalElements;
    }
};

bool small_dims(const google::protobuf::RepeatedField<int64_t>& dims, int64_t& numel) {
    if (dims.size() > kMaxRank) return false;
    numel = 1;
    for (int64_t dim : dims) {
        if (dim < 0 || dim > kMaxDim) return false;
        numel *= dim;
    }
    return true;
}

bool small_tensor(const onnx::TensorProto& tensor, Budget& budget) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size()) return false;
    int64_t numel = 0;
    if (!small_dims(tensor.dims(), numel) || !budget.add(numel)) return false;
    // Integer values are often shapes, repeats or pads.
    for (int64_t v : tensor.int64_data())
        if (v < -kMaxDim || v > kMaxDim) return false;
    for (int32_t v : tensor.int32_data())
        if (v < -kMaxDim || v > kMaxDim) return false;
    if (tensor.data_type() == onnx::TensorProto::INT64 || tensor.data_type() == onnx::TensorProto::INT32) {
        const std::string& raw = tensor.raw_data();
        const std::size_t width = tensor.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
        for (std::size_t at = 0; at + width <= raw.size(); at += width) {
            int64_t v = 0;
            if (width == 8)
                std::memcpy(&v, raw.data() + at, 8);
            else {
                int32_t v32 = 0;
                std::memcpy(&v32, raw.data() + at, 4);
                v = v32;
            }
            if (v < -kMaxDim || v > kMaxDim) return false;
        }
    }
    return true;
}

bool small_static_type(const onnx::TypeProto& type, Budget& budget) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
    const auto& shape = type.tensor_type().shape();
    if (shape.dim_size() > kMaxRank) return false;
    int64_t numel = 1;
    for (const auto& dim : shape.dim()) {
        if (!dim.has_dim_value() || dim.dim_value() < 0 || dim.dim_value() > kMaxDim) return false;
        numel *= dim.dim_value();
    }
    return budget.add(numel);
}

bool small_nodes(const Nodes& nodes, Budget& budget, int depth);

bool small_graph(const onnx::GraphProto& graph, Budget& budget, int depth, bool check_inputs) {
    if (depth > 8) return false;
    if (check_inputs)
        for (const auto& input : graph.input())
            if (!small_static_type(input.type(), budget)) return false;
    if (graph.sparse_initializer_size()) return false;
    for (const auto& initializer : graph.initializer())
        if (!small_tensor(initializer, budget)) return false;
    return small_nodes(graph.node(), budget, depth);
}

bool small_nodes(const Nodes& nodes, Budget& budget, int depth) {
    for (const auto& node : nodes) {
        if (grows_from_values(node.op_type())) return false;
        for (const auto& attribute : node.attribute()) {
            if (attribute.has_sparse_tensor() || attribute.sparse_tensors_size()) return false;
            if (attribute.i() < -kMaxDim || attribute.i() > kMaxDim) return false;
            for (int64_t v : attribute.ints())
                if (v < -kMaxDim || v > kMaxDim) return false;
            if (attribute.ints_size() > kMaxRank * 2 + 2) return false;  // a shape of a Constant
            if (attribute.has_t() && !small_tensor(attribute.t(), budget)) return false;
            for (const auto& t : attribute.tensors())
                if (!small_tensor(t, budget)) return false;
            // Subgraph inputs are declared by the node that owns the body (often without shapes).
            if (attribute.has_g() && !small_graph(attribute.g(), budget, depth + 1, false)) return false;
            for (const auto& g : attribute.graphs())
                if (!small_graph(g, budget, depth + 1, false)) return false;
        }
    }
    return true;
}

// Whether passes that execute kernels may see the model: every tensor small and static, no
// operator whose output size a value decides, nothing external.
bool kernel_safe(const onnx::ModelProto& model) {
    Budget budget;
    if (!small_graph(model.graph(), budget, 0, true)) return false;
    for (const auto& function : model.functions())
        if (!small_nodes(function.node(), budget, 0)) return false;
    return true;
}

// Whether the node check finds anything; the first problem is printed, since a caller that asserts
// there is none aborts next.
bool has_problems(const onnx::ModelProto& model) {
    const std::vector<NodeProblem> problems = find_node_problems(model);
    if (!problems.empty()) std::fprintf(stderr, "node check: %s\n", problems.front().message().c_str());
    return !problems.empty();
}

// Runs `pass` and reports whether it threw a PolygraphyException (the documented refusals);
// anything else propagates and is a finding.
template <typename Fn>
bool refused(Fn&& pass) {
    try {
        pass();
    } catch (const PolygraphyException&) {
        return true;
    }
    return false;
}

TensorMap zero_feed(const TensorMetadata& metadata) {
    TensorMap feed;
    for (const auto& [name, entry] : metadata) {
        if (!entry.dtype || !entry.shape || is_shape_dynamic(*entry.shape))
            throw PolygraphyException("no static declaration for " + name);
        Shape shape;
        for (const Dim& dim : *entry.shape) shape.push_back(dim.value);
        feed.set(name, Tensor(*entry.dtype, shape));
    }
    return feed;
}

// `check lint`: the model as parsed, never checked before, as the tool lints it.
void lint(const onnx::ModelProto& model, bool problems, bool safe) {
    LintOptions options;
    options.num_threads = 1;
    if (safe) options.make_feed = zero_feed;
    const LintReport report = lint_onnx(model, options);
    if (problems) FUZZ_CHECK(!report.valid());  // every problem is an exception entry
    (void)report.to_json();
}

// A model with node problems: every pass that reads nodes refuses it.
void malformed_is_refused_everywhere(const onnx::ModelProto& model, bool safe) {
    FUZZ_CHECK(refused([&] { const ref::Session session(model, ref::SessionOptions{1}); }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        infer_value_info(copy);
    }));
    // Never throws for what it cannot infer; a refused declaration (a negative dimension) is a ModelError.
    (void)refused([&] { (void)infer_output_metadata(model, {}); });
    if (!safe) return;  // the refusal is the check at the start, but a wrong guess would run kernels
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        infer_shapes(copy);
    }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        fold_constants(copy);
    }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        convert_to_fp16(copy);
    }));
}

// `surgeon extract` from the graph inputs to (some of) the graph outputs.
void extract(const onnx::ModelProto& model, bool with_auto_types) {
    std::vector<SubgraphTensor> inputs, outputs;
    for (const auto& input : model.graph().input())
        inputs.push_back(with_auto_types ? SubgraphTensor{input.name(), std::nullopt, std::nullopt}
                                         : SubgraphTensor{input.name(), DataType::kFloat32, DynShape{Dim::named("n")}});
    for (const auto& output : model.graph().output()) {
        if (outputs.size() == 2) break;
        outputs.push_back(with_auto_types ? SubgraphTensor{output.name(), std::nullopt, std::nullopt}
                                          : SubgraphTensor{output.name(), DataType::kFloat32, DynShape{}});
    }
    OnnxModel extracted;
    try {
        extracted = extract_subgraph(model, inputs, outputs);
    } catch (const PolygraphyException&) {
        return;
    }
    FUZZ_CHECK(extracted && !has_problems(*extracted));
}

// `debug diff`'s matcher: the model against itself (every pair by name, a with itself) and against a
// copy whose computed tensors are all renamed (the structure stage, over any graph the check lets in).
void match(const onnx::ModelProto& model) {
    try {
        const GraphMatching self = match_graphs(model.graph(), model.graph());
        for (const TensorPair& pair : self.pairs) FUZZ_CHECK(pair.a == pair.b && !pair.b_nodes.empty());
        FUZZ_CHECK(self.unmatched_a.size() == self.unmatched_b.size());
    } catch (const PolygraphyException&) {
    }
    onnx::ModelProto renamed = model;
    auto& graph = *renamed.mutable_graph();
    std::unordered_map<std::string, std::string> names;
    for (const auto& node : model.graph().node())
        for (const auto& output : node.output())
            if (!output.empty()) names.emplace(output, "renamed/" + output);
    auto rename = [&](std::string& name) {
        if (auto found = names.find(name); found != names.end()) name = found->second;
    };
    for (auto& node : *graph.mutable_node()) {
        for (auto& input : *node.mutable_input()) rename(input);
        for (auto& output : *node.mutable_output()) rename(output);
    }
    for (auto& output : *graph.mutable_output()) rename(*output.mutable_name());
    // A name the renaming itself could give would pair by name.
    bool fresh_names = true;
    for (const std::string& name : onnx_tensor_names(model.graph()))
        fresh_names = fresh_names && !name.starts_with("renamed/");
    try {
        const GraphMatching matching = match_graphs(model.graph(), renamed.graph());
        for (const TensorPair& pair : matching.pairs) FUZZ_CHECK(!fresh_names || pair.how != MatchKind::kName);
    } catch (const PolygraphyException&) {
    }
}

// A model that onnx_from_bytes accepted, through the tools' passes.
void well_formed_passes(const onnx::ModelProto& model, bool safe) {
    // The node check must be stable: what passed passes again after a round trip.
    OnnxModel again;
    try {
        again = onnx_from_bytes(bytes_from_onnx(model));
    } catch (const MalformedNodeError& error) {
        std::fprintf(stderr, "%s\n", error.what());
        FUZZ_CHECK(!"a model that passed the node check fails it after a round trip");
    } catch (const PolygraphyException&) {
        // a FormatError for a model over protobuf's limits
    }

    try {
        const ref::Session session(model, ref::SessionOptions{1});
        (void)session.execution_order().size();
    } catch (const PolygraphyException&) {
    }
    // A refused declaration (a negative dimension: RELIABILITY.md, F3) is a ModelError, as in onnx_model.
    (void)refused([&] { (void)infer_output_metadata(model, {}); });
    try {
        onnx::ModelProto copy = model;
        infer_value_info(copy);  // `inspect capability`'s inference: throws only for malformed nodes
        FUZZ_CHECK(!has_problems(copy));
        if (safe) {
            const CapabilityReport report = check_capability(copy, ref_node_checker(), "ref");
            FUZZ_CHECK(report.nodes.size() == static_cast<std::size_t>(copy.graph().node_size()));
            int next = 0;
            for (const auto& partition : report.partitions) {
                FUZZ_CHECK(partition.begin == next && partition.end > partition.begin);
                next = partition.end;
            }
            FUZZ_CHECK(next == copy.graph().node_size());
            (void)report.summary();
        }
    } catch (const MalformedNodeError& error) {
        std::fprintf(stderr, "%s\n", error.what());
        FUZZ_CHECK(!"capability's inference found malformed nodes in a checked model");
    } catch (const PolygraphyException&) {
    }

    extract(model, false);
    match(model);
    if (!safe) return;
    extract(model, true);
    // Passes that evaluate nodes: on copies, and what they produce still passes the node check.
    auto pass = [](const onnx::ModelProto& original, auto&& fn) {
        onnx::ModelProto copy = original;
        try {
            fn(copy);
        } catch (const MalformedNodeError& error) {
            std::fprintf(stderr, "%s\n", error.what());
            FUZZ_CHECK(!"a pass found malformed nodes in a checked model");
        } catch (const PolygraphyException&) {
            return;
        }
        // Without an ai.onnx opset import the check reads nodes at opset 1, where Cast's `to` is a
        // string; the passes write today's operators (lint reports the missing import).
        bool imports_default = false;
        for (const auto& import : original.opset_import())
            imports_default = imports_default || import.domain().empty() || import.domain() == "ai.onnx";
        FUZZ_CHECK(!imports_default || !has_problems(copy));
    };
    pass(model, [](onnx::ModelProto& m) { (void)infer_shapes(m); });
    pass(model, [](onnx::ModelProto& m) {
        FoldConstantsOptions options;
        options.num_passes = 2;
        options.size_threshold = std::size_t{1} << 16;
        (void)fold_constants(m, options);
    });
    pass(model, [](onnx::ModelProto& m) { (void)convert_to_fp16(m); });
}

}  // namespace

// libFuzzer reads its flags after this returns, so a default can be added here. -entropic=0 unless
// the command line says otherwise: every input of this target touches some 45,000 features of the
// library's 260,000 counters, and the entropic schedule's per-feature bookkeeping
// (InputCorpus::UpdateFeatureFrequency) took half of the time, the target itself 7% (perf, 2 cores
// under ASan): 500 executions took 18 s with it and 5 s without.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    polygraphy::fuzz::silence_logger();
    bool entropic_given = false;
    for (int i = 1; i < *argc; ++i) entropic_given = entropic_given || std::strncmp((*argv)[i], "-entropic=", 10) == 0;
    if (!entropic_given) {
        static std::vector<char*> args;
        args.assign(*argv, *argv + *argc);
        static char no_entropic[] = "-entropic=0";
        args.insert(args.begin() + 1, no_entropic);
        args.push_back(nullptr);
        *argc += 1;
        *argv = args.data();
    }
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    std::minstd_rand rng(seed == 0 ? 1 : seed);
    onnx::ModelProto original;
    if (!fuzz::parse_model(data, size, original) || !original.has_graph()) {
        // Not a model: byte-level mutation half of the time, else a model built here.
        if (rng() % 2) return LLVMFuzzerMutate(data, size, max_size);
        original = fuzz::starter_model();
    }
    // Now and then the bytes too, for the parser's refusals and for values the mutator never writes.
    if (rng() % 16 == 0) return LLVMFuzzerMutate(data, size, max_size);
    for (int attempt = 0; attempt < 3; ++attempt) {
        onnx::ModelProto model = original;
        fuzz::mutate_structure(model, static_cast<unsigned>(rng()));
        if (const std::size_t written = fuzz::serialize_into(model, data, max_size)) return written;
    }
    // Too large every time: a smaller model (one node fewer), or the input unchanged.
    onnx::ModelProto smaller = original;
    if (smaller.graph().node_size()) smaller.mutable_graph()->mutable_node()->RemoveLast();
    if (const std::size_t written = fuzz::serialize_into(smaller, data, max_size)) return written;
    return size <= max_size ? size : LLVMFuzzerMutate(data, size, max_size);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                                            uint8_t* out, size_t max_out_size, unsigned int seed) {
    return fuzz::cross_over(data1, size1, data2, size2, out, max_out_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    onnx::ModelProto parsed;
    const bool parses = fuzz::parse_model(data, size, parsed) && parsed.has_graph();
    OnnxModel model;
    try {
        model = onnx_from_bytes(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const MalformedNodeError& error) {
        FUZZ_CHECK(parses && !error.problems().empty());
    } catch (const FormatError&) {
        FUZZ_CHECK(!parses);
        return 0;
    }
    FUZZ_CHECK(parses);

    const std::vector<NodeProblem> problems = find_node_problems(parsed);  // never throws
    FUZZ_CHECK(problems.empty() == static_cast<bool>(model));
    for (const NodeProblem& problem : problems) {
        const std::string message = problem.message();
        FUZZ_CHECK(message.rfind("Malformed ", 0) == 0 && message.find(problem.node) != std::string::npos);
    }
    FUZZ_CHECK(refused([&] { check_nodes(parsed); }) == !problems.empty());

    const bool safe = kernel_safe(parsed);
    lint(parsed, !problems.empty(), safe);
    if (!model) {
        malformed_is_refused_everywhere(parsed, safe);
        return 0;
    }
    well_formed_passes(*model, safe);
    return 0;
}
