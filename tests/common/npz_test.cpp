// .npz archives (common/npz.h): round trips of every dtype, the streaming writers, ZIP64, numpy
// reading our files and we reading numpy's, and every kind of bad archive.
#include "polygraphy/common/npz.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";

// Tensors of every dtype .npy holds without widening, with awkward values (NaN, -0, extremes).
std::vector<std::pair<std::string, Tensor>> every_dtype() {
    std::vector<std::pair<std::string, Tensor>> tensors;
    const std::vector<double> values = {0, -0.0, 1.5, 7, 100, 3};
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt8,
                           DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUInt8, DataType::kUInt16,
                           DataType::kUInt32, DataType::kUInt64, DataType::kBool})
        tensors.emplace_back(dtype_name(dtype), Tensor::from_doubles(dtype, {2, 3}, values));
    const float complex64[] = {1.5f, -2.0f, 0.0f, 3.25f};
    tensors.emplace_back("complex64", Tensor::from_bytes(DataType::kComplex64, {2}, complex64, sizeof(complex64)));
    const double complex128[] = {1e300, -0.0, 2.5, 1e-300};
    tensors.emplace_back("complex128", Tensor::from_bytes(DataType::kComplex128, {2}, complex128, sizeof(complex128)));
    Tensor nan = Tensor::from_doubles(DataType::kFloat32, {3}, {testing::kNaN, -testing::kInf, 1e-45});
    tensors.emplace_back("float32 specials", nan);
    Tensor big = Tensor::from_doubles(DataType::kInt64, {2}, {0, 0});
    big.data_as<int64_t>()[0] = INT64_MIN;
    big.data_as<int64_t>()[1] = INT64_MAX;
    tensors.emplace_back("int64 extremes", big);
    Tensor half = Tensor::from_doubles(DataType::kFloat16, {2}, {0, 0});
    half.data_as<uint16_t>()[0] = 0x7e01;  // a NaN payload survives bit for bit
    half.data_as<uint16_t>()[1] = 0x8001;  // the smallest negative subnormal
    tensors.emplace_back("float16 bits", half);
    tensors.emplace_back("scalar", Tensor::from_doubles(DataType::kFloat64, {}, {2.5}));
    tensors.emplace_back("empty", Tensor(DataType::kFloat32, {0, 4}));
    Tensor strings(DataType::kString, {2});
    strings.strings() = {"héllo", ""};
    tensors.emplace_back("strings", strings);
    return tensors;
}

// Two runners whose names need encoding, two iterations, outputs named like ONNX tensors.
RunResults sample_results() {
    RunResults results;
    for (const std::string runner : {"onnxrt-runner-N0-11/26/26-01:02:03", "ref 100%"}) {
        std::vector<IterationResult> iterations;
        for (int i = 0; i < 2; ++i) {
            IterationResult iteration;
            iteration.runner_name = runner;
            iteration.runtime = 0.25 * (i + 1);
            for (const auto& [name, tensor] : every_dtype()) iteration.outputs.set("/model/" + name, tensor);
            iteration.outputs.set("..", Tensor::from_doubles(DataType::kInt32, {1}, {static_cast<double>(i)}));
            iteration.outputs.set("", Tensor::from_doubles(DataType::kInt32, {1}, {9}));
            iterations.push_back(std::move(iteration));
        }
        results.add(std::move(iterations), runner);
    }
    return results;
}

