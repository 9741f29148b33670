// Overhead of OnnxrtRunner::infer over a direct ONNX-Runtime C API Run loop, on the same model,
// inputs and session options, measured in the same process with interleaved rounds.
//
// usage: onnxrt_bench [--iterations N] [--rounds R] [--threads T] [MODEL.onnx ...]
//        onnxrt_bench --startup POLYGRAPHY_EXE MODEL.onnx [--rounds R]
//   Without models, benchmarks built-in ones: a tiny Add (fixed costs dominate) and a small MLP at
//   batch 1 and 64.
//   Dynamic input dims are set to 1; float inputs are uniform in [0, 1), others zero.
// Prints, per model, the median latency of each loop and the runner's overhead (target: <= 5% or
// <= 0.2 ms). The runner's figure includes input checks, wrapping inputs and copying outputs.
//
// --startup: end to end, `POLYGRAPHY_EXE run MODEL --onnxrt` (process start to exit) against what
// ONNX Runtime itself needs for that job, measured in a fresh process of this program each round:
// environment + session creation from the file + the first Run (default session options, as the
// CLI uses). Target: the CLI takes at most that + 100 ms.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/logger.h"

#if POLYGRAPHY_HAVE_ONNXRUNTIME
#include "backend/onnxrt/ort_api.h"
#endif

