#include "tools/args/parser.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "tools/args/util.h"

namespace polygraphy::tools {
namespace {

constexpr std::size_t kHelpIndex = 0;  // -h/--help is always the first option

bool is_positional_spec(const OptionSpec& spec) {
    return spec.positional;
}

bool takes_no_values(OptionKind kind) {
    return kind == OptionKind::kFlag || kind == OptionKind::kCount;
}

// argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$'
bool looks_like_negative_number(const std::string& token) {
    if (token.size() < 2 || token[0] != '-') return false;
    const std::string body = token.substr(1);
    const auto dot = body.find('.');
    auto all_digits = [](const std::string& text) {
        return std::all_of(text.begin(), text.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    if (dot == std::string::npos) return all_digits(body);
    const std::string before = body.substr(0, dot), after = body.substr(dot + 1);
    return !after.empty() && all_digits(before) && all_digits(after);
}

std::string upper(std::string text) {
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
}

std::string metavar_of(const OptionSpec& spec) {
    if (!spec.metavar.empty()) return spec.metavar;
    if (!spec.choices.empty()) {
        std::string out = "{";
        for (std::size_t i = 0; i < spec.choices.size(); ++i) out += (i ? "," : "") + spec.choices[i];
        return out + "}";
    }
    return spec.positional ? option_dest(spec) : upper(option_dest(spec));
}

// argparse's _format_args.
std::string args_string(const OptionSpec& spec) {
    const std::string m = metavar_of(spec);
    switch (spec.kind) {
        case OptionKind::kFlag:
        case OptionKind::kCount:
            return "";
        case OptionKind::kValue:
            return m;
        case OptionKind::kOptionalValue:
            return "[" + m + "]";
        case OptionKind::kValues:
            return m + " [" + m + " ...]";
        case OptionKind::kAnyValues:
            return "[" + m + " ...]";
        case OptionKind::kRemainder:
            return "...";
    }
    return m;
}

std::string invocation(const OptionSpec& spec) {
    if (spec.positional) return metavar_of(spec);
    const std::string args = args_string(spec);
    std::string out;
    for (std::size_t i = 0; i < spec.flags.size(); ++i) {
        if (i) out += ", ";
        out += spec.flags[i];
        if (!args.empty()) out += " " + args;
    }
    return out;
}

std::string usage_part(const OptionSpec& spec) {
    if (spec.positional) return args_string(spec);
    std::string part = spec.flags.front();
    const std::string args = args_string(spec);
    if (!args.empty()) part += " " + args;
    return spec.required ? part : "[" + part + "]";
}

std::vector<std::string> split_words(const std::string& text) {
    std::vector<std::string> words;
    std::string word;
    for (char c : text) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!word.empty()) words.push_back(std::move(word));
            word.clear();
        } else {
            word += c;
        }
    }
    if (!word.empty()) words.push_back(std::move(word));
    return words;
}

// textwrap.wrap over collapsed whitespace (argparse's _split_lines), without hyphen breaking.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
    std::vector<std::string> lines;
    std::string line;
    for (const auto& word : split_words(text)) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

bool parse_python_int(const std::string& text) {
    return args_util::parse_int(text).has_value();
}
bool parse_python_float(const std::string& text) {
    return args_util::parse_float(text).has_value();
}

}  // namespace

int help_width() {
    if (const char* columns = std::getenv("COLUMNS")) {
        const auto value = args_util::parse_int(columns);
        if (value && *value > 2 && *value < 10000) return static_cast<int>(*value) - 2;
    }
    return 78;
}

struct ArgumentParser::Match {
    std::size_t index;
    std::string option_string;
    std::optional<std::string> explicit_arg;
};

ArgumentParser::ArgumentParser(std::string prog, std::string description)
    : prog_(std::move(prog)), description_(std::move(description)) {
    OptionSpec help;
    help.flags = {"-h", "--help"};
    help.dest = "help";
    help.kind = OptionKind::kFlag;
    help.help = "show this help message and exit";
    options_.push_back(help);
    sections_.push_back(Section{"", "", {kHelpIndex}});
}

