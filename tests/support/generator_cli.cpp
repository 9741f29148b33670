#include "generator_cli.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"

namespace polygraphy::testing {
namespace {

std::string usage(const std::string& program, const std::string& description,
                  const std::vector<GeneratorOption>& options) {
    std::string text = fmt::format("usage: {} OUT.onnx [options]\n{}\n\noptions:\n", program, description);
    for (const auto& option : options) {
        const std::string name = option.number ? option.flag + " N" : option.flag;
        const std::string fallback = option.number ? fmt::format(" (default {})", *option.number) : "";
        text += fmt::format("  {:<22} {}{}\n", name, option.help, fallback);
    }
    return text;
}

int64_t parse_number(const std::string& flag, const std::string& text) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
        throw UsageError(fmt::format("{} expects an integer, got '{}'", flag, text));
    return value;
}

// Returns the output path; sets the options given.
std::string parse(int argc, char** argv, const std::vector<GeneratorOption>& options) {
    std::string path;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) {
            if (!path.empty()) throw UsageError(fmt::format("unexpected argument '{}': one output path only", arg));
            path = arg;
            continue;
        }
        const GeneratorOption* match = nullptr;
        for (const auto& option : options)
            if (option.flag == arg) match = &option;
        if (!match) throw UsageError(fmt::format("unknown option '{}'", arg));
        if (match->enabled) {
            *match->enabled = true;
        } else {
            if (i + 1 >= argc) throw UsageError(fmt::format("{} expects a value", arg));
            *match->number = parse_number(arg, argv[++i]);
        }
    }
    if (path.empty()) throw UsageError("missing the output path OUT.onnx");
    return path;
}

}  // namespace

std::vector<GeneratorOption> transformer_size_options(TransformerSizes& sizes, const std::string& layer_kind,
                                                      const std::string& feed_forward_kind) {
    return {
        {"--layers", layer_kind + " layers", &sizes.layers},
        {"--hidden", "hidden size", &sizes.hidden},
        {"--heads", "attention heads (hidden must be a multiple)", &sizes.heads},
        {"--intermediate", "width of the " + feed_forward_kind, &sizes.intermediate},
        {"--vocab", "vocabulary size", &sizes.vocab},
        {"--max-positions", "longest sequence", &sizes.max_positions},
        {"--seed", "seed of the weights", &sizes.seed},
    };
}

int run_model_generator(int argc, char** argv, const std::string& description,
                        const std::vector<GeneratorOption>& options,
                        const std::function<GeneratedModelInfo(const std::string& path)>& generate) {
    const std::string program = argc > 0 ? argv[0] : "generator";
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
            std::fputs(usage(program, description, options).c_str(), stdout);
            return 0;
        }
    }
    std::string path;
    try {
        path = parse(argc, argv, options);
    } catch (const UsageError& error) {
        std::printf("[!] %s\n%s", error.what(), usage(program, description, options).c_str());
        return 2;
    }
    try {
        const auto start = std::chrono::steady_clock::now();
        const GeneratedModelInfo info = generate(path);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::string weights = fmt::format("{} bytes of weights", info.tensor_bytes);
        if (info.file_bytes > 0)
            weights += fmt::format(" in {} ({} bytes)", external_data_location(path), info.file_bytes);
        std::printf("[I] Wrote %s in %.1f s: %lld nodes, %s, model file %llu bytes\n", path.c_str(), seconds,
                    static_cast<long long>(info.node_count), weights.c_str(),
                    static_cast<unsigned long long>(info.model_bytes));
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}

}  // namespace polygraphy::testing
