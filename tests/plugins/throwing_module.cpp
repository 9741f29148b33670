// A test module that registers a group, then throws: nothing of it may be kept.
#include <stdexcept>

#include "polygraphy/extension.h"

namespace {

class HalfRegisteredArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "Half Registered"; }
    std::string description() const override { return "Must never appear."; }
    std::vector<polygraphy::tools::OptionSpec> options() const override {
        return {polygraphy::tools::Option({"--test-half-registered"}).help("Must never appear")};
    }
    void parse(const polygraphy::tools::ParsedArgs&) override {}
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_throwing", "0.1");
    registrar.add_run_arg_group<HalfRegisteredArgs>();
    throw std::runtime_error("the licence server is unreachable\nNote: tried licences.example.com");
}