namespace {

using namespace polygraphy;
using Clock = std::chrono::steady_clock;
using bench::make_feed;
using bench::median;

struct Config {
    int iterations = 200;  // per round and loop
    int rounds = 10;
    int threads = 1;
    std::vector<std::string> models;
};

OnnxModel tiny_add_model() {
    testing::ModelBuilder builder(17, "tiny_add");
    builder.input("x", DataType::kFloat32, Shape{1, 16});
    builder.node("Add", {"x", "x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 16});
    return builder.build();
}

// x(B, 256) -> MatMul(256x256) -> Add -> Relu -> MatMul(256x64) -> Add -> Relu -> MatMul(64x10) -> y(B, 10)
OnnxModel small_mlp_model(int64_t batch) {
    testing::ModelBuilder builder(17, "small_mlp");
    builder.input("x", DataType::kFloat32, Shape{batch, 256});
    const std::vector<std::pair<int64_t, int64_t>> layers = {{256, 256}, {256, 64}, {64, 10}};
    std::string current = "x";
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string suffix = std::to_string(i);
        builder.initializer("W" + suffix, testing::random_tensor({layers[i].first, layers[i].second}, 10 + i));
        builder.initializer("b" + suffix, testing::random_tensor({layers[i].second}, 20 + i));
        builder.node("MatMul", {current, "W" + suffix}, {"mm" + suffix});
        builder.node("Add", {"mm" + suffix, "b" + suffix}, {"add" + suffix});
        current = "add" + suffix;
        if (i + 1 < layers.size()) {
            builder.node("Relu", {current}, {"relu" + suffix});
            current = "relu" + suffix;
        }
    }
    builder.node("Identity", {current}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{batch, 10});
    return builder.build();
}

#if POLYGRAPHY_HAVE_ONNXRUNTIME

using namespace polygraphy::onnxrt::detail;

// The reference: an OrtSession built with the same options, inputs wrapped once, and a loop of Run
// calls that release their outputs, which is the least any C API user does per inference.
class DirectLoop {
public:
    DirectLoop(const std::string& bytes, int threads, const TensorMap& feed) {
        const OrtApi& ort = api();
        OrtSessionOptions* raw_options = nullptr;
        check(ort.CreateSessionOptions(&raw_options), "CreateSessionOptions");
        SessionOptionsPtr options(raw_options);
        check(ort.SetIntraOpNumThreads(raw_options, threads), "SetIntraOpNumThreads");
        check(ort.SetSessionGraphOptimizationLevel(raw_options, ORT_ENABLE_ALL), "SetSessionGraphOptimizationLevel");
        OrtSession* raw_session = nullptr;
        check(ort.CreateSessionFromArray(env(), bytes.data(), bytes.size(), raw_options, &raw_session),
              "CreateSessionFromArray");
        session_.reset(raw_session);

        OrtMemoryInfo* raw_memory = nullptr;
        check(ort.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &raw_memory), "CreateCpuMemoryInfo");
        memory_.reset(raw_memory);
        for (const auto& [name, tensor] : feed) {
            OrtValue* value = nullptr;
            check(ort.CreateTensorWithDataAsOrtValue(memory_.get(), const_cast<void*>(tensor.data()), tensor.nbytes(),
                                                     tensor.shape().data(), tensor.shape().size(),
                                                     *dtype_to_ort(tensor.dtype()), &value),
                  "CreateTensorWithDataAsOrtValue");
            inputs_.emplace_back(value);
            input_pointers_.push_back(value);
            input_names_.push_back(name);
        }
        for (const auto& name : input_names_) input_name_pointers_.push_back(name.c_str());

        OrtAllocator* allocator = nullptr;
        check(ort.GetAllocatorWithDefaultOptions(&allocator), "GetAllocatorWithDefaultOptions");
        std::size_t count = 0;
        check(ort.SessionGetOutputCount(raw_session, &count), "SessionGetOutputCount");
        for (std::size_t i = 0; i < count; ++i) {
            char* name = nullptr;
            check(ort.SessionGetOutputName(raw_session, i, allocator, &name), "SessionGetOutputName");
            output_names_.emplace_back(name);
            check(ort.AllocatorFree(allocator, name), "AllocatorFree");
        }
        for (const auto& name : output_names_) output_name_pointers_.push_back(name.c_str());
    }

    // Seconds for one Run (outputs allocated by ORT and released).
    double run_once() {
        std::vector<OrtValue*> outputs(output_names_.size(), nullptr);
        const auto start = Clock::now();
        check(api().Run(session_.get(), nullptr, input_name_pointers_.data(), input_pointers_.data(),
                        input_pointers_.size(), output_name_pointers_.data(), outputs.size(), outputs.data()),
              "Run");
        for (OrtValue* output : outputs) api().ReleaseValue(output);
        return std::chrono::duration<double>(Clock::now() - start).count();
    }

private:
    SessionPtr session_;
    MemoryInfoPtr memory_;
    std::vector<ValuePtr> inputs_;
    std::vector<const OrtValue*> input_pointers_;
    std::vector<std::string> input_names_, output_names_;
    std::vector<const char*> input_name_pointers_, output_name_pointers_;
};

void bench_model(const std::string& label, const std::string& bytes, const Config& config) {
    onnxrt::SessionOptions options;
    options.intra_op_num_threads = config.threads;
    onnxrt::OnnxrtRunner runner(onnxrt::SessionFromOnnx::from_bytes(loader_from_value(bytes), options));
    RunnerActivation active(runner);
    const TensorMap feed = make_feed(runner.get_input_metadata());
    DirectLoop direct(bytes, config.threads, feed);

    // Warm up both (first runs allocate arenas and caches).
    for (int i = 0; i < 20; ++i) {
        direct.run_once();
        runner.infer(feed);
    }
    std::vector<double> direct_times, infer_times, run_times;
    for (int round = 0; round < config.rounds; ++round) {
        for (int i = 0; i < config.iterations; ++i) direct_times.push_back(direct.run_once());
        for (int i = 0; i < config.iterations; ++i) {
            const auto start = Clock::now();
            const TensorMap outputs = runner.infer(feed);
            infer_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
            run_times.push_back(*runner.last_inference_time());
        }
    }
    const double direct_ms = median(direct_times) * 1e3;
    const double infer_ms = median(infer_times) * 1e3;
    const double run_ms = median(run_times) * 1e3;
    const double overhead_ms = infer_ms - direct_ms;
    const double overhead_pct = 100.0 * overhead_ms / direct_ms;
    const bool within = overhead_pct <= 5.0 || overhead_ms <= 0.2;
    std::printf("%-24s direct Run %9.4f ms | OnnxrtRunner::infer %9.4f ms (its Run %9.4f ms) | overhead %+8.4f ms "
                "(%+6.1f%%) %s\n",
                label.c_str(), direct_ms, infer_ms, run_ms, overhead_ms, overhead_pct,
                within ? "[within target]" : "[OVER target]");
}


// Child side of --startup: seconds for environment + session creation (default options) + first Run.
double direct_startup_seconds(const std::string& path) {
    const OrtApi& ort = api();
    const OnnxModel model = onnx_from_path(path);
    const TensorMetadata metadata = get_onnx_input_metadata(model->graph());
    const TensorMap feed = make_feed(metadata);
    const auto start = Clock::now();
    OrtSessionOptions* raw_options = nullptr;
    check(ort.CreateSessionOptions(&raw_options), "CreateSessionOptions");
    SessionOptionsPtr options(raw_options);
    OrtSession* raw_session = nullptr;
    check(ort.CreateSession(env(), path.c_str(), raw_options, &raw_session), "CreateSession");
    SessionPtr session(raw_session);
    OrtMemoryInfo* raw_memory = nullptr;
    check(ort.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &raw_memory), "CreateCpuMemoryInfo");
    MemoryInfoPtr memory(raw_memory);
    std::vector<ValuePtr> inputs;
    std::vector<const OrtValue*> input_pointers;
    std::vector<const char*> input_names;
    for (const auto& [name, tensor] : feed) {
        OrtValue* value = nullptr;
        check(ort.CreateTensorWithDataAsOrtValue(memory.get(), const_cast<void*>(tensor.data()), tensor.nbytes(),
                                                 tensor.shape().data(), tensor.shape().size(),
                                                 *dtype_to_ort(tensor.dtype()), &value),
              "CreateTensorWithDataAsOrtValue");
        inputs.emplace_back(value);
        input_pointers.push_back(value);
        input_names.push_back(name.c_str());
    }
    const TensorMetadata outputs_metadata = get_onnx_output_metadata(model->graph());
    std::vector<std::string> output_names;
    for (const auto& [name, entry] : outputs_metadata) output_names.push_back(name);
    std::vector<const char*> output_name_pointers;
    for (const auto& name : output_names) output_name_pointers.push_back(name.c_str());
    std::vector<OrtValue*> outputs(output_names.size(), nullptr);
    check(ort.Run(session.get(), nullptr, input_names.data(), input_pointers.data(), input_pointers.size(),
                  output_name_pointers.data(), outputs.size(), outputs.data()),
          "Run");
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (OrtValue* output : outputs) ort.ReleaseValue(output);
    return seconds;
}