void expect_same_results(const RunResults& actual, const RunResults& expected, bool with_runtimes = true) {
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t r = 0; r < expected.size(); ++r) {
        const auto& [name, iterations] = expected.lst[r];
        EXPECT_EQ(actual.lst[r].first, name);
        ASSERT_EQ(actual.lst[r].second.size(), iterations.size()) << name;
        for (std::size_t i = 0; i < iterations.size(); ++i) {
            const IterationResult& got = actual.lst[r].second[i];
            EXPECT_EQ(got.outputs.keys(), iterations[i].outputs.keys());
            if (with_runtimes) {
                EXPECT_EQ(got.runtime, iterations[i].runtime);
                EXPECT_EQ(got.runner_name, iterations[i].runner_name);
            }
            for (const auto& [output, tensor] : iterations[i].outputs) {
                if (tensor.dtype() == DataType::kString) {
                    EXPECT_EQ(got.outputs.at(output).strings(), tensor.strings()) << output;
                    continue;
                }
                EXPECT_TRUE(got.outputs.at(output).equals(tensor)) << name << " " << i << " " << output;
            }
        }
    }
}

std::vector<std::string> files_in(const std::string& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

class Npz : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kWarning); }
    void TearDown() override {
        logger().reset();
        unsetenv("POLYGRAPHY_ZIP64_THRESHOLD");
    }

    // Runs a Python snippet with numpy (sys.argv[1:] = args); skips the test when numpy is missing.
    testing::CommandResult python(const std::string& code, const std::vector<std::string>& args = {}) {
        if (!fs::exists(kPython) || testing::run_program(kPython, {"-c", "import numpy"}).exit_code != 0)
            return {77, "numpy is not available"};
        std::vector<std::string> argv = {"-c", code};
        argv.insert(argv.end(), args.begin(), args.end());
        return testing::run_program(kPython, argv);
    }

    std::string write_bytes(const std::string& name, const std::string& bytes) {
        const std::string path = dir_.file(name);
        write_file_atomically(path, bytes);
        return path;
    }

    TempDir dir_;
};

#define SKIP_WITHOUT_NUMPY(result) \
    if ((result).exit_code == 77) GTEST_SKIP() << (result).output

// ---- round trips ---------------------------------------------------------------------------------

TEST_F(Npz, ResultsRoundTripBitIdenticalForEveryDtype) {
    const RunResults results = sample_results();
    results.save(dir_.file("r.npz"));
    const auto loaded = npz::load(dir_.file("r.npz"));
    ASSERT_TRUE(std::holds_alternative<RunResults>(loaded));
    expect_same_results(std::get<RunResults>(loaded), results);
    EXPECT_EQ(files_in(dir_.path()), std::vector<std::string>{"r.npz"});  // no temporary file left
}

TEST_F(Npz, NamesAreEncodedPerComponent) {
    EXPECT_EQ(npz::output_member_name("onnxrt-runner-N0-11/26/26-01:02:03", 3, "/model/Add_output_0"),
              "outputs/onnxrt-runner-N0-11%2F26%2F26-01%3A02%3A03/3/%2Fmodel%2FAdd_output_0.npy");
    EXPECT_EQ(npz::output_member_name("..", 0, "."), "outputs/%2E%2E/0/%2E.npy");
    EXPECT_EQ(npz::input_member_name(1, "input_ids ü"), "inputs/1/input_ids%20%C3%BC.npy");
}

TEST_F(Npz, TensorsViewTheFileMapping) {
    RunResults results;
    IterationResult iteration;
    iteration.outputs.set("x", Tensor::from_doubles(DataType::kFloat32, {1000}, std::vector<double>(1000, 1.0)));
    iteration.outputs.set("flags", Tensor::from_doubles(DataType::kBool, {3}, {1, 0, 1}));
    results.add({iteration}, "r");
    results.save(dir_.file("r.npz"));
    const npz::Archive archive(dir_.file("r.npz"));
    for (const npz::Member& member : archive.members()) {
        if (member.name == "polygraphy.json") continue;
        const Tensor tensor = archive.tensor(member);
        const char* payload = archive.bytes(member).data() + (member.size - tensor.nbytes());
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(payload) % 64, 0u) << member.name;  // aligned by the writer
        // Numeric tensors are the mapped bytes themselves; bools are copied (normalised to 0/1).
        if (tensor.dtype() == DataType::kBool)
            EXPECT_NE(static_cast<const char*>(tensor.data()), payload);
        else
            EXPECT_EQ(static_cast<const char*>(tensor.data()), payload) << member.name;
    }
    // Views may be written to: the page becomes this process's own copy and the file stays as it was.
    Tensor x = std::get<RunResults>(npz::load(dir_.file("r.npz"))).lst[0].second[0].outputs.at("x");
    x.data_as<float>()[0] = 42.0f;
    EXPECT_EQ(std::get<RunResults>(npz::load(dir_.file("r.npz"))).lst[0].second[0].outputs.at("x").data_as<float>()[0],
              1.0f);
}

