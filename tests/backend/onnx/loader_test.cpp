#include "polygraphy/backend/onnx/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "build_paths.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using testing::error_message;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::TempDir;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string bytes_of(const Tensor& tensor) {
    return std::string(static_cast<const char*>(tensor.data()), tensor.nbytes());
}

void add_external(onnx::TensorProto& tensor, const std::string& location, std::optional<std::string> offset = {},
                  std::optional<std::string> length = {}) {
    tensor.clear_raw_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const std::string& key, const std::string& value) {
        auto* entry = tensor.add_external_data();
        entry->set_key(key);
        entry->set_value(value);
    };
    add("location", location);
    if (offset) add("offset", *offset);
    if (length) add("length", *length);
}

class OnnxLoaderTest : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kWarning); }
    void TearDown() override { logger().reset(); }

    // x -> Relu -> y, with a [2, 2] float initializer `w` (Add) whose data can be moved out of the file.
    static ModelBuilder weighted_model() {
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 2});
        builder.initializer("w", weights());
        builder.node("Add", {"x", "w"}, {"sum"});
        builder.node("Relu", {"sum"}, {"y"});
        builder.output("y", DataType::kFloat32, Shape{2, 2});
        return builder;
    }
    static Tensor weights() { return Tensor::from_doubles(DataType::kFloat32, {2, 2}, {1, -2, 3, -4}); }

    // Writes the model into `dir/model/` with `w` stored at `location`; returns the model path.
    static std::string save_with_external(const TempDir& dir, const std::string& location,
                                          std::optional<std::string> offset = {},
                                          std::optional<std::string> length = {}) {
        fs::create_directories(dir.file("model"));
        ModelBuilder builder = weighted_model();
        add_external(*builder.proto().mutable_graph()->mutable_initializer(0), location, offset, length);
        const std::string path = dir.file("model/model.onnx");
        builder.save(path);
        return path;
    }
};

// ---- parsing ------------------------------------------------------------------------------------

TEST_F(OnnxLoaderTest, ParsesSerializedModels) {
    const OnnxModel original = weighted_model().build();
    const std::string bytes = bytes_from_onnx(*original);
    const OnnxModel parsed = onnx_from_bytes(bytes);
    EXPECT_EQ(parsed->SerializeAsString(), bytes);
    EXPECT_EQ(OnnxFromBytes(loader_from_value(bytes))()->graph().node_size(), 2);
}

TEST_F(OnnxLoaderTest, RejectsBytesThatAreNotOnnx) {
    EXPECT_THAT(error_message<FormatError>([] { onnx_from_bytes(""); }),
                HasSubstr("is not a valid ONNX model: it is empty"));
    EXPECT_THAT(error_message<FormatError>([] { onnx_from_bytes(std::string("\xff\xff\xff\xff garbage", 12)); }),
                HasSubstr("is not a valid ONNX model: protobuf parsing failed"));
    // Text that happens to parse as protobuf fields still has no graph.
    onnx::ModelProto no_graph;
    no_graph.set_ir_version(8);
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_bytes(no_graph.SerializeAsString()); }),
                HasSubstr("is not a valid ONNX model: it has no graph"));
}

TEST_F(OnnxLoaderTest, RejectsTruncatedModels) {
    const std::string bytes = bytes_from_onnx(*weighted_model().build());
    for (std::size_t cut : {bytes.size() - 1, bytes.size() / 2, std::size_t{3}}) {
        SCOPED_TRACE(cut);
        EXPECT_THROW(onnx_from_bytes(bytes.substr(0, cut)), FormatError);
    }
}

TEST_F(OnnxLoaderTest, LoadsFromPath) {
    TempDir dir;
    const std::string path = dir.file("m.onnx");
    weighted_model().save(path);
    const OnnxModel model = onnx_from_path(path);
    ASSERT_EQ(model->graph().initializer_size(), 1);
    EXPECT_TRUE(tensor_from_proto(model->graph().initializer(0)).equals(weights()));
    EXPECT_EQ(OnnxFromPath(path)()->graph().name(), "test_graph");
}

