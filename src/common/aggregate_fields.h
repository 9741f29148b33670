// The number of fields of an aggregate, at compile time: printers of options structs
// (job/program.cpp) assert it, so a field added to a struct cannot be left out of the printer.
#pragma once

#include <cstddef>

namespace polygraphy {

namespace aggregate_detail {
// Converts to any field type, so that T{AnyField{}, ...} compiles for up to T's field count.
struct AnyField {
    template <typename Field>
    operator Field() const;  // never defined: used only in unevaluated contexts
};
}  // namespace aggregate_detail

/// How many fields the aggregate T has (brace-initializable with that many values and no more).
template <typename T, typename... Fields>
constexpr std::size_t aggregate_field_count() {
    if constexpr (requires { T{Fields{}..., aggregate_detail::AnyField{}}; })
        return aggregate_field_count<T, Fields..., aggregate_detail::AnyField>();
    else
        return sizeof...(Fields);
}

}  // namespace polygraphy
