// The layer order of README.md ("Tools, the `run` job, and what is public"), checked on every
// `#include "..."` of src/ and include/: common < backend/<name> < comparator < job < tools, where
// backend/base comes first, backend/onnx depends on no runtime, and the runtimes (backend/ref,
// backend/onnxrt) do not include each other.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "build_paths.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;

struct Layer {
    std::string name;
    int rank;
};

// The layer of a path inside src/ or include/polygraphy/ ("backend/onnx/loader.h"), or of an
// include path ("polygraphy/backend/onnx/loader.h", "backend/onnx/domain.h").
std::optional<Layer> layer_of(std::string path) {
    if (path.rfind("polygraphy/", 0) == 0) path = path.substr(11);
    const std::vector<Layer> layers = {
        {"common", 0},      {"backend/base", 1}, {"backend/onnx", 2}, {"backend/onnxrt", 3},
        {"backend/ref", 3}, {"comparator", 4},   {"job", 5},          {"tools", 6}};
    for (const Layer& layer : layers)
        if (path.rfind(layer.name + "/", 0) == 0) return layer;
    if (path == "extension.h") return Layer{"tools", 6};  // the extension-module contract sits with the tools
    return std::nullopt;
}

struct Arrow {
    std::string file;
    int line;
    std::string target;
};

// Every include of `root` that points up the layers or sideways between two layers of one rank.
std::vector<Arrow> arrows_against_the_order(const fs::path& root) {
    const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
    std::vector<Arrow> wrong;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        const std::string extension = entry.path().extension().string();
        if (!entry.is_regular_file() || (extension != ".h" && extension != ".cpp")) continue;
        const std::string relative = fs::relative(entry.path(), root).generic_string();
        const std::optional<Layer> from = layer_of(relative);
        if (!from) continue;
        std::ifstream file(entry.path());
        std::string text;
        for (int number = 1; std::getline(file, text); ++number) {
            std::smatch match;
            if (!std::regex_search(text, match, include)) continue;
            const std::optional<Layer> to = layer_of(match[1].str());
            if (!to || to->name == from->name) continue;
            if (to->rank >= from->rank)  // a layer above, or a sibling runtime
                wrong.push_back({(root.filename() / relative).generic_string(), number, match[1].str()});
        }
    }
    return wrong;
}

TEST(Layering, NoIncludePointsUpTheLayers) {
    const fs::path source = POLYGRAPHY_SOURCE_DIR;
    std::vector<Arrow> wrong = arrows_against_the_order(source / "src");
    for (Arrow& arrow : arrows_against_the_order(source / "include" / "polygraphy")) {
        arrow.file = "include/polygraphy/" + arrow.file.substr(arrow.file.find('/') + 1);
        wrong.push_back(arrow);
    }
    std::string listing;
    for (const Arrow& arrow : wrong)
        listing += arrow.file + ":" + std::to_string(arrow.line) + " includes \"" + arrow.target + "\"\n";
    EXPECT_TRUE(wrong.empty()) << "includes against the layer order (README, \"Tools, the `run` job\"):\n" << listing;
}

// Inside the built-in runtime: the compute helpers (backend/ref/compute/: GEMM, blocked and
// depthwise convolution, oneDNN glue, broadcasting) sit below the operator families (ops/) that
// call them, and include none of them.
std::vector<Arrow> compute_includes_of_operator_families(const fs::path& compute) {
    const std::regex include(R"(^\s*#\s*include\s*"(backend/ref/ops/[^"]+)\")");
    std::vector<Arrow> wrong;
    for (const auto& entry : fs::recursive_directory_iterator(compute)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream file(entry.path());
        std::string text;
        for (int number = 1; std::getline(file, text); ++number) {
            std::smatch match;
            if (std::regex_search(text, match, include))
                wrong.push_back({entry.path().filename().string(), number, match[1].str()});
        }
    }
    return wrong;
}

TEST(Layering, ComputeHelpersIncludeNoOperatorFamily) {
    const fs::path compute = fs::path(POLYGRAPHY_SOURCE_DIR) / "src" / "backend" / "ref" / "compute";
    ASSERT_TRUE(fs::is_directory(compute));
    std::string listing;
    for (const Arrow& arrow : compute_includes_of_operator_families(compute))
        listing += "src/backend/ref/compute/" + arrow.file + ":" + std::to_string(arrow.line) + " includes \"" +
                   arrow.target + "\"\n";
    EXPECT_TRUE(listing.empty()) << listing;

    const fs::path scratch = fs::temp_directory_path() / ("polygraphy-compute-" + std::to_string(::getpid()));
    fs::create_directories(scratch);
    std::ofstream(scratch / "gemm.cpp") << "#include \"backend/ref/compute/dnnl_util.h\"\n"
                                        << "#include \"backend/ref/ops/families.h\"\n";
    const std::vector<Arrow> found = compute_includes_of_operator_families(scratch);
    fs::remove_all(scratch);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].line, 2);
}

TEST(Layering, TheCheckSeesABackEdge) {
    // A back-edge written into a scratch tree is found, with its file and line.
    const fs::path root = fs::temp_directory_path() / ("polygraphy-layering-" + std::to_string(::getpid()));
    fs::create_directories(root / "backend" / "onnx");
    std::ofstream(root / "backend" / "onnx" / "summary.cpp")
        << "// test\n#include \"backend/onnx/domain.h\"\n#include \"polygraphy/comparator/stats.h\"\n";
    fs::create_directories(root / "backend" / "ref");
    std::ofstream(root / "backend" / "ref" / "x.cpp") << "#include \"polygraphy/backend/onnxrt/runner.h\"\n";
    const std::vector<Arrow> wrong = arrows_against_the_order(root);
    fs::remove_all(root);
    ASSERT_EQ(wrong.size(), 2u);
    std::vector<std::string> found;
    for (const Arrow& arrow : wrong)
        found.push_back(arrow.file + ":" + std::to_string(arrow.line) + " " + arrow.target);
    const std::string scratch = root.filename().string();
    EXPECT_THAT(found,
                ::testing::UnorderedElementsAre(scratch + "/backend/onnx/summary.cpp:3 polygraphy/comparator/stats.h",
                                                scratch + "/backend/ref/x.cpp:1 polygraphy/backend/onnxrt/runner.h"));
}

}  // namespace
}  // namespace polygraphy
