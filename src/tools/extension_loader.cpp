// Discovery and all-or-nothing loading of extension modules (shared libraries; see polygraphy/extension.h).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "backend/ref/custom_kernel_registry.h"
#include "common/install_layout.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/extension.h"
#include "tools/args/backend/runner_select.h"
#include "tools/registry.h"
#include "tools/run/run.h"

namespace polygraphy::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginPathVariable = "POLYGRAPHY_PLUGIN_PATH";

// Collects what a module registers; nothing reaches the real registry until every check passed.
class StagingRegistrar : public ExtensionRegistrar {
public:
    void set_module_info(std::string name, std::string version) override {
        name_ = std::move(name);
        version_ = std::move(version);
    }
    void add_run_arg_group(ArgGroupFactory factory) override {
        if (!factory) throw InternalError("add_run_arg_group() was given an empty factory");
        groups_.push_back(std::move(factory));
    }
    void add_tool(ToolFactory factory) override {
        if (!factory) throw InternalError("add_tool() was given an empty factory");
        tools_.push_back(std::move(factory));
    }
    void add_ref_kernel(ref::CustomKernel kernel) override { kernels_.push_back(std::move(kernel)); }

    std::optional<std::string> name_;
    std::string version_ = "unknown";
    std::vector<ArgGroupFactory> groups_;
    std::vector<ToolFactory> tools_;
    std::vector<ref::CustomKernel> kernels_;
};

// "libpolygraphy_reshape_destroyer.so" -> "polygraphy_reshape_destroyer".
std::string name_from_file(const fs::path& path) {
    std::string name = path.filename().string();
    if (name.rfind("lib", 0) == 0 && name.size() > 3) name = name.substr(3);
    const auto so = name.find(".so");
    if (so != std::string::npos && so > 0) name = name.substr(0, so);
    return name;
}

// The message of an exception caused by a module. Set-up checks throw InternalError, whose
// "Polygraphy internal error: " prefix would blame Polygraphy; it is dropped.
std::string module_fault(const std::exception& error) {
    const std::string text = error.what();
    const std::string internal = InternalError("").what();
    return text.rfind(internal, 0) == 0 ? text.substr(internal.size()) : text;
}

// The option strings a group adds to a tool; a runner group also owns its selection flag (which
// RunnerSelectArgs declares on its behalf).
std::vector<std::string> group_flags(const ArgGroup& group) {
    std::vector<std::string> flags;
    if (dynamic_cast<const RunnerSelectArgs*>(&group)) return flags;
    for (const auto& spec : group.options())
        if (!spec.positional) flags.insert(flags.end(), spec.flags.begin(), spec.flags.end());
    if (const auto* runner = dynamic_cast<const RunnerArgGroup*>(&group)) flags.push_back(runner->runner_flag());
    return flags;
}

std::string describe_owner(const std::string& group_title, const std::string& module_name,
                           const std::string& candidate_name) {
    if (module_name.empty()) return "the built-in option of group " + python_repr(group_title);
    if (module_name == candidate_name) return "its own group " + python_repr(group_title);
    std::string where;
    for (const auto& module : extension_modules())
        if (module.name == module_name && !module.path.empty()) where = " (" + module.path + ")";
    return "the option of extension module " + python_repr(module_name) + where + ", group " + python_repr(group_title);
}

// Sets up `polygraphy run` with the modules already loaded plus `candidate` and reports the first
// flag the candidate shares with anything else (or any other set-up failure).
std::optional<std::string> check_run_groups(const ExtensionModule& candidate) {
    auto& registry = detail::module_registry();
    const std::vector<ExtensionModule> saved = registry;
    std::map<const ArgGroup*, std::string> owners;  // group -> module that made it
    auto tag = [&owners](ExtensionModule module) {
        if (module.run_arg_groups)
            module.run_arg_groups = [factory = module.run_arg_groups, name = module.name, &owners] {
                auto groups = factory();
                for (const auto& group : groups) owners[group.get()] = name;
                return groups;
            };
        return module;
    };
    for (auto& module : registry) module = tag(module);
    registry.push_back(tag(candidate));

    std::optional<std::string> problem;
    RunTool tool;
    std::string setup_error;
    try {
        tool.setup("polygraphy run");
    } catch (const std::exception& e) {
        setup_error = module_fault(e);
    } catch (...) {
        setup_error = "unknown error";
    }
    registry = saved;

    try {
        std::map<std::string, std::pair<std::string, std::string>> seen;  // flag -> (group title, module)
        for (const auto& group : tool.groups().all()) {
            const auto owner = owners.find(group.get());
            const std::string module = owner == owners.end() ? std::string() : owner->second;
            for (const auto& flag : group_flags(*group)) {
                const auto [it, inserted] = seen.emplace(flag, std::make_pair(group->title(), module));
                if (inserted || (module != candidate.name && it->second.second != candidate.name)) continue;
                // Report from the candidate's side: "its option X (group T) clashes with <other>".
                const bool candidate_first = it->second.second == candidate.name;
                const std::string own_title = candidate_first ? it->second.first : group->title();
                const std::string other = candidate_first
                                              ? describe_owner(group->title(), module, "")
                                              : describe_owner(it->second.first, it->second.second, candidate.name);
                return "its option " + python_repr(flag) + " (group " + python_repr(own_title) + ") clashes with " +
                       other;
            }
        }
    } catch (const std::exception& e) {
        return "its argument groups failed to declare their options: " + module_fault(e);
    }
    if (!setup_error.empty()) problem = "`polygraphy run` cannot be set up with it: " + setup_error;
    return problem;
}