TEST_F(OnnxLoaderTest, MissingOrCorruptFilesAreErrorsNamingThePath) {
    TempDir dir;
    const std::string missing = dir.file("nope.onnx");
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(missing); }),
                HasSubstr("Model file does not exist: '" + missing + "'"));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(dir.path()); }), HasSubstr(dir.path()));

    const std::string text = dir.file("notes.onnx");
    write_bytes(text, "\x08\x01 this is a text file, not a model\n");
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(text); }),
                HasSubstr("'" + text + "' is not a valid ONNX model:"));

    const std::string empty = dir.file("empty.onnx");
    write_bytes(empty, "");
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(empty); }),
                HasSubstr("'" + empty + "' is not a valid ONNX model: it is empty"));

    const std::string truncated = dir.file("truncated.onnx");
    const std::string bytes = bytes_from_onnx(*weighted_model().build());
    write_bytes(truncated, bytes.substr(0, bytes.size() - 5));
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(truncated); }),
                HasSubstr("'" + truncated + "' is not a valid ONNX model:"));

    EXPECT_THAT(error_message<PolygraphyException>([&] { bytes_from_path(missing); }),
                HasSubstr("File does not exist: '" + missing + "'"));
}

// ---- external data ------------------------------------------------------------------------------

// The path of the file mapped at `address` in this process, from /proc/self/maps ("" when none).
std::string mapped_file_at(const void* address) {
    std::ifstream maps("/proc/self/maps");
    const auto target = reinterpret_cast<uintptr_t>(address);
    for (std::string line; std::getline(maps, line);) {
        uintptr_t begin = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2 || target < begin || target >= end) continue;
        const auto slash = line.find('/');
        return slash == std::string::npos ? std::string() : line.substr(slash);
    }
    return "";
}

TEST_F(OnnxLoaderTest, ExternalDataStaysInItsFileAndIsReadWhenNeeded) {
    TempDir dir;
    const std::string path = save_with_external(dir, "weights.bin", "16", "16");
    write_bytes(dir.file("model/weights.bin"), std::string(16, 'x') + bytes_of(weights()) + "tail");

    const OnnxModel model = onnx_from_path(path);
    const onnx::TensorProto& w = model->graph().initializer(0);
    EXPECT_EQ(w.data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_FALSE(w.has_raw_data());
    const Tensor value = tensor_from_proto(w);
    EXPECT_TRUE(value.equals(weights()));
    EXPECT_EQ(mapped_file_at(value.data()), "");  // small: read, not mapped
    // Saved self-contained: the weights are read into the file, without polygraphy's marks.
    save_onnx(*model, dir.file("self_contained.onnx"));
    const OnnxModel saved = onnx_from_path(dir.file("self_contained.onnx"));
    EXPECT_EQ(saved->graph().initializer(0).data_location(), onnx::TensorProto::DEFAULT);
    EXPECT_TRUE(tensor_from_proto(saved->graph().initializer(0)).equals(weights()));
}

TEST_F(OnnxLoaderTest, LargeExternalTensorsAreMappedNotCopied) {
    TempDir dir;
    fs::create_directories(dir.file("model"));
    const Tensor big = testing::random_tensor({256, 256}, 7);  // 256 KiB: mapped
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 256});
    builder.initializer("w", big);
    builder.node("MatMul", {"x", "w"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 256});
    save_onnx_with_external_data(*builder.build(), dir.file("model/big.onnx"));

    const OnnxModel model = onnx_from_path(dir.file("model/big.onnx"));
    const Tensor value = tensor_from_proto(model->graph().initializer(0));
    EXPECT_TRUE(value.equals(big));
    EXPECT_EQ(mapped_file_at(value.data()), fs::canonical(dir.file("model/big.onnx.data")).string());
}