void ArgumentParser::add_group(const std::string& title, const std::string& description,
                               const std::vector<OptionSpec>& options) {
    Section* section = nullptr;
    if (title.empty()) {
        section = &sections_.front();
    } else {
        sections_.push_back(Section{title, description, {}});
        section = &sections_.back();
    }
    for (const auto& spec : options) {
        if (spec.flags.empty()) throw InternalError("an option of group '" + title + "' has no flags");
        for (const auto& flag : spec.flags) {
            const bool dashed = !flag.empty() && flag[0] == '-';
            if (spec.positional == dashed || flag.empty() || flag == "-" || flag == "--")
                throw InternalError("option '" + flag + "' of group '" + title + "' is malformed");
            for (const auto& existing : options_) {
                if (std::find(existing.flags.begin(), existing.flags.end(), flag) != existing.flags.end())
                    throw InternalError("option '" + flag + "' is declared twice (second time by group '" + title +
                                        "')");
            }
        }
        if (spec.kind == OptionKind::kOptionalValue && !spec.const_value && !spec.positional)
            throw InternalError("option '" + spec.flags.front() + "' takes an optional value but has no const_value");
        if (spec.positional && spec.kind != OptionKind::kValue && spec.kind != OptionKind::kOptionalValue &&
            spec.kind != OptionKind::kValues && spec.kind != OptionKind::kAnyValues)
            throw InternalError("positional '" + spec.flags.front() + "' has an unsupported kind");
        section->options.push_back(options_.size());
        options_.push_back(spec);
    }
}

std::string ArgumentParser::action_name(const OptionSpec& spec) const {
    if (spec.positional) return spec.metavar.empty() ? option_dest(spec) : spec.metavar;
    std::string name;
    for (std::size_t i = 0; i < spec.flags.size(); ++i) name += (i ? "/" : "") + spec.flags[i];
    return name;
}

// argparse's _parse_optional + _get_option_tuples. Returns no match for positional-looking tokens,
// a match with index == npos for unknown options.
std::vector<ArgumentParser::Match> ArgumentParser::match_option(const std::string& token) const {
    auto exact = [&](const std::string& text) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < options_.size(); ++i) {
            if (options_[i].positional) continue;
            for (const auto& flag : options_[i].flags)
                if (flag == text) return i;
        }
        return std::nullopt;
    };

    if (token.empty() || token[0] != '-') return {};
    if (auto index = exact(token)) return {Match{*index, token, std::nullopt}};
    if (token.size() == 1) return {};
    const auto equals = token.find('=');
    if (equals != std::string::npos) {
        const std::string head = token.substr(0, equals);
        if (auto index = exact(head)) return {Match{*index, head, token.substr(equals + 1)}};
    }

    std::vector<Match> tuples;
    if (token[1] == '-') {
        if (allow_abbrev_) {
            const std::string prefix = equals == std::string::npos ? token : token.substr(0, equals);
            std::optional<std::string> explicit_arg;
            if (equals != std::string::npos) explicit_arg = token.substr(equals + 1);
            for (std::size_t i = 0; i < options_.size(); ++i) {
                if (options_[i].positional) continue;
                for (const auto& flag : options_[i].flags)
                    if (flag.rfind(prefix, 0) == 0) tuples.push_back(Match{i, flag, explicit_arg});
            }
        }
    } else {
        const std::string short_prefix = token.substr(0, 2);
        const std::string short_explicit = token.substr(2);
        for (std::size_t i = 0; i < options_.size(); ++i) {
            if (options_[i].positional) continue;
            for (const auto& flag : options_[i].flags) {
                if (flag == short_prefix)
                    tuples.push_back(Match{i, flag, short_explicit});
                else if (flag.rfind(token, 0) == 0)
                    tuples.push_back(Match{i, flag, std::nullopt});
            }
        }
    }

    // Several spellings of one option (--iterations/--iters for --iter) are not ambiguous.
    std::set<std::size_t> distinct;
    for (const auto& tuple : tuples) distinct.insert(tuple.index);
    if (distinct.size() > 1) {
        std::string matches;
        for (std::size_t i = 0; i < tuples.size(); ++i) matches += (i ? ", " : "") + tuples[i].option_string;
        throw ArgumentError("ambiguous option: " + token + " could match " + matches);
    }
    if (distinct.size() == 1) return {tuples.front()};

    if (looks_like_negative_number(token)) return {};
    if (token.find(' ') != std::string::npos) return {};
    return {Match{std::string::npos, token, std::nullopt}};
}

