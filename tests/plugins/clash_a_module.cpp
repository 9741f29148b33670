// Test module a of a pair that both declare --test-clash-flag (the second loaded is refused).
#include "polygraphy/extension.h"

namespace {

class ClashAArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Clash A"; }
    std::string description() const override { return "Options of clash module a."; }
    std::vector<polygraphy::tools::OptionSpec> options() const override {
        return {polygraphy::tools::Option({"--test-clash-a-only"})
                    .kind(polygraphy::tools::OptionKind::kFlag)
                    .help("Only in a"),
                polygraphy::tools::Option({"--test-clash-flag"}).help("Declared by both clash modules")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_clash_a", "1.0");
    registrar.add_run_arg_group<ClashAArgs>();
}