std::optional<std::string> check_tools(const ExtensionModule& candidate) {
    if (!candidate.tools) return std::nullopt;
    std::vector<std::unique_ptr<Tool>> tools;
    try {
        tools = candidate.tools();
    } catch (const std::exception& e) {
        return "creating its tools failed: " + module_fault(e);
    }
    std::set<std::string> names;
    for (const auto& existing : make_tools()) names.insert(existing->name());
    for (const auto& tool : tools) {
        if (!names.insert(tool->name()).second)
            return "its tool " + python_repr(tool->name()) + " has the name of a tool that already exists";
        try {
            tool->setup("polygraphy " + tool->name());
        } catch (const std::exception& e) {
            return "its tool " + python_repr(tool->name()) + " cannot be set up: " + module_fault(e);
        }
    }
    return std::nullopt;
}

// The whole load; returns the cause of failure.
std::optional<std::string> try_load(const std::string& path) {
    dlerror();
    // Refused modules are never dlclose'd: code of a module that has run (static constructors,
    // registration) may still be referenced, e.g. by atexit handlers. It stays mapped, unused, until exit.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* error = dlerror();
        std::string cause = error ? error : "dlopen failed";
        if (cause.rfind(path + ": ", 0) == 0) cause = cause.substr(path.size() + 2);  // the path is named already
        return "cannot be opened: " + cause;
    }
    auto* abi_version = reinterpret_cast<PolygraphyExtensionAbiVersionFn>(dlsym(handle, kExtensionAbiVersionSymbol));
    auto* register_fn = reinterpret_cast<PolygraphyRegisterExtensionFn>(dlsym(handle, kExtensionRegisterSymbol));
    if (!abi_version || !register_fn) {
        return std::string("it does not export ") +
               (abi_version ? kExtensionRegisterSymbol : kExtensionAbiVersionSymbol) +
               "() (is it a Polygraphy extension module?)";
    }
    const int version = abi_version();
    if (version != POLYGRAPHY_EXTENSION_ABI_VERSION) {
        return "it was built for extension ABI version " + std::to_string(version) +
               ", but this Polygraphy expects version " + std::to_string(POLYGRAPHY_EXTENSION_ABI_VERSION) +
               " (rebuild it against this Polygraphy's SDK)";
    }

    StagingRegistrar staging;
    try {
        register_fn(staging);
    } catch (const std::exception& e) {
        return "its registration failed: " + module_fault(e);
    } catch (...) {
        return "its registration failed with an exception of unknown type";
    }

    ExtensionModule module;
    module.name = staging.name_.value_or(name_from_file(path));
    module.version = staging.version_;
    module.path = path;
    if (module.name.empty()) return std::string("it registered an empty module name");
    if (staging.groups_.empty() && staging.tools_.empty() && staging.kernels_.empty())
        return std::string("it registered nothing (no argument groups, no tools, no kernels)");
    for (const auto& existing : extension_modules())
        if (existing.name == module.name)
            return "an extension module named " + python_repr(module.name) + " is already loaded" +
                   (existing.path.empty() ? std::string() : " from " + existing.path);
    if (!staging.groups_.empty())
        module.run_arg_groups = [factories = staging.groups_, name = module.name] {
            std::vector<std::unique_ptr<ArgGroup>> groups;
            for (const auto& factory : factories) {
                auto group = factory();
                if (!group)
                    throw InternalError("an argument group factory of extension module '" + name + "' returned null");
                groups.push_back(std::move(group));
            }
            return groups;
        };
    if (!staging.tools_.empty())
        module.tools = [factories = staging.tools_, name = module.name] {
            std::vector<std::unique_ptr<Tool>> tools;
            for (const auto& factory : factories) {
                auto tool = factory();
                if (!tool) throw InternalError("a tool factory of extension module '" + name + "' returned null");
                tools.push_back(std::move(tool));
            }
            return tools;
        };

    if (module.run_arg_groups)
        if (auto problem = check_run_groups(module)) return problem;
    if (auto problem = check_tools(module)) return problem;
    for (std::size_t i = 0; i < staging.kernels_.size(); ++i) {
        const ref::CustomKernel& kernel = staging.kernels_[i];
        if (auto problem = ref::custom_kernel_problem(kernel)) return "its " + *problem;
        for (std::size_t j = 0; j < i; ++j)
            if (staging.kernels_[j].domain == kernel.domain && staging.kernels_[j].op_type == kernel.op_type)
                return "it registers the kernel of " + kernel.op_type + " (domain '" + kernel.domain + "') twice";
    }
    for (ref::CustomKernel& kernel : staging.kernels_) ref::register_custom_kernel(std::move(kernel));

    detail::module_registry().push_back(std::move(module));
    return std::nullopt;
}

