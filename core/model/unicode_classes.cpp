#include "model/unicode_classes.h"

#include <algorithm>
#include <iterator>

namespace sf {

namespace {

struct CodeRange {
  char32_t first, last;  // inclusive
};

#include "model/unicode_classes.inc"

// Binary search over sorted, disjoint ranges.
template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t c) {
  const CodeRange* end = ranges + N;
  const CodeRange* it = std::upper_bound(ranges, end, c, [](char32_t v, const CodeRange& r) { return v < r.first; });
  return it != ranges && c <= std::prev(it)->last;
}

}  // namespace

bool is_unicode_letter(char32_t c) { return in_ranges(kLetterRanges, c); }
bool is_unicode_number(char32_t c) { return in_ranges(kNumberRanges, c); }
bool is_unicode_space(char32_t c) { return in_ranges(kSpaceRanges, c); }

}  // namespace sf
