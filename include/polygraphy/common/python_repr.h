// Python's repr() of strings, floats and lists of strings: how Polygraphy's messages print values, so
// log lines, errors and reports read the same in both tools. The one implementation in the library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace polygraphy {

/// repr(str): 'text', or "text" when it holds a ' and no "; backslash, the quote, \n, \r, \t and other
/// control bytes escaped (\x01); other bytes (UTF-8 included) as they are.
std::string python_repr(std::string_view text);

/// repr(float): the shortest digits that read back as `value`, positional for exponents in [-4, 16)
/// (`0.0001`, `50.0`, `123456789.0`), else `1e-05`, `1.5e+16`; `nan`, `inf`, `-inf`, `-0.0`.
std::string python_float_repr(double value);

/// repr(list of str): `['a', "it's"]`.
std::string python_list_repr(const std::vector<std::string>& items);

}  // namespace polygraphy
