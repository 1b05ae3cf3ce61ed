#include "io/json_text.h"

#include <algorithm>

#include "util/error.h"

namespace sf {

int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& where, const std::string& what) {
  if (json_nesting_depth(text) > kMaxJsonNesting)
    fail(ErrorKind::Format, where, what + " nests deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Format, where, what + " is not valid JSON: " + e.what());
  }
}

}  // namespace sf