TEST_F(OnnxLoaderTest, ExternalDataThatShrankAfterLoadingIsAClearError) {
    TempDir dir;
    const std::string path = save_with_external(dir, "weights.bin");
    write_bytes(dir.file("model/weights.bin"), bytes_of(weights()));
    const OnnxModel model = onnx_from_path(path);
    write_bytes(dir.file("model/weights.bin"), bytes_of(weights()).substr(0, 10));
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(model->graph().initializer(0)); }),
                HasSubstr("Tensor 'w': external data of 16 bytes at offset 0 runs past the end of 'weights.bin'"));
    EXPECT_THROW(save_onnx(*model, dir.file("out.onnx")), FormatError);
    EXPECT_FALSE(fs::exists(dir.file("out.onnx")));
}

TEST_F(OnnxLoaderTest, AFilesOwnCheckedMarksAreNotTrusted) {
    TempDir dir;
    ModelBuilder builder = weighted_model();
    add_external(*builder.proto().mutable_graph()->mutable_initializer(0), "../secret.bin", "0", "16");
    auto* forged = builder.proto().mutable_graph()->mutable_initializer(0)->add_external_data();
    forged->set_key("polygraphy.folder");
    forged->set_value(dir.path());
    fs::create_directories(dir.file("model"));
    write_bytes(dir.file("secret.bin"), bytes_of(weights()));
    builder.save(dir.file("model/forged.onnx"));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(dir.file("model/forged.onnx")); }),
                HasSubstr("leaves the external data folder"));
    const OnnxModel ignored = onnx_from_path(dir.file("model/forged.onnx"), std::nullopt, true);
    EXPECT_THROW(tensor_from_proto(ignored->graph().initializer(0)), PolygraphyException);
}

TEST_F(OnnxLoaderTest, ExternalDataWithoutOffsetOrLengthAndInSubfolders) {
    TempDir dir;
    const std::string path = save_with_external(dir, "data/./w.bin");
    fs::create_directories(dir.file("model/data"));
    write_bytes(dir.file("model/data/w.bin"), bytes_of(weights()));
    EXPECT_TRUE(tensor_from_proto(onnx_from_path(path)->graph().initializer(0)).equals(weights()));
}

TEST_F(OnnxLoaderTest, ExternalDataDirOverridesTheModelFolder) {
    TempDir dir;
    const std::string path = save_with_external(dir, "weights.bin");
    fs::create_directories(dir.file("elsewhere"));
    write_bytes(dir.file("elsewhere/weights.bin"), bytes_of(weights()));
    EXPECT_THROW(onnx_from_path(path), PolygraphyException);  // not next to the model
    const OnnxModel model = onnx_from_path(path, dir.file("elsewhere"));
    EXPECT_TRUE(tensor_from_proto(model->graph().initializer(0)).equals(weights()));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path, dir.file("no-such-dir")); }),
                HasSubstr("External data folder does not exist"));
}

