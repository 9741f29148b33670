// Built twice, as clash_a_module (CLASH_NAME "a") and clash_b_module ("b"): both declare
// --test-clash-flag, so the second one loaded is refused. Each also has a flag of its own.
#include "polygraphy/extension.h"

#ifndef CLASH_NAME
#error "CLASH_NAME must be defined (\"a\" or \"b\")"
#endif

namespace {

using polygraphy::tools::Option;
using polygraphy::tools::OptionKind;
using polygraphy::tools::OptionSpec;

const std::string kName = CLASH_NAME;

class ClashArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Clash " + std::string(1, static_cast<char>(kName[0] - 'a' + 'A')); }
    std::string description() const override { return "Options of clash module " + kName + "."; }
    std::vector<OptionSpec> options() const override {
        return {Option({"--test-clash-" + kName + "-only"}).kind(OptionKind::kFlag).help("Only in " + kName),
                Option({"--test-clash-flag"}).help("Declared by both clash modules")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_clash_" + kName, "1.0");
    registrar.add_run_arg_group<ClashArgs>();
}