TEST_F(Npz, InputsRoundTripAndNumpyStyleFilesAreOneIteration) {
    InputList inputs(2);
    for (std::size_t i = 0; i < 2; ++i) {
        inputs[i].set("input_ids", Tensor::from_doubles(DataType::kInt64, {1, 4}, {1, 2, 3, double(i)}));
        inputs[i].set("mask/odd name", Tensor::from_doubles(DataType::kBool, {4}, {1, 1, 0, 1}));
    }
    save_inputs(inputs, dir_.file("in.npz"));
    const auto loaded = npz::load(dir_.file("in.npz"));
    ASSERT_TRUE(std::holds_alternative<InputList>(loaded));
    const InputList& got = std::get<InputList>(loaded);
    ASSERT_EQ(got.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(got[i].keys(), inputs[i].keys());
        for (const auto& [name, tensor] : inputs[i]) EXPECT_TRUE(got[i].at(name).equals(tensor)) << name;
    }

    // numpy.savez(f, b=..., a=...): top-level members, no metadata, the archive's order.
    {
        npz::ArchiveWriter writer(dir_.file("plain.npz"));
        writer.add_tensor("b.npy", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
        writer.add_tensor("a.npy", Tensor::from_doubles(DataType::kInt32, {1}, {3}));
        writer.finish();
    }
    const auto plain = npz::load(dir_.file("plain.npz"));
    ASSERT_TRUE(std::holds_alternative<InputList>(plain));
    ASSERT_EQ(std::get<InputList>(plain).size(), 1u);
    EXPECT_EQ(std::get<InputList>(plain)[0].keys(), (std::vector<std::string>{"b", "a"}));
}

TEST_F(Npz, StreamingWriterTakesTensorsInAnyOrder) {
    // As a layer-wise run in slices adds them: slice by slice, each slice every runner.
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {2}, {3, 4});
    {
        npz::ResultsWriter writer(dir_.file("sliced.npz"));
        writer.add_output("ref", 0, "l1", a);
        writer.add_output("ort", 0, "l1", b);
        writer.add_output("ref", 0, "l2", b);
        writer.add_output("ort", 0, "l2", a);
        writer.set_iteration_info("ort", 0, 0.5, "ort");
        writer.finish();
    }
    const RunResults results = std::get<RunResults>(npz::load(dir_.file("sliced.npz")));
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results.lst[0].first, "ref");
    EXPECT_EQ(results.lst[1].first, "ort");
    EXPECT_EQ(results.lst[0].second.at(0).outputs.keys(), (std::vector<std::string>{"l1", "l2"}));
    EXPECT_TRUE(results.lst[1].second.at(0).outputs.at("l2").equals(a));
    EXPECT_EQ(results.lst[1].second.at(0).runtime, 0.5);
    EXPECT_EQ(results.lst[0].second.at(0).runtime, std::nullopt);

    // Destroyed without finish() (an exception mid-run): nothing is left, not even the temporary file.
    {
        npz::ResultsWriter writer(dir_.file("abandoned.npz"));
        writer.add_output("ref", 0, "l1", a);
    }
    EXPECT_EQ(files_in(dir_.path()), std::vector<std::string>{"sliced.npz"});
}

