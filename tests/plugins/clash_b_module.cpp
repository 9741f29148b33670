// Test module b of a pair that both declare --test-clash-flag (the second loaded is refused).
#include "polygraphy/extension.h"

namespace {

class ClashBArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Clash B"; }
    std::string description() const override { return "Options of clash module b."; }
    std::vector<polygraphy::tools::OptionSpec> options() const override {
        return {polygraphy::tools::Option({"--test-clash-b-only"})
                    .kind(polygraphy::tools::OptionKind::kFlag)
                    .help("Only in b"),
                polygraphy::tools::Option({"--test-clash-flag"}).help("Declared by both clash modules")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_clash_b", "1.0");
    registrar.add_run_arg_group<ClashBArgs>();
}