TEST_F(OnnxLoaderTest, IgnoreExternalDataLeavesReferencesAlone) {
    TempDir dir;
    const std::string path = save_with_external(dir, "missing.bin", "0", "16");
    const OnnxModel model = onnx_from_path(path, std::nullopt, true);
    const onnx::TensorProto& w = model->graph().initializer(0);
    EXPECT_EQ(w.data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_EQ(w.external_data_size(), 3);
    EXPECT_FALSE(w.has_raw_data());
}

// ---- scanning for external data without parsing ------------------------------------------------

TEST_F(OnnxLoaderTest, ScanFindsNoExternalDataInSelfContainedModels) {
    TempDir dir;
    weighted_model().save(dir.file("inline.onnx"));
    EXPECT_FALSE(onnx_file_may_use_external_data(dir.file("inline.onnx")));
}

TEST_F(OnnxLoaderTest, ScanFindsExternalInitializers) {
    TempDir dir;
    EXPECT_TRUE(onnx_file_may_use_external_data(save_with_external(dir, "weights.bin")));
}

TEST_F(OnnxLoaderTest, ScanFindsExternalTensorsInsideSubgraphAttributes) {
    TempDir dir;
    ModelBuilder builder = weighted_model();
    // If(c) with a Constant in each branch: well-formed nodes, as the node check at load wants them.
    onnx::NodeProto& branch = builder.node("If", {"x"}, {"z"}, "if");
    onnx::TensorProto* tensor = nullptr;
    for (const char* name : {"then_branch", "else_branch"}) {
        onnx::AttributeProto& attribute = *branch.add_attribute();
        attribute.set_name(name);
        attribute.set_type(onnx::AttributeProto::GRAPH);
        onnx::NodeProto& constant = *attribute.mutable_g()->add_node();
        constant.set_op_type("Constant");
        constant.add_output(std::string(name) + "_value");
        onnx::AttributeProto& value = *constant.add_attribute();
        value.set_name("value");
        value.set_type(onnx::AttributeProto::TENSOR);
        if (!tensor) tensor = value.mutable_t();
    }
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    builder.save(dir.file("flag_only.onnx"));
    EXPECT_FALSE(onnx_file_may_use_external_data(dir.file("flag_only.onnx")));
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    builder.save(dir.file("nested.onnx"));
    EXPECT_TRUE(onnx_file_may_use_external_data(dir.file("nested.onnx")));
}

TEST_F(OnnxLoaderTest, ScanTreatsUnreadableFilesAsNeedingTheCheckedPath) {
    TempDir dir;
    write_bytes(dir.file("garbage.onnx"), std::string("\x3a\xff\xff\xff\xff\x0f", 6));  // graph, absurd length
    EXPECT_TRUE(onnx_file_may_use_external_data(dir.file("garbage.onnx")));
    EXPECT_THROW(onnx_file_may_use_external_data(dir.file("missing.onnx")), PolygraphyException);
}

TEST_F(OnnxLoaderTest, RejectsParentDirectoryEscapes) {
    TempDir dir;
    const std::string path = save_with_external(dir, "../outside.bin");
    write_bytes(dir.file("outside.bin"), bytes_of(weights()));  // exists, but outside the model folder
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w' has an external data location that leaves the external data folder: "
                          "'../outside.bin'"));
    const std::string sneaky = save_with_external(dir, "sub/../../outside.bin");
    EXPECT_THROW(onnx_from_path(sneaky), PolygraphyException);
}

TEST_F(OnnxLoaderTest, RejectsAbsoluteLocations) {
    TempDir dir;
    write_bytes(dir.file("abs.bin"), bytes_of(weights()));
    const std::string path = save_with_external(dir, dir.file("abs.bin"));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w' has an absolute external data location: '" + dir.file("abs.bin") + "'"));
}

TEST_F(OnnxLoaderTest, RejectsSymlinksLeavingTheFolder) {
    TempDir dir;
    write_bytes(dir.file("secret.bin"), bytes_of(weights()));
    const std::string path = save_with_external(dir, "link.bin");
    fs::create_symlink(dir.file("secret.bin"), dir.file("model/link.bin"));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path); }),
                HasSubstr("outside the external data folder"));

    // A symlinked folder leading outside is caught too.
    const std::string nested = save_with_external(dir, "linkdir/secret.bin");
    fs::create_directory_symlink(dir.path(), dir.file("model/linkdir"));
    EXPECT_THROW(onnx_from_path(nested), PolygraphyException);

    // Symlinks that stay inside are fine.
    write_bytes(dir.file("model/real.bin"), bytes_of(weights()));
    fs::create_symlink("real.bin", dir.file("model/alias.bin"));
    const std::string inside = save_with_external(dir, "alias.bin");
    EXPECT_TRUE(tensor_from_proto(onnx_from_path(inside)->graph().initializer(0)).equals(weights()));
}

