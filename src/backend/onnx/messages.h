// Turning runtime and checker errors into the one-line reasons that lint and capability reports
// show (internal to the library; ONNX-Runtime's capability checker uses it too).
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace polygraphy {

/// `text` on one line: libonnx's "\n\n==> Context: ..." suffix (which names the node again) cut,
/// line breaks turned into spaces, trailing spaces removed.
inline std::string one_line(std::string text) {
    if (const auto context = text.find("\n\n==> Context:"); context != std::string::npos) text.resize(context);
    std::replace(text.begin(), text.end(), '\n', ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
}

/// `message` without the runtime's "Node '<name>' (<op>): " prefix, so that nodes failing alike
/// share a reason.
inline std::string without_node_prefix(const std::string& message) {
    if (message.rfind("Node '", 0) != 0) return message;
    const auto end = message.find("): ");
    return end == std::string::npos ? message : message.substr(end + 3);
}

/// The reason a node failed, from the error a runtime threw for it: one line, no node prefix.
inline std::string failure_reason(const std::string& message) {
    return one_line(without_node_prefix(message));
}

/// `text` with its first letter in upper case ("the built-in runtime" starts a sentence).
inline std::string capitalized(std::string text) {
    if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    return text;
}

}  // namespace polygraphy
