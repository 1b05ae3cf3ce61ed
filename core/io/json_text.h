// Parsing JSON text that comes from a file: the nesting depth is checked first (so a hostile file cannot
// exhaust the stack of the JSON library's recursive destruction and printing), and any parse fault becomes an
// sf::Error(ErrorKind::Format) that names the function and the thing being parsed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sf {

constexpr int kMaxJsonNesting = 64;

// The deepest nesting of [ and { outside strings.
int json_nesting_depth(std::string_view text);

// Throws ErrorKind::Format "[where] <what> is not valid JSON: ..." or "... nests deeper than 64 levels".
nlohmann::json parse_json_text(std::string_view text, const std::string& where, const std::string& what);

}  // namespace sf