TEST_F(OnnxLoaderTest, RejectsOffsetsAndLengthsOutsideTheFile) {
    TempDir dir;
    std::string path = save_with_external(dir, "w.bin", "17");
    write_bytes(dir.file("model/w.bin"), bytes_of(weights()));  // 16 bytes
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w': external data offset 17 is past the end of 'w.bin' (16 bytes)"));

    path = save_with_external(dir, "w.bin", "8");
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(path); }),
                HasSubstr("external data of 16 bytes at offset 8 runs past the end of 'w.bin'"));

    path = save_with_external(dir, "w.bin", "0", "12");
    EXPECT_THAT(
        error_message<FormatError>([&] { onnx_from_path(path); }),
        HasSubstr("Tensor 'w': external data length 12 disagrees with its shape and dtype, which need 16 bytes"));

    path = save_with_external(dir, "w.bin", "18446744073709551615", "16");
    EXPECT_THROW(onnx_from_path(path), FormatError);

    path = save_with_external(dir, "w.bin", "12abc");
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w' has an invalid external data offset: '12abc'"));

    path = save_with_external(dir, "w.bin", "-1");
    EXPECT_THROW(onnx_from_path(path), FormatError);
}

TEST_F(OnnxLoaderTest, RejectsMissingFilesAndLocations) {
    TempDir dir;
    std::string path = save_with_external(dir, "absent.bin");
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w': external data file 'absent.bin' was not found"));

    fs::create_directories(dir.file("model/folder.bin"));
    path = save_with_external(dir, "folder.bin");
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(path); }), HasSubstr("is not a regular file"));

    ModelBuilder builder = weighted_model();
    auto* w = builder.proto().mutable_graph()->mutable_initializer(0);
    w->clear_raw_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    path = dir.file("model/no_location.onnx");
    builder.save(path);
    EXPECT_THAT(error_message<FormatError>([&] { onnx_from_path(path); }),
                HasSubstr("Tensor 'w' is marked as external data but has no location"));
}

TEST_F(OnnxLoaderTest, LoadsExternalDataInSubgraphsAndConstants) {
    TempDir dir;
    fs::create_directories(dir.file("model"));
    write_bytes(dir.file("model/w.bin"), bytes_of(weights()) + bytes_of(weights()));

    ModelBuilder builder;
    builder.input("cond", DataType::kBool, Shape{});
    auto& constant = builder.node("Constant", {}, {"c"});
    testing::set_attr(constant, "value", weights());
    add_external(*constant.mutable_attribute(0)->mutable_t(), "w.bin", "16", "16");

    onnx::GraphProto branch;
    branch.set_name("then");
    *branch.add_initializer() = tensor_to_proto(weights(), "inner_w");
    add_external(*branch.mutable_initializer(0), "w.bin");
    auto* identity = branch.add_node();
    identity->set_op_type("Identity");
    identity->add_input("inner_w");
    identity->add_output("then_out");
    branch.add_output()->set_name("then_out");
    onnx::GraphProto else_branch = branch;
    else_branch.set_name("else");

    auto& if_node = builder.node("If", {"cond"}, {"out"});
    auto* then_attr = if_node.add_attribute();
    then_attr->set_name("then_branch");
    then_attr->set_type(onnx::AttributeProto::GRAPH);
    *then_attr->mutable_g() = branch;
    auto* else_attr = if_node.add_attribute();
    else_attr->set_name("else_branch");
    else_attr->set_type(onnx::AttributeProto::GRAPH);
    *else_attr->mutable_g() = else_branch;
    builder.output("out", DataType::kFloat32, Shape{2, 2});
    builder.save(dir.file("model/if.onnx"));

    const OnnxModel model = onnx_from_path(dir.file("model/if.onnx"));
    const auto& graph = model->graph();
    EXPECT_TRUE(tensor_from_proto(graph.node(0).attribute(0).t()).equals(weights()));
    for (int i = 0; i < 2; ++i) {
        const onnx::TensorProto& inner = graph.node(1).attribute(i).g().initializer(0);
        EXPECT_EQ(inner.data_location(), onnx::TensorProto::EXTERNAL);  // checked, read when needed
        EXPECT_TRUE(tensor_from_proto(inner).equals(weights()));
    }
}