TEST_F(Npz, UnwritableFolderFailsAndLeavesNothing) {
    write_bytes("file", "not a folder");
    const std::string message =
        testing::error_message<PolygraphyException>([&] { sample_results().save(dir_.file("file/r.npz")); });
    EXPECT_THAT(message, HasSubstr("Could not write " + dir_.file("file/r.npz")));
    EXPECT_EQ(files_in(dir_.path()), std::vector<std::string>{"file"});
}

TEST_F(Npz, Zip64FieldsRoundTrip) {
    setenv("POLYGRAPHY_ZIP64_THRESHOLD", "100", 1);  // every member past 100 bytes, and the directory
    const RunResults results = sample_results();
    results.save(dir_.file("r64.npz"));
    const std::string bytes = read_file(dir_.file("r64.npz"));
    EXPECT_NE(bytes.find(std::string("PK\x06\x07", 4)), std::string::npos);  // the ZIP64 locator
    expect_same_results(std::get<RunResults>(npz::load(dir_.file("r64.npz"))), results);

    setenv("POLYGRAPHY_ZIP64_THRESHOLD", "0", 1);
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { results.save(dir_.file("bad.npz")); }),
                HasSubstr("POLYGRAPHY_ZIP64_THRESHOLD must be a number of bytes"));
}

// ---- numpy -----------------------------------------------------------------------------------------

// numpy.load opens every member of our file (ZIP64 or not); numpy.savez's copy of it loads back
// bit-identical here (its members are not aligned: those tensors are copied).
TEST_F(Npz, NumpyReadsOurFilesAndWeReadNumpys) {
    const RunResults results = sample_results();
    for (const char* threshold : {"", "100"}) {
        setenv("POLYGRAPHY_ZIP64_THRESHOLD", threshold, 1);
        results.save(dir_.file("ours.npz"));
        const auto copied = python(R"(
import json, sys, numpy as np
f = np.load(sys.argv[1])
arrays = {k: f[k] for k in f.files if k != 'polygraphy.json'}
meta = json.loads(f['polygraphy.json'])
print(len(arrays), meta['lst'][0][0], arrays['outputs/ref%20100%25/1/%2Fmodel%2Fint64'].dtype,
      arrays['outputs/ref%20100%25/1/%2Fmodel%2Fbool'].tolist()[0])
np.savez(sys.argv[2], **arrays)
)",
                                   {dir_.file("ours.npz"), dir_.file("numpys.npz")});
        SKIP_WITHOUT_NUMPY(copied);
        ASSERT_EQ(copied.exit_code, 0) << copied.output;
        EXPECT_THAT(copied.output, HasSubstr("88 onnxrt-runner-N0-11/26/26-01:02:03 int64 [False, False, True]"));
        expect_same_results(std::get<RunResults>(npz::load(dir_.file("numpys.npz"))), results, false);
    }
}

TEST_F(Npz, CompressedMembersAreInflated) {
    // numpy.savez_compressed deflates every member; a deflated member cannot be mapped, so it is
    // inflated into memory (once) and its tensor views that copy.
    const auto made = python(R"(
import sys, numpy as np
np.savez_compressed(sys.argv[1], x=np.arange(4), y=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                    zeros=np.zeros(300000, dtype=np.float32))
)",
                             {dir_.file("c.npz")});
    SKIP_WITHOUT_NUMPY(made);
    ASSERT_EQ(made.exit_code, 0) << made.output;
    npz::Archive archive(dir_.file("c.npz"));
    ASSERT_EQ(archive.members().size(), 3u);
    for (const npz::Member& member : archive.members()) EXPECT_TRUE(member.deflated) << member.name;
    EXPECT_LT(archive.members()[2].stored_size, archive.members()[2].size / 100);  // the zeros compress

    const auto loaded = npz::load(dir_.file("c.npz"));
    const InputList& inputs = std::get<InputList>(loaded);
    ASSERT_EQ(inputs.size(), 1u);
    EXPECT_TRUE(inputs[0].at("x").equals(Tensor::from_doubles(DataType::kInt64, {4}, {0, 1, 2, 3})));
    EXPECT_TRUE(
        inputs[0].at("y").equals(Tensor::from_doubles(DataType::kFloat32, {2, 3}, {-1.0, -0.6, -0.2, 0.2, 0.6, 1.0})));
    const Tensor& zeros = inputs[0].at("zeros");
    ASSERT_EQ(zeros.numel(), 300000);
    EXPECT_EQ(std::count(zeros.data_as<float>(), zeros.data_as<float>() + zeros.numel(), 0.0f), 300000);
}

