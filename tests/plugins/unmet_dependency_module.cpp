// A test module whose group depends on a group that `polygraphy run` does not have.
#include "polygraphy/extension.h"

namespace {

class NeverRegisteredArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Never Registered"; }
    std::string description() const override { return "Not added to any tool."; }
    std::vector<polygraphy::tools::OptionSpec> options() const override { return {}; }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

class OrphanArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Orphan"; }
    std::string description() const override { return "Depends on a group nobody adds."; }
    std::vector<std::type_index> depends_on() const override { return {std::type_index(typeid(NeverRegisteredArgs))}; }
    std::vector<polygraphy::tools::OptionSpec> options() const override {
        return {polygraphy::tools::Option({"--test-orphan"}).help("Must never appear")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_orphan", "1.0");
    registrar.add_run_arg_group<OrphanArgs>();
}