TEST_F(OnnxLoaderTest, HostileSubgraphDataIsRejectedToo) {
    TempDir dir;
    fs::create_directories(dir.file("model"));
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 2});
    onnx::GraphProto body;
    *body.add_initializer() = tensor_to_proto(weights(), "inner_w");
    add_external(*body.mutable_initializer(0), "/etc/passwd");
    auto& node = builder.node("Loop", {"", "", "x"}, {"y"});
    auto* attr = node.add_attribute();
    attr->set_name("body");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = body;
    builder.output("y", DataType::kFloat32, Shape{2, 2});
    builder.save(dir.file("model/loop.onnx"));
    EXPECT_THAT(error_message<PolygraphyException>([&] { onnx_from_path(dir.file("model/loop.onnx")); }),
                HasSubstr("Tensor 'inner_w' has an absolute external data location: '/etc/passwd'"));
}

// ---- outputs ------------------------------------------------------------------------------------

class ModifyOutputsTest : public OnnxLoaderTest {
protected:
    // x -> Relu(a) -> Split(b, "", c) ; Constant(k) ; Add(b, k) -> d. Graph output: d.
    static OnnxModel layered_model() {
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(4)});
        builder.initializer("w", Tensor::from_doubles(DataType::kInt64, {2}, {2, 2}));
        builder.node("Relu", {"x"}, {"a"});
        builder.node("Split", {"a", "w"}, {"b", "", "c"});
        testing::set_attr(builder.node("Constant", {}, {"k"}), "value",
                          Tensor::from_doubles(DataType::kFloat32, {}, {1}));
        builder.node("Add", {"b", "k"}, {"d"});
        builder.node("Relu", {"c"}, {"a"});  // a duplicate producer name must still collapse
        builder.output("d", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(2)});
        auto* info = builder.proto().mutable_graph()->add_value_info();
        info->set_name("b");
        info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
        return builder.build();
    }
    static std::vector<std::string> output_names(const OnnxModel& model) {
        std::vector<std::string> names;
        for (const auto& output : model->graph().output()) names.push_back(output.name());
        return names;
    }
};

TEST_F(ModifyOutputsTest, MarkAllUsesNonConstantNodeOutputsInOrder) {
    const OnnxModel model = modify_outputs(layered_model(), kMarkAll);
    EXPECT_EQ(output_names(model), (std::vector<std::string>{"a", "b", "c", "d"}));
    const auto& outputs = model->graph().output();
    EXPECT_EQ(outputs[1].type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);  // from value_info
    EXPECT_FALSE(outputs[0].has_type());                                                 // unknown: left empty
    EXPECT_EQ(outputs[3].type().tensor_type().shape().dim(0).dim_param(), "n");          // previous output
}

TEST_F(ModifyOutputsTest, MarkAllThenExclude) {
    const OnnxModel model = ModifyOutputs(loader_from_value(layered_model()), kMarkAll, {"a", "d"})();
    EXPECT_EQ(output_names(model), (std::vector<std::string>{"b", "c"}));
}

TEST_F(ModifyOutputsTest, ExplicitNamesReplaceOutputsAndCollapseDuplicates) {
    const OnnxModel model = modify_outputs(layered_model(), {"c", "x", "w", "k", "c"});
    EXPECT_EQ(output_names(model), (std::vector<std::string>{"c", "x", "w", "k"}));
    const auto& outputs = model->graph().output();
    EXPECT_EQ(outputs[1].type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);  // graph input
    EXPECT_EQ(outputs[2].type().tensor_type().elem_type(), onnx::TensorProto::INT64);  // initializer
    EXPECT_EQ(outputs[2].type().tensor_type().shape().dim(0).dim_value(), 2);
}

TEST_F(ModifyOutputsTest, EmptyOutputsKeepTheCurrentOnes) {
    EXPECT_EQ(output_names(modify_outputs(layered_model(), {})), std::vector<std::string>{"d"});
    EXPECT_EQ(output_names(modify_outputs(layered_model(), {}, {"d"})), std::vector<std::string>{});
}