// ---- bad archives ----------------------------------------------------------------------------------

// A valid archive of one results member and its metadata, as bytes to damage.
std::string small_archive(const std::string& path) {
    RunResults results;
    IterationResult iteration;
    iteration.outputs.set("y", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4}));
    results.add({iteration}, "r");
    results.save(path);
    return read_file(path);
}

std::size_t end_record(const std::string& bytes) {
    return bytes.rfind(std::string("PK\x05\x06", 4));
}

TEST_F(Npz, BadZipsGetOneLineErrors) {
    auto error = [&](const std::string& path) {
        const std::string message = testing::error_message<FormatError>([&] { npz::load(path); });
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        return message;
    };
    EXPECT_THAT(error(write_bytes("text.npz", "{\"lst\": []}")), HasSubstr("text.npz: not a zip file"));
    EXPECT_THAT(error(write_bytes("empty.npz", "")), HasSubstr("not a zip file"));

    const std::string good = small_archive(dir_.file("good.npz"));
    EXPECT_THAT(error(write_bytes("cut.npz", good.substr(0, good.size() - 30))), HasSubstr("not a zip file"));

    // The end record declares one entry more than the directory holds.
    std::string more = good;
    more[end_record(more) + 10] += 1;
    EXPECT_THAT(error(write_bytes("more.npz", more)),
                HasSubstr("the central directory ends at entry 2 of the 3 it declares"));
    // The directory's offset points past the file.
    std::string outside = good;
    outside[end_record(outside) + 19] = '\x7f';
    EXPECT_THAT(error(write_bytes("outside.npz", outside)), HasSubstr("lies outside the file"));

    // A member whose declared size runs past the end of the file.
    const std::size_t central = good.find(std::string("PK\x01\x02", 4));
    std::string longer = good;
    for (std::size_t field : {20u, 24u}) longer[central + field + 2] = '\x10';
    EXPECT_THAT(error(write_bytes("longer.npz", longer)), HasSubstr("is truncated: its"));

    // Members that claim to be deflated but are not, other compressions, and encrypted members.
    std::string deflated = good;
    deflated[central + 10] = 8;
    EXPECT_THAT(error(write_bytes("deflated.npz", deflated)), HasSubstr("member 'outputs/r/0/y.npy' is corrupt"));
    std::string bomb = deflated;  // an inflated size deflate cannot reach from the stored bytes
    for (std::size_t byte : {24u, 25u, 26u, 27u}) bomb[central + byte] = '\x7f';
    EXPECT_THAT(error(write_bytes("bomb.npz", bomb)), HasSubstr("more than deflate can give"));
    std::string bzip2 = good;
    bzip2[central + 10] = 12;
    EXPECT_THAT(error(write_bytes("bzip2.npz", bzip2)),
                HasSubstr("member 'outputs/r/0/y.npy' is compressed with bzip2; .npz members are stored"));
    std::string encrypted = good;
    encrypted[central + 8] |= 1;
    EXPECT_THAT(error(write_bytes("encrypted.npz", encrypted)), HasSubstr("is encrypted"));
}

