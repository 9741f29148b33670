#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

std::string option_dest(const OptionSpec& spec) {
    if (!spec.dest.empty()) return spec.dest;
    if (spec.flags.empty()) throw InternalError("an option has neither flags nor a dest");
    std::string source = spec.flags.front();
    for (const auto& flag : spec.flags) {
        if (flag.rfind("--", 0) == 0) {
            source = flag;
            break;
        }
    }
    std::size_t start = 0;
    while (start < source.size() && source[start] == '-') ++start;
    std::string dest = source.substr(start);
    for (char& c : dest)
        if (c == '-') c = '_';
    return dest;
}

bool ParsedArgs::has(const std::string& dest) const {
    return values_.count(dest) > 0;
}

int ParsedArgs::count(const std::string& dest) const {
    auto found = values_.find(dest);
    return found == values_.end() ? 0 : static_cast<int>(found->second.size());
}

std::optional<std::string> ParsedArgs::value(const std::string& dest) const {
    auto found = values_.find(dest);
    if (found == values_.end() || found->second.empty() || found->second.back().values.empty()) return std::nullopt;
    return found->second.back().values.back();
}

std::vector<std::string> ParsedArgs::values(const std::string& dest) const {
    auto found = values_.find(dest);
    if (found == values_.end() || found->second.empty()) return {};
    return found->second.back().values;
}

const std::vector<ParsedArgs::Occurrence>& ParsedArgs::occurrences(const std::string& dest) const {
    static const std::vector<Occurrence> kNone;
    auto found = values_.find(dest);
    return found == values_.end() ? kNone : found->second;
}

void ParsedArgs::add(const std::string& dest, Occurrence occurrence) {
    values_[dest].push_back(std::move(occurrence));
}

}  // namespace polygraphy::tools