ParseResult ArgumentParser::parse_known_args(const std::vector<std::string>& args) const {
    ParseResult result;
    result.args.argv = args;
    const std::size_t n = args.size();

    // Classify every token first, as argparse does: 'O' option, 'A' value/positional, '-' for "--".
    std::vector<char> kinds(n, 'A');
    std::vector<std::optional<Match>> matches(n);
    bool only_positionals = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (only_positionals) continue;
        if (args[i] == "--") {
            kinds[i] = '-';
            only_positionals = true;
            continue;
        }
        auto found = match_option(args[i]);
        if (!found.empty()) {
            kinds[i] = 'O';
            matches[i] = found.front();
        }
    }

    std::vector<std::size_t> positionals;
    for (std::size_t i = 0; i < options_.size(); ++i)
        if (is_positional_spec(options_[i])) positionals.push_back(i);
    std::size_t next_positional = 0;
    std::set<std::size_t> seen;

    auto record = [&](std::size_t index, const std::string& option_string, std::vector<std::string> values,
                      std::size_t position) {
        const OptionSpec& spec = options_[index];
        for (const auto& value : values) {
            if (spec.type == ValueType::kInt && !parse_python_int(value))
                throw ArgumentError("argument " + action_name(spec) + ": invalid int value: " + python_repr(value));
            if (spec.type == ValueType::kFloat && !parse_python_float(value))
                throw ArgumentError("argument " + action_name(spec) + ": invalid float value: " + python_repr(value));
            if (!spec.choices.empty() &&
                std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
                std::string choices;
                for (std::size_t c = 0; c < spec.choices.size(); ++c)
                    choices += (c ? ", " : "") + python_repr(spec.choices[c]);
                throw ArgumentError("argument " + action_name(spec) + ": invalid choice: " + python_repr(value) +
                                    " (choose from " + choices + ")");
            }
        }
        if (!spec.exclusive_group.empty()) {
            for (std::size_t other : seen) {
                if (other != index && options_[other].exclusive_group == spec.exclusive_group)
                    throw ArgumentError("argument " + action_name(spec) + ": not allowed with argument " +
                                        action_name(options_[other]));
            }
        }
        seen.insert(index);
        result.args.add(option_dest(spec), ParsedArgs::Occurrence{position, std::move(values), option_string});
    };

    // Assigns a run of value tokens to the positionals still waiting; returns how many were used.
    auto consume_positionals = [&](const std::vector<std::size_t>& run) -> std::size_t {
        std::size_t used = 0;
        while (next_positional < positionals.size() && used < run.size()) {
            const std::size_t index = positionals[next_positional];
            const OptionSpec& spec = options_[index];
            std::size_t reserved = 0;  // minimum needed by later positionals
            for (std::size_t later = next_positional + 1; later < positionals.size(); ++later) {
                const OptionKind kind = options_[positionals[later]].kind;
                if (kind == OptionKind::kValue || kind == OptionKind::kValues) ++reserved;
            }
            const std::size_t remaining = run.size() - used;
            const std::size_t spare = remaining > reserved ? remaining - reserved : 0;
            std::size_t take = 0;
            switch (spec.kind) {
                case OptionKind::kValue:
                    take = 1;
                    break;
                case OptionKind::kOptionalValue:
                    take = std::min<std::size_t>(1, spare);
                    break;
                case OptionKind::kValues:
                    take = std::max<std::size_t>(1, spare);
                    break;
                default:
                    take = spare;
                    break;
            }
            take = std::min(take, remaining);
            std::vector<std::string> values;
            for (std::size_t k = 0; k < take; ++k) values.push_back(args[run[used + k]]);
            record(index, spec.flags.front(), values, run[used]);
            used += take;
            ++next_positional;
        }
        return used;
    };

    std::size_t i = 0;
    while (i < n) {
        if (kinds[i] == '-') {
            ++i;
            continue;
        }
        if (kinds[i] == 'A') {
            std::vector<std::size_t> run;
            std::size_t j = i;
            for (; j < n && kinds[j] != 'O'; ++j)
                if (kinds[j] == 'A') run.push_back(j);
            const std::size_t used = consume_positionals(run);
            for (std::size_t k = used; k < run.size(); ++k) result.unknown.push_back(args[run[k]]);
            i = j;
            continue;
        }

        Match match = *matches[i];
        if (match.index == std::string::npos) {
            result.unknown.push_back(args[i]);
            ++i;
            continue;
        }
        const std::size_t position = i;
        std::size_t index = match.index;
        std::string option_string = match.option_string;
        std::optional<std::string> explicit_arg = match.explicit_arg;
        // Flags combined in one token (`-vq`) are all validated before any takes effect, as in argparse.
        std::vector<std::pair<std::size_t, std::string>> combined;
        auto take_combined = [&]() {
            for (const auto& [flag_index, flag_string] : combined) {
                if (flag_index == kHelpIndex) return true;
                record(flag_index, flag_string, {}, position);
            }
            return false;
        };
        while (true) {
            const OptionSpec& spec = options_[index];
            if (takes_no_values(spec.kind)) {
                if (!explicit_arg) {
                    combined.emplace_back(index, option_string);
                    if (take_combined()) {
                        result.help_requested = true;
                        return result;
                    }
                    ++i;
                    break;
                }
                // `-vv`, `-qv`: single-dash flags may be combined; anything else is an error.
                const bool single_dash = option_string.size() == 2 && option_string[1] != '-';
                if (!single_dash || explicit_arg->empty())
                    throw ArgumentError("argument " + action_name(spec) + ": ignored explicit argument " +
                                        python_repr(*explicit_arg));
                combined.emplace_back(index, option_string);
                const std::string next_flag = std::string("-") + explicit_arg->front();
                std::optional<std::size_t> next;
                for (std::size_t k = 0; k < options_.size() && !next; ++k) {
                    if (options_[k].positional) continue;
                    for (const auto& flag : options_[k].flags)
                        if (flag == next_flag) next = k;
                }
                if (!next)
                    throw ArgumentError("argument " + action_name(spec) + ": ignored explicit argument " +
                                        python_repr(*explicit_arg));
                index = *next;
                option_string = next_flag;
                const std::string rest = explicit_arg->substr(1);
                explicit_arg = rest.empty() ? std::nullopt : std::optional<std::string>(rest);
                continue;
            }
            if (take_combined()) {
                result.help_requested = true;
                return result;
            }

            std::vector<std::string> values;
            if (explicit_arg) {
                values.push_back(*explicit_arg);
                record(index, option_string, std::move(values), position);
                ++i;
                break;
            }
            if (spec.kind == OptionKind::kRemainder) {
                for (std::size_t k = i + 1; k < n; ++k) values.push_back(args[k]);
                record(index, option_string, std::move(values), position);
                i = n;
                break;
            }
            std::size_t available = 0;
            while (i + 1 + available < n && kinds[i + 1 + available] == 'A') ++available;
            std::size_t take = 0;
            switch (spec.kind) {
                case OptionKind::kValue:
                    if (available < 1) throw ArgumentError("argument " + action_name(spec) + ": expected one argument");
                    take = 1;
                    break;
                case OptionKind::kOptionalValue:
                    take = std::min<std::size_t>(1, available);
                    break;
                case OptionKind::kValues:
                    if (available < 1)
                        throw ArgumentError("argument " + action_name(spec) + ": expected at least one argument");
                    take = available;
                    break;
                default:
                    take = available;
                    break;
            }
            for (std::size_t k = 0; k < take; ++k) values.push_back(args[i + 1 + k]);
            if (spec.kind == OptionKind::kOptionalValue && take == 0) values.push_back(*spec.const_value);
            record(index, option_string, std::move(values), position);
            i += 1 + take;
            break;
        }
    }

    std::vector<std::string> missing;
    for (std::size_t index = 0; index < options_.size(); ++index) {
        const OptionSpec& spec = options_[index];
        if (seen.count(index)) continue;
        const bool required =
            spec.positional ? (spec.kind == OptionKind::kValue || spec.kind == OptionKind::kValues) : spec.required;
        if (required) missing.push_back(action_name(spec));
    }
    if (!missing.empty()) {
        std::string names;
        for (std::size_t k = 0; k < missing.size(); ++k) names += (k ? ", " : "") + missing[k];
        throw ArgumentError("the following arguments are required: " + names);
    }
    return result;
}