std::set<std::string>& attempted_paths() {
    static std::set<std::string> paths;
    return paths;
}

// One warning per folder that someone else could put code into.
void warn_if_unsafe(const std::string& folder) {
    struct stat info {};
    if (::stat(folder.c_str(), &info) != 0) return;
    std::vector<std::string> reasons;
    // Any world-writable folder: the sticky bit only stops deleting other users' files, not adding new ones.
    if (info.st_mode & S_IWOTH) reasons.push_back("writable by every user");
    if (info.st_uid != ::getuid() && info.st_uid != 0)
        reasons.push_back("owned by another user (uid " + std::to_string(info.st_uid) + ")");
    if (reasons.empty()) return;
    std::string text = reasons[0];
    if (reasons.size() > 1) text += " and " + reasons[1];
    logger().warning("Extension module folder " + folder + " is " + text +
                     ": anyone able to write there can make polygraphy run their code");
}

}  // namespace

std::string default_extension_module_folder() {
    const fs::path folder = install_layout::private_folder();
    return folder.empty() ? std::string() : (folder / "plugins").string();
}

std::vector<std::string> extension_module_folders() {
    std::vector<std::string> folders;
    if (const char* value = std::getenv(kPluginPathVariable)) {
        const std::string text = value;
        std::size_t start = 0;
        while (start <= text.size()) {
            const auto end = std::min(text.find(':', start), text.size());
            // An empty entry would mean "." for PATH; here it means nothing.
            if (end > start) folders.push_back(text.substr(start, end - start));
            start = end + 1;
        }
    }
    const std::string fallback = default_extension_module_folder();
    if (!fallback.empty()) folders.push_back(fallback);
    return folders;
}

namespace {

// One warning line per refused module, even when the cause has several lines ("...\nNote: ...").
void warn_refused(const std::string& file, std::string cause) {
    std::replace(cause.begin(), cause.end(), '\n', ' ');
    logger().warning("Ignoring extension module " + file + ": " + cause);
}

}  // namespace

bool load_extension_module(const std::string& path) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(fs::path(path), error);
    if (error) canonical = fs::path(path);
    const std::string file = canonical.string();
    if (!attempted_paths().insert(file).second) return false;  // same file through two folders
    try {
        if (auto cause = try_load(file)) {
            warn_refused(file, *cause);
            return false;
        }
    } catch (const std::exception& e) {
        warn_refused(file, module_fault(e));
        return false;
    }
    const auto& module = extension_modules().back();
    logger().verbose("Loaded extension module: " + module.name + " | Version: " + module.version + " | Path: " + file);
    return true;
}

void load_extension_modules() {
    static bool loaded = false;
    if (loaded) return;
    loaded = true;
    const std::vector<std::string> folders = extension_module_folders();
    const std::size_t from_variable = folders.size() - (default_extension_module_folder().empty() ? 0 : 1);
    std::set<std::string> seen_folders;
    for (std::size_t i = 0; i < folders.size(); ++i) {
        const std::string& folder = folders[i];
        std::error_code error;
        if (!fs::is_directory(folder, error)) {
            // The default folder is optional; a folder the user named that is missing is worth a word.
            if (i < from_variable)
                logger().warning(std::string(kPluginPathVariable) + " names " + folder + ", which is not a folder");
            continue;
        }
        if (!seen_folders.insert(fs::weakly_canonical(folder, error).string()).second) continue;  // named twice
        warn_if_unsafe(folder);
        std::vector<fs::path> files;
        for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
            const fs::path& candidate = it->path();
            const std::string name = candidate.filename().string();
            std::error_code type_error;
            if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0 &&
                fs::is_regular_file(candidate, type_error))
                files.push_back(candidate);
        }
        if (error) {
            logger().warning("Cannot list extension module folder " + folder + ": " + error.message());
            continue;
        }
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            struct stat info {};
            if (::stat(file.c_str(), &info) == 0 && (info.st_mode & S_IWOTH))
                logger().warning("Extension module " + file.string() +
                                 " is writable by every user: anyone can change the code polygraphy runs");
            load_extension_module(file.string());
        }
    }
}

}  // namespace polygraphy::tools
