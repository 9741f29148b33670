// A test module declaring a flag that `polygraphy run` has built in (--ref-threads).
#include "polygraphy/extension.h"

namespace {

class BuiltinClashArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Builtin Clash"; }
    std::string description() const override { return "Options of the builtin-clash module."; }
    std::vector<polygraphy::tools::OptionSpec> options() const override {
        return {polygraphy::tools::Option({"--test-builtin-clash-ok"}).help("A fine flag"),
                polygraphy::tools::Option({"--ref-threads"}).help("Taken from the reference runtime")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_builtin_clash", "1.0");
    registrar.add_run_arg_group<BuiltinClashArgs>();
}
