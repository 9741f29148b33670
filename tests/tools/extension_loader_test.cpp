// Extension modules loaded from shared libraries: discovery, the happy path, and every way a module
// can be refused (each leaves the tool working, with one warning naming the module and the cause).
// The modules are built from tests/plugins/*.cpp into POLYGRAPHY_TEST_PLUGIN_DIR/<folder>/.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "plugin_test_util.h"
#include "polygraphy/extension.h"
#include "tools/registry.h"
#include "build_paths.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using testing::save_identity_model;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_with_plugins;
using testing::TempDir;

const std::string kPluginDir = POLYGRAPHY_TEST_PLUGIN_DIR;

std::string folder(const std::string& name) {
    return kPluginDir + "/" + name;
}
std::string module_file(const std::string& folder_name, const std::string& target) {
    return folder(folder_name) + "/lib" + target + ".so";
}

std::vector<std::string> warnings(const std::string& output) {
    std::vector<std::string> lines;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);)
        if (line.rfind("[W] ", 0) == 0) lines.push_back(line);
    return lines;
}

// The one-input, one-output model the good module's pass-through runner can run.
class ExtensionModuleCli : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = dir_.file("identity.onnx");
        save_identity_model(model_, Shape{2, 3});
    }
    TempDir dir_;
    std::string model_;
};

