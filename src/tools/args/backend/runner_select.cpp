#include "tools/args/backend/runner_select.h"

#include <algorithm>

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {

std::string RunnerSelectArgs::dest_for(const RunnerArgGroup& group) {
    std::string flag = group.runner_flag();
    flag.erase(0, flag.find_first_not_of('-'));
    for (char& c : flag)
        if (c == '-') c = '_';
    return "runner_select:" + flag;
}

std::vector<RunnerArgGroup*> RunnerSelectArgs::runner_groups() const {
    std::vector<RunnerArgGroup*> groups;
    if (!arg_groups()) return groups;
    for (const auto& group : arg_groups()->all())
        if (auto* runner = dynamic_cast<RunnerArgGroup*>(group.get())) groups.push_back(runner);
    return groups;
}

std::vector<OptionSpec> RunnerSelectArgs::options() const {
    std::vector<OptionSpec> options;
    for (const auto* group : runner_groups()) {
        const std::string flag = group->runner_flag();
        if (flag.size() < 3 || flag.rfind("--", 0) != 0)
            throw InternalError("runner group '" + group->title() + "' has a malformed selection flag '" + flag + "'");
        std::string help = "Run inference using " + group->runner_display_name() + ".";
        if (!group->runner_extra_help().empty()) {
            help += ' ';
            help += group->runner_extra_help();
        }
        options.push_back(Option({flag}).dest(dest_for(*group)).kind(OptionKind::kFlag).help(help));
    }
    return options;
}

void RunnerSelectArgs::parse(const ParsedArgs& args) {
    std::vector<std::pair<std::size_t, RunnerArgGroup*>> chosen;
    for (auto* group : runner_groups())
        for (const auto& occurrence : args.occurrences(dest_for(*group)))
            chosen.emplace_back(occurrence.position, group);
    std::stable_sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    selected_.clear();
    for (const auto& [position, group] : chosen) {
        if (auto reason = group->unavailable_reason())
            throw UnsupportedError(*reason + " (option: " + group->runner_flag() + ")");
        selected_.push_back(group);
    }
}

bool RunnerSelectArgs::add_to_job(RunJob& job) const {
    for (const RunnerArgGroup* group : selected_) job.runners.push_back(group->runner_step());
    return true;
}

}  // namespace polygraphy::tools