std::string ArgumentParser::format_usage(int width) const {
    if (width <= 0) width = help_width();
    const std::size_t text_width = static_cast<std::size_t>(width);
    const std::string prefix = "usage: ";
    // Declaration order, as argparse lists actions: -h, the groups' options, then the tool's own
    // options (added last, though shown first in the help).
    std::vector<std::size_t> order{kHelpIndex};
    for (std::size_t s = 1; s < sections_.size(); ++s)
        order.insert(order.end(), sections_[s].options.begin(), sections_[s].options.end());
    for (std::size_t index : sections_.front().options)
        if (index != kHelpIndex) order.push_back(index);
    std::vector<std::string> optional_parts, positional_parts;
    for (std::size_t index : order) {
        const OptionSpec& spec = options_[index];
        (spec.positional ? positional_parts : optional_parts).push_back(usage_part(spec));
    }
    std::string usage = prog_;
    for (const auto& part : optional_parts) usage += " " + part;
    for (const auto& part : positional_parts) usage += " " + part;
    if (prefix.size() + usage.size() <= text_width) return prefix + usage + "\n";

    // argparse's wrapping: options on lines indented under the program name, then positionals.
    auto get_lines = [&](const std::vector<std::string>& parts, const std::string& indent, bool first) {
        std::vector<std::string> lines;
        std::vector<std::string> line;
        std::size_t line_length = first ? prefix.size() - 1 : indent.size() - 1;
        for (const auto& part : parts) {
            if (line_length + 1 + part.size() > text_width && !line.empty()) {
                std::string text = indent;
                for (std::size_t k = 0; k < line.size(); ++k) text += (k ? " " : "") + line[k];
                lines.push_back(text);
                line.clear();
                line_length = indent.size() - 1;
            }
            line.push_back(part);
            line_length += part.size() + 1;
        }
        if (!line.empty()) {
            std::string text = indent;
            for (std::size_t k = 0; k < line.size(); ++k) text += (k ? " " : "") + line[k];
            lines.push_back(text);
        }
        if (first && !lines.empty()) lines[0] = lines[0].substr(indent.size());
        return lines;
    };
    const bool short_prog = static_cast<double>(prefix.size() + prog_.size()) <= 0.75 * static_cast<double>(text_width);
    const std::string indent(short_prog ? prefix.size() + prog_.size() + 1 : prefix.size(), ' ');
    std::vector<std::string> lines;
    if (short_prog) {
        std::vector<std::string> parts{prog_};
        parts.insert(parts.end(), optional_parts.begin(), optional_parts.end());
        lines = get_lines(parts, indent, true);
        auto more = get_lines(positional_parts, indent, false);
        lines.insert(lines.end(), more.begin(), more.end());
    } else {
        lines.push_back(prog_);
        auto opts = get_lines(optional_parts, indent, false);
        auto pos = get_lines(positional_parts, indent, false);
        lines.insert(lines.end(), opts.begin(), opts.end());
        lines.insert(lines.end(), pos.begin(), pos.end());
    }
    std::string out = prefix;
    for (std::size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
    return out + "\n";
}

std::size_t help_position(const std::vector<HelpRow>& rows, int width) {
    const std::size_t max_help_position = std::min<std::size_t>(24, static_cast<std::size_t>(std::max(width - 20, 4)));
    std::size_t longest = 0;
    for (const auto& row : rows) longest = std::max(longest, row.indent + row.header.size());
    return std::min(longest + 2, max_help_position);
}

std::string format_help_row(const HelpRow& row, std::size_t position, int width) {
    std::string out = std::string(row.indent, ' ') + row.header;
    const auto help_lines = wrap(row.help, std::max<std::size_t>(static_cast<std::size_t>(width) - position, 11));
    if (help_lines.empty()) return out + "\n";
    const std::size_t action_width = position > row.indent + 2 ? position - row.indent - 2 : 0;
    if (row.header.size() <= action_width)
        out += std::string(action_width - row.header.size() + 2, ' ');
    else
        out += "\n" + std::string(position, ' ');
    out += help_lines.front() + "\n";
    for (std::size_t k = 1; k < help_lines.size(); ++k) out += std::string(position, ' ') + help_lines[k] + "\n";
    return out;
}

std::string ArgumentParser::format_help(int width) const {
    if (width <= 0) width = help_width();
    std::vector<HelpRow> rows;
    for (const auto& spec : options_) rows.push_back({2, invocation(spec), spec.help});
    const std::size_t position = help_position(rows, width);

    std::string out = format_usage(width);
    if (!description_.empty()) {
        std::string description = description_;
        while (!description.empty() && description.back() == '\n') description.pop_back();
        out += "\n" + description + "\n";
    }
    for (const auto& section : sections_) {
        if (section.options.empty()) continue;
        out += "\n" + (section.title.empty() ? std::string("options") : section.title) + ":\n";
        if (!section.description.empty()) {
            for (const auto& line : wrap(section.description, static_cast<std::size_t>(width) - 2))
                out += "  " + line + "\n";
            out += "\n";
        }
        for (std::size_t index : section.options) out += format_help_row(rows[index], position, width);
    }
    return out;
}

std::string ArgumentParser::format_error(const std::string& message) const {
    return format_usage() + prog_ + ": error: " + message + "\n";
}

}  // namespace polygraphy::tools