int startup_bench(const std::string& self, const std::string& polygraphy_exe, const std::string& model, int rounds) {
    std::vector<double> cli_times, direct_times;
    for (int round = 0; round < rounds; ++round) {
        std::string direct_output;
        bench::run_child({self, "--direct-startup", model}, &direct_output);
        direct_times.push_back(std::stod(direct_output));
        cli_times.push_back(bench::run_child({polygraphy_exe, "run", model, "--onnxrt"}));
    }
    const double direct_ms = median(direct_times) * 1e3;
    const double cli_ms = median(cli_times) * 1e3;
    std::printf("%s: ORT env + session + first Run %.1f ms | `polygraphy run --onnxrt` end to end %.1f ms | "
                "difference %+.1f ms %s (median of %d rounds)\n",
                model.c_str(), direct_ms, cli_ms, cli_ms - direct_ms,
                cli_ms - direct_ms <= 100.0 ? "[within target]" : "[OVER target]", rounds);
    return 0;
}

#endif  // POLYGRAPHY_HAVE_ONNXRUNTIME

int parse_int(const char* flag, const char* text) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (!text[0] || *end || value <= 0 || value > 1000000) {
        std::fprintf(stderr, "onnxrt_bench: %s needs a positive integer, got '%s'\n", flag, text);
        std::exit(2);
    }
    return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
    Config config;
#if POLYGRAPHY_HAVE_ONNXRUNTIME
    if (argc == 3 && std::string(argv[1]) == "--direct-startup") {
        logger().set_severity(Severity::kWarning);
        try {
            std::printf("%.9f\n", direct_startup_seconds(argv[2]));
            return 0;
        } catch (const std::exception& error) {
            std::printf("[!] %s\n", error.what());
            return 1;
        }
    }
    if (argc >= 4 && std::string(argv[1]) == "--startup") {
        const int rounds = argc >= 6 && std::string(argv[4]) == "--rounds" ? parse_int(argv[4], argv[5]) : 7;
        try {
            return startup_bench("/proc/self/exe", argv[2], argv[3], rounds);
        } catch (const std::exception& error) {
            std::printf("[!] %s\n", error.what());
            return 1;
        }
    }
#endif
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "--iterations" || arg == "--rounds" || arg == "--threads") && i + 1 < argc) {
            const int value = parse_int(argv[i], argv[i + 1]);
            (arg == "--iterations" ? config.iterations : arg == "--rounds" ? config.rounds : config.threads) = value;
            ++i;
        } else if (arg == "-h" || arg == "--help") {
            std::printf("usage: onnxrt_bench [--iterations N] [--rounds R] [--threads T] [MODEL.onnx ...]\n");
            return 0;
        } else {
            config.models.push_back(arg);
        }
    }
#if POLYGRAPHY_HAVE_ONNXRUNTIME
    logger().set_severity(Severity::kWarning);
    try {
        const auto& library = onnxrt::load_library();
        std::printf("ONNX-Runtime %s (%s), intra-op threads %d, %d rounds x %d iterations per loop\n",
                    library.version.c_str(), library.path.c_str(), config.threads, config.rounds, config.iterations);
        if (config.models.empty()) {
            bench_model("built-in tiny_add", bytes_from_onnx(*tiny_add_model()), config);
            bench_model("built-in small_mlp b=1", bytes_from_onnx(*small_mlp_model(1)), config);
            bench_model("built-in small_mlp b=64", bytes_from_onnx(*small_mlp_model(64)), config);
        }
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    int failures = 0;
    for (const std::string& path : config.models) {
        try {
            bench_model(path, bytes_from_path(path), config);
        } catch (const std::exception& error) {
            std::printf("%-24s [!] %s\n", path.c_str(), error.what());
            ++failures;
        }
    }
    return failures ? 1 : 0;
#else
    std::printf("[!] This polygraphy was built without ONNX-Runtime: run scripts/setup_onnxruntime.sh and rebuild\n");
    return 1;
#endif
}
