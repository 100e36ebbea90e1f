// Shading a cell by its value: the level of a colour scale, safe for any number.
#pragma once

#include <algorithm>

namespace attntrace {

// A level in [0, levels) for `value` between `low` and `high`, whatever the numbers are: NaN,
// infinities and an empty range give level 0, values outside the range the nearest end (the
// level indexes an array of colours). Halves first: high − low of values near ±1e308 would
// overflow.
inline int shade_level(double value, double low, double high, int levels) {
    if (!(high > low)) return 0;
    const double t = (value / 2 - low / 2) / (high / 2 - low / 2);
    if (!(t > 0)) return 0;  // also NaN
    return t >= 1 ? levels - 1 : std::min(static_cast<int>(t * levels), levels - 1);
}

}  // namespace attntrace