TEST_F(Npz, BadNpyMembersNameTheMember) {
    const std::string npy = npy::save(Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4}));
    auto archive = [&](const std::string& name, const std::string& member_bytes) {
        npz::ArchiveWriter writer(dir_.file(name));
        writer.add_bytes("outputs/r/0/y.npy", member_bytes);
        writer.finish();
        return dir_.file(name);
    };
    EXPECT_THAT(testing::error_message<FormatError>([&] { npz::load(archive("magic.npz", "not an array")); }),
                HasSubstr("member 'outputs/r/0/y.npy': invalid .npy data: bad magic string"));
    std::string header = npy;
    header.replace(header.find("'descr'"), 7, "'dexcr'");
    EXPECT_THAT(testing::error_message<FormatError>([&] { npz::load(archive("header.npz", header)); }),
                HasSubstr("header has an unexpected key 'dexcr'"));
    EXPECT_THAT(
        testing::error_message<FormatError>([&] { npz::load(archive("short.npz", npy.substr(0, npy.size() - 4))); }),
        HasSubstr("array data is shorter than its shape needs: 16 bytes for shape (4,)"));
}

TEST_F(Npz, MembersMatchingNoLayoutAreRefused) {
    const Tensor x = Tensor::from_doubles(DataType::kFloat32, {1}, {1});
    auto archive = [&](const std::string& name, const std::vector<std::string>& members,
                       const std::string& metadata = "") {
        npz::ArchiveWriter writer(dir_.file(name));
        for (const auto& member : members) writer.add_tensor(member, x);
        if (!metadata.empty()) writer.add_bytes("polygraphy.json", metadata);
        writer.finish();
        return testing::error_message<FormatError>([&] { npz::load(dir_.file(name)); });
    };
    EXPECT_THAT(archive("deep.npz", {"a/b.npy"}), HasSubstr("member 'a/b.npy' matches no layout (2 path components)"));
    EXPECT_THAT(archive("text.npz", {"notes.txt"}),
                HasSubstr("member 'notes.txt' matches no layout (not a .npy array)"));
    EXPECT_THAT(archive("iteration.npz", {"outputs/r/first/y.npy"}), HasSubstr("'first' is not an iteration number"));
    EXPECT_THAT(archive("escape.npz", {"inputs/0/x%G1.npy"}), HasSubstr("'x%G1' is not percent-encoded correctly"));
    EXPECT_THAT(archive("mixed.npz", {"outputs/r/0/y.npy", "x.npy"}),
                HasSubstr("mixes layouts: member 'outputs/r/0/y.npy' is outputs/<runner>/<iteration>/<output>.npy "
                          "but member 'x.npy' is <input>.npy"));
    EXPECT_THAT(archive("gap.npz", {"outputs/r/0/y.npy", "outputs/r/2/y.npy"}),
                HasSubstr("member 'outputs/r/2/y.npy' is iteration 2 of runner 'r', but no member holds iteration 1"));
    EXPECT_THAT(archive("same.npz", {"inputs/0/a.npy", "inputs/0/%61.npy"}),
                HasSubstr("members 'inputs/0/a.npy' and 'inputs/0/%61.npy' name the same tensor"));
    const std::string metadata =
        R"({"lst": [["r", [{"outputs": ["y"], "runtime": null}]]], "polygraphy_class": "RunResults"})";
    EXPECT_THAT(archive("unlisted.npz", {"outputs/r/0/y.npy", "outputs/other/0/y.npy"}, metadata),
                HasSubstr("member 'outputs/other/0/y.npy' matches no runner, iteration and tensor listed in "
                          "polygraphy.json"));
    EXPECT_THAT(archive("missing.npz", {}, metadata),
                HasSubstr("polygraphy.json lists output 'y' of iteration 0 of runner 'r', but there is no member"));
    EXPECT_THAT(archive("kind.npz", {"inputs/0/y.npy"}, metadata),
                HasSubstr("polygraphy.json is not the metadata of inputs/ members"));
}

}  // namespace
}  // namespace polygraphy