TEST_F(ModifyOutputsTest, UnknownNamesAreErrorsWithHints) {
    EXPECT_THAT(error_message<PolygraphyException>([] {
                    modify_outputs(layered_model(), {"d", "bb"});
                }),
                HasSubstr("Tensor 'bb' does not exist in the model, so it cannot be marked as an output. "
                          "Did you mean 'b'?"));
    EXPECT_THAT(error_message<PolygraphyException>([] { modify_outputs(layered_model(), kMarkAll, {"zzzzzz"}); }),
                HasSubstr("Tensor 'zzzzzz' does not exist in the model, so it cannot be excluded from the outputs."));
}

TEST_F(ModifyOutputsTest, ModifiesTheSharedModel) {
    const OnnxModel original = layered_model();
    const OnnxModel result = modify_outputs(original, {"a"});
    EXPECT_EQ(result.get(), original.get());
}

// ---- saving -------------------------------------------------------------------------------------

TEST_F(OnnxLoaderTest, SavesAndReloads) {
    TempDir dir;
    const std::string path = dir.file("out/saved.onnx");
    fs::create_directories(dir.file("out"));
    const OnnxModel model = SaveOnnx(loader_from_value(weighted_model().build()), path)();
    EXPECT_EQ(model->graph().node_size(), 2);
    const OnnxModel reloaded = onnx_from_path(path);
    EXPECT_EQ(reloaded->SerializeAsString(), model->SerializeAsString());
    EXPECT_EQ(bytes_from_path(path), bytes_from_onnx(*model));
    EXPECT_EQ(BytesFromPath(path)(), bytes_from_onnx(*model));
}

TEST_F(OnnxLoaderTest, LoaderChainMarksAndSaves) {
    TempDir dir;
    weighted_model().save(dir.file("in.onnx"));
    const OnnxLoader chain = SaveOnnx(ModifyOutputs(OnnxFromPath(dir.file("in.onnx")), kMarkAll), dir.file("out.onnx"));
    chain();
    const OnnxModel saved = onnx_from_path(dir.file("out.onnx"));
    ASSERT_EQ(saved->graph().output_size(), 2);
    EXPECT_EQ(saved->graph().output(0).name(), "sum");
    EXPECT_EQ(saved->graph().output(1).name(), "y");
}

// ---- metadata -----------------------------------------------------------------------------------

TEST_F(OnnxLoaderTest, InputMetadataSkipsInitializers) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat16, DynShape{Dim::named("batch"), Dim::fixed(3), Dim::unknown()});
    builder.input("w", DataType::kFloat32, Shape{2});  // also an initializer: a weight, not an input
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    auto* no_shape = builder.proto().mutable_graph()->add_input();
    no_shape->set_name("s");
    no_shape->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    builder.output("y", DataType::kBool, Shape{1});

    const TensorMetadata inputs = get_onnx_input_metadata(builder.proto().graph());
    EXPECT_EQ(inputs.keys(), (std::vector<std::string>{"x", "s"}));
    EXPECT_EQ(inputs.at("x").dtype, DataType::kFloat16);
    EXPECT_EQ(*inputs.at("x").shape, (DynShape{Dim::named("batch"), Dim::fixed(3), Dim::unknown()}));
    EXPECT_EQ(inputs.at("s").dtype, DataType::kInt64);
    EXPECT_FALSE(inputs.at("s").shape.has_value());

    const TensorMetadata outputs = get_onnx_output_metadata(builder.proto().graph());
    EXPECT_EQ(outputs.keys(), std::vector<std::string>{"y"});
    EXPECT_EQ(outputs.at("y").dtype, DataType::kBool);
    EXPECT_EQ(*outputs.at("y").shape, to_dyn_shape({1}));
}

