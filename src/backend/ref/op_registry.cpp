// OpRegistry: the table of built-in operators, keyed by (domain, op_type, opset range).
#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/ops/families.h"
#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

void OpRegistry::add(std::string domain, std::string op_type, int since_version, int until_version,
                     KernelFactory factory) {
    domain = std::string(canonical_domain(domain));
    if (op_type.empty()) throw InternalError("OpRegistry::add: empty op_type");
    if (since_version < 1 || until_version < since_version)
        throw InternalError(
            fmt::format("OpRegistry::add: invalid opset range [{}, {}] for {}", since_version, until_version, op_type));
    if (!factory) throw InternalError(fmt::format("OpRegistry::add: no factory for {}", op_type));
    for (const OpEntry& entry : entries_) {
        if (entry.domain != domain || entry.op_type != op_type) continue;
        if (since_version <= entry.until_version && entry.since_version <= until_version)
            throw InternalError(
                fmt::format("OpRegistry::add: {} (domain '{}') opsets [{}, {}] overlap the "
                            "registered opsets [{}, {}]",
                            op_type, domain, since_version, until_version, entry.since_version, entry.until_version));
    }
    entries_.push_back(
        OpEntry{std::move(domain), std::move(op_type), since_version, until_version, std::move(factory)});
}

const OpEntry* OpRegistry::find(std::string_view domain, std::string_view op_type, int64_t opset) const {
    domain = canonical_domain(domain);
    for (const OpEntry& entry : entries_)
        if (entry.domain == domain && entry.op_type == op_type && entry.since_version <= opset &&
            opset <= entry.until_version)
            return &entry;
    return nullptr;
}

const OpRegistry& OpRegistry::builtin() {
    static const OpRegistry registry = [] {
        OpRegistry result;
        for (auto register_family : kOpFamilies) register_family(result);
        return result;
    }();
    return registry;
}

}  // namespace polygraphy::ref