TEST_F(ExtensionModuleCli, GoodModuleAddsItsOptionsToRunHelp) {
    const auto result = run_with_plugins(folder("good"), {"run", "-h"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_TRUE(warnings(result.output).empty()) << result.output;
    EXPECT_THAT(result.output, HasSubstr("\nGood Test Module:\n  Options of the good test module.\n"));
    EXPECT_THAT(result.output, HasSubstr("--test-good-mode {plain,fancy}"));
    // The selection flag sits with the other runners.
    const auto runners = result.output.find("\nRunners:");
    const auto good = result.output.find("--test-good ");
    const auto next_section = result.output.find("\nModel:");
    ASSERT_NE(runners, std::string::npos);
    ASSERT_NE(good, std::string::npos);
    EXPECT_TRUE(runners < good && (next_section == std::string::npos || good < next_section)) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--test-good           Run inference using PassThrough."));
}

TEST_F(ExtensionModuleCli, GoodModuleRunnerRunsAndItsOptionsAreValidated) {
    auto result = run_with_plugins(folder("good"), {"run", model_, "--test-good", "--test-good-mode", "fancy"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("test-good-runner mode: fancy"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime: "));

    // Compared against the built-in runtime like any runner.
    result = run_with_plugins(folder("good"), {"run", model_, "--test-good", "--ref"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | Output: 'y'"));

    result = run_with_plugins(folder("good"), {"run", model_, "--test-good", "--test-good-mode", "odd"});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("argument --test-good-mode: invalid choice: 'odd' (choose from 'plain', 'fancy')"));
}

TEST_F(ExtensionModuleCli, GoodModuleAddsATool) {
    auto result = run_with_plugins(folder("good"), {"-h"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("test-hello"));
    EXPECT_THAT(result.output, HasSubstr("Says hello (a tool added by a test module)."));
    result = run_with_plugins(folder("good"), {"test-hello", "--who", "tests"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Hello, tests!"));

    result = run_with_plugins(std::nullopt, {"test-hello"});
    EXPECT_EQ(result.exit_code, 2) << "without the module the tool does not exist";
    EXPECT_THAT(result.output, HasSubstr("invalid choice: 'test-hello'"));
}

TEST_F(ExtensionModuleCli, VersionListsLoadedModules) {
    for (const std::string flag : {"--version", "-v"}) {
        const auto result = run_with_plugins(folder("good"), {flag});
        ASSERT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("Polygraphy | Version: "));
        EXPECT_THAT(result.output, HasSubstr("Extension Module: polygraphy_test_good | Version: 1.2.3 | Path: ['" +
                                             module_file("good", "good_module") + "']"));
    }
    const auto without = run_with_plugins(std::nullopt, {"--version"});
    EXPECT_THAT(without.output, Not(HasSubstr("Extension Module:")));
}

// Checks the one warning and that `run -h` still works without the module.
void expect_refused(const CommandResult& result, const std::string& file, const std::string& cause) {
    EXPECT_EQ(result.exit_code, 0) << result.output;
    const auto lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 1u) << result.output;
    EXPECT_THAT(lines[0], HasSubstr("[W] Ignoring extension module " + file + ": "));
    EXPECT_THAT(lines[0], HasSubstr(cause));
    EXPECT_THAT(result.output, HasSubstr("usage: polygraphy run"));
}

TEST_F(ExtensionModuleCli, MissingEntryPointIsRefused) {
    const auto result = run_with_plugins(folder("missing_entry"), {"run", "-h"});
    expect_refused(result, module_file("missing_entry", "missing_entry_module"),
                   "it does not export polygraphy_register_extension() (is it a Polygraphy extension module?)");
}

TEST_F(ExtensionModuleCli, WrongAbiVersionIsRefusedBeforeRegistration) {
    const auto result = run_with_plugins(folder("wrong_abi"), {"run", "-h"});
    expect_refused(result, module_file("wrong_abi", "wrong_abi_module"),
                   "it was built for extension ABI version " + std::to_string(POLYGRAPHY_EXTENSION_ABI_VERSION + 41) +
                       ", but this Polygraphy expects version " + std::to_string(POLYGRAPHY_EXTENSION_ABI_VERSION));
    EXPECT_THAT(result.output, Not(HasSubstr("registration of a module with the wrong ABI version was called")));
}

TEST_F(ExtensionModuleCli, ThrowingRegistrationLeavesNothingBehind) {
    auto result = run_with_plugins(folder("throwing"), {"run", "-h"});
    expect_refused(result, module_file("throwing", "throwing_module"),
                   "its registration failed: the licence server is unreachable Note: tried licences.example.com");
    EXPECT_THAT(result.output, Not(HasSubstr("--test-half-registered")));
    EXPECT_THAT(result.output, Not(HasSubstr("Half Registered")));
    result = run_with_plugins(folder("throwing"), {"--version"});
    EXPECT_THAT(result.output, Not(HasSubstr("polygraphy_test_throwing")));
}

TEST_F(ExtensionModuleCli, SecondModuleClaimingAFlagIsRefused) {
    auto result = run_with_plugins(folder("clash"), {"run", "-h"});
    expect_refused(result, module_file("clash", "clash_b_module"),
                   "its option '--test-clash-flag' (group 'Clash B') clashes with the option of extension module "
                   "'polygraphy_test_clash_a' (" +
                       module_file("clash", "clash_a_module") + "), group 'Clash A'");
    // The first module is whole, nothing of the second is left.
    EXPECT_THAT(result.output, HasSubstr("--test-clash-a-only"));
    EXPECT_THAT(result.output, Not(HasSubstr("--test-clash-b-only")));
    EXPECT_THAT(result.output, Not(HasSubstr("\nClash B:")));
    result = run_with_plugins(folder("clash"), {"--version"});
    EXPECT_THAT(result.output, HasSubstr("polygraphy_test_clash_a"));
    EXPECT_THAT(result.output, Not(HasSubstr("polygraphy_test_clash_b")));
}

TEST_F(ExtensionModuleCli, ModuleFlagClashingWithABuiltInFlagIsRefused) {
    const auto result = run_with_plugins(folder("builtin_clash"), {"run", "-h"});
    expect_refused(result, module_file("builtin_clash", "builtin_clash_module"),
                   "its option '--ref-threads' (group 'Builtin Clash') clashes with the built-in option of group "
                   "'Reference Runtime Inference'");
    EXPECT_THAT(result.output, Not(HasSubstr("--test-builtin-clash-ok")));
}

TEST_F(ExtensionModuleCli, GroupWithAnUnmetDependencyIsRefused) {
    const auto result = run_with_plugins(folder("unmet_dependency"), {"run", "-h"});
    expect_refused(result, module_file("unmet_dependency", "unmet_dependency_module"),
                   "`polygraphy run` cannot be set up with it: argument group 'Orphan' of tool 'run' depends on a "
                   "group the tool does not subscribe to");
    EXPECT_THAT(result.output, Not(HasSubstr("--test-orphan")));
}

TEST_F(ExtensionModuleCli, FileThatIsNotALibraryIsRefused) {
    const std::string junk = dir_.file("libjunk.so");
    std::ofstream(junk) << "this is not an ELF file\n";
    const auto result = run_with_plugins(dir_.path(), {"run", "-h"});
    expect_refused(result, junk, "cannot be opened: ");
}

TEST_F(ExtensionModuleCli, BadModulesDoNotStopGoodOnes) {
    const std::string path = folder("missing_entry") + ":" + folder("wrong_abi") + ":" + folder("throwing") + ":" +
                             folder("good") + ":" + folder("clash") + ":" + folder("builtin_clash");
    const auto result = run_with_plugins(path, {"run", model_, "--test-good", "--test-clash-a-only"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 5u) << result.output;
    EXPECT_THAT(lines[0], HasSubstr("libmissing_entry_module.so"));
    EXPECT_THAT(lines[1], HasSubstr("libwrong_abi_module.so"));
    EXPECT_THAT(lines[2], HasSubstr("libthrowing_module.so"));
    EXPECT_THAT(lines[3], HasSubstr("libclash_b_module.so"));
    EXPECT_THAT(lines[4], HasSubstr("libbuiltin_clash_module.so"));
    EXPECT_THAT(result.output, HasSubstr("test-good-runner mode: plain"));
}

TEST_F(ExtensionModuleCli, SearchPathOrderDuplicatesAndMissingFolders) {
    // The same folder twice: loaded once, silently. An empty entry is not the current directory.
    auto result = run_with_plugins(folder("good") + "::" + folder("good"), {"--version"}, folder("clash"));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_TRUE(warnings(result.output).empty()) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("polygraphy_test_clash")));

    // A copy of a module elsewhere: the first on the path wins, the second is named.
    const std::string copy = dir_.file("libgood_module.so");
    std::filesystem::copy_file(module_file("good", "good_module"), copy);
    result = run_with_plugins(dir_.path() + ":" + folder("good"), {"--version"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Path: ['" + copy + "']"));
    auto lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 1u) << result.output;
    EXPECT_THAT(lines[0], HasSubstr("libgood_module.so: an extension module named 'polygraphy_test_good' is "
                                    "already loaded from " +
                                    copy));

    result = run_with_plugins(dir_.file("nowhere"), {"--version"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 1u) << result.output;
    EXPECT_EQ(lines[0], "[W] POLYGRAPHY_PLUGIN_PATH names " + dir_.file("nowhere") + ", which is not a folder");
}

TEST_F(ExtensionModuleCli, NothingIsLoadedFromTheCurrentDirectory) {
    const auto result = run_with_plugins(std::nullopt, {"--version"}, folder("good"));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("Extension Module:")));
    EXPECT_TRUE(warnings(result.output).empty()) << result.output;
}

TEST_F(ExtensionModuleCli, WorldWritableFolderGetsAWarning) {
    const std::string open_folder = dir_.file("open");
    std::filesystem::create_directory(open_folder);
    std::filesystem::copy_file(module_file("good", "good_module"), open_folder + "/libgood_module.so");
    ASSERT_EQ(::chmod(open_folder.c_str(), 0777), 0);
    auto result = run_with_plugins(open_folder + ":" + open_folder + "/", {"--version"});  // one warning for both
    ASSERT_EQ(result.exit_code, 0) << result.output;
    auto lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 1u) << result.output;
    EXPECT_EQ(lines[0],
              "[W] Extension module folder " + open_folder +
                  " is writable by every user: anyone able to write there can make polygraphy run their code");
    EXPECT_THAT(result.output, HasSubstr("polygraphy_test_good")) << "a warning, not a refusal";

    // The sticky bit does not stop other users from adding files, so it still warns.
    ASSERT_EQ(::chmod(open_folder.c_str(), 01777), 0);
    result = run_with_plugins(open_folder, {"--version"});
    EXPECT_EQ(warnings(result.output).size(), 1u) << result.output;

    ASSERT_EQ(::chmod(open_folder.c_str(), 0755), 0);
    result = run_with_plugins(open_folder, {"--version"});
    EXPECT_TRUE(warnings(result.output).empty()) << result.output;
}

TEST_F(ExtensionModuleCli, WorldWritableModuleFileGetsAWarning) {
    const std::string file = dir_.file("libgood_module.so");
    std::filesystem::copy_file(module_file("good", "good_module"), file);
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
    ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
    const auto result = run_with_plugins(dir_.path(), {"--version"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto lines = warnings(result.output);
    ASSERT_EQ(lines.size(), 1u) << result.output;
    EXPECT_EQ(lines[0], "[W] Extension module " + file +
                            " is writable by every user: anyone can change the code polygraphy runs");
    EXPECT_THAT(result.output, HasSubstr("polygraphy_test_good"));
}

// ---- in-process API -------------------------------------------------------------------------------

class PluginPathVariable : public ::testing::Test {
protected:
    void SetUp() override {
        if (const char* value = std::getenv("POLYGRAPHY_PLUGIN_PATH")) saved_ = value;
    }
    void TearDown() override {
        if (saved_)
            ::setenv("POLYGRAPHY_PLUGIN_PATH", saved_->c_str(), 1);
        else
            ::unsetenv("POLYGRAPHY_PLUGIN_PATH");
    }
    std::optional<std::string> saved_;
};

TEST_F(PluginPathVariable, FoldersComeFromTheVariableThenTheLibraryFolder) {
    const std::string fallback = default_extension_module_folder();
    EXPECT_THAT(fallback, ::testing::EndsWith("/polygraphy/plugins"));
    ::setenv("POLYGRAPHY_PLUGIN_PATH", "/a::/b/c:", 1);
    EXPECT_EQ(extension_module_folders(), (std::vector<std::string>{"/a", "/b/c", fallback}));
    ::unsetenv("POLYGRAPHY_PLUGIN_PATH");
    EXPECT_EQ(extension_module_folders(), (std::vector<std::string>{fallback}));
}

}  // namespace
}  // namespace polygraphy::tools