// Fuzzing finding F3 (RELIABILITY.md): a graph output declaring a negative dimension. The metadata
// readers refuse it with a ModelError naming the tensor, which callers must treat as a refusal.
TEST_F(OnnxLoaderTest, NegativeDeclaredDimensionsAreAModelErrorNamingTheTensor) {
    ModelBuilder builder;
    builder.input("s", DataType::kFloat32, Shape{2});
    builder.node("Identity", {"s"}, {"t"});
    builder.output("t", DataType::kFloat32, Shape{2, 2});
    builder.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(1)->set_dim_value(-5);
    EXPECT_NO_THROW(get_onnx_input_metadata(builder.proto().graph()));
    try {
        get_onnx_output_metadata(builder.proto().graph());
        FAIL() << "a negative dimension was accepted";
    } catch (const ModelError& error) {
        EXPECT_THAT(error.what(), HasSubstr("Tensor 't' declares a negative dimension (-5)"));
    }
}

TEST_F(OnnxLoaderTest, OpsetLookup) {
    ModelBuilder builder(13);
    builder.opset_import("com.microsoft", 1);
    const onnx::ModelProto& model = builder.proto();
    EXPECT_EQ(get_onnx_opset(model), 13);
    EXPECT_EQ(get_onnx_opset(model, "ai.onnx"), 13);
    EXPECT_EQ(get_onnx_opset(model, "com.microsoft"), 1);
    EXPECT_EQ(get_onnx_opset(model, "ai.onnx.ml"), 1);

    onnx::ModelProto aliased;
    auto* import = aliased.add_opset_import();
    import->set_domain("ai.onnx");
    import->set_version(19);
    EXPECT_EQ(get_onnx_opset(aliased), 19);
    EXPECT_EQ(get_onnx_opset(onnx::ModelProto{}), 1);
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

// Optional: every model shipped with Polygraphy's tests and examples loads, and its initializers decode.
TEST_F(OnnxLoaderTest, LoadsPolygraphyModels) {
    const char* shared = std::getenv("POLYGRAPHY_SHARED_DIR");
    const fs::path root = fs::path(shared ? shared : POLYGRAPHY_SHARED_DIR) / "models";
    if (!fs::is_directory(root)) GTEST_SKIP() << "no shared models at " << root;
    std::size_t loaded = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.path().extension() != ".onnx") continue;
        SCOPED_TRACE(entry.path().string());
        // ext_weights.onnx comes without its data file; weightless.* models have no initializer values.
        const std::string name = entry.path().filename().string();
        const bool missing_data = name == "ext_weights.onnx";
        const bool weightless = name.rfind("weightless.", 0) == 0;
        OnnxModel model;
        try {
            model = onnx_from_path(entry.path().string(), std::nullopt, missing_data);
        } catch (const MalformedNodeError& error) {
            // Polygraphy's lint example: a MatMul with one input, refused at load (`check lint` reports it).
            EXPECT_EQ(name, "cli_check_01_linting_an_onnx_model_bad_graph.onnx") << error.what();
            EXPECT_THAT(error.what(), HasSubstr("Malformed node 'MatMul_2' (MatMul, ai.onnx opset 11): it has 1 "
                                                "input, but MatMul takes exactly 2"));
            continue;
        } catch (const PolygraphyException& error) {
            ADD_FAILURE() << error.what();
            continue;
        }
        for (const auto& initializer : model->graph().initializer()) {
            if (missing_data) {
                EXPECT_THROW(tensor_from_proto(initializer), FormatError);
            } else if (weightless && initializer.raw_data().empty()) {
                EXPECT_THAT(error_message<UnsupportedError>([&] { tensor_from_proto(initializer); }),
                            HasSubstr("the model was saved without weights (TRT_WEIGHTLESS)"));
            } else {
                EXPECT_NO_THROW(tensor_from_proto(initializer)) << initializer.name();
            }
        }
        get_onnx_input_metadata(model->graph());
        ++loaded;
    }
    EXPECT_GT(loaded, 50u);
}

}  // namespace
}  // namespace polygraphy
