// Typed errors thrown by the core. Every message names the function and the thing at fault, e.g.
//   [load_model] tensor 'decoder.layers.2.linear1.weight': expected (512, 256), found (256, 512)
// The app catches sf::Error at one boundary and shows it; the CLI prints it and exits non-zero.
//
// Besides its kind and that English message (what(), for the CLI and logs), an error a user meets carries a
// typed reason: an ErrorCode naming the specific problem and its values by name, e.g. TensorWrongShape with
// {"tensor", "decoder.layers.2.linear1.weight"}, {"expected", "(512, 256)"}, {"found", "(256, 512)"}. The app
// words it from its string table in the user's language (gui/app_state.h error_text); the message stays for
// those who read English. The codes and their value names are declared once, in util/error_codes.inc.
// Errors no user meets in the app (a programming fault, an internal check) keep ErrorCode::Generic.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sf {

enum class ErrorKind {
  File,       // cannot open / read / write / rename a file
  Format,     // malformed file: truncated, bad header, bad JSON, offsets out of range, unknown dtype
  Shape,      // a tensor or matrix of the wrong shape
  Missing,    // a required tensor or key is absent
  Value,      // NaN / Inf in a weight, a value out of range
  Config,     // model configuration out of range or inconsistent
  Input,      // bad user input: ids outside the vocabulary, too-long sentence, empty input, bad intervention
  Unsupported // valid but not supported by this build (e.g. CUDA requested in a CPU-only build)
};

const char* error_kind_name(ErrorKind kind);

enum class ErrorCode : uint8_t {
  Generic,  // no code of its own: the kind and the English message say it all
#define X(code, id, ...) code,
#include "util/error_codes.inc"
#undef X
  count_
};
constexpr size_t kErrorCodeCount = static_cast<size_t>(ErrorCode::count_);
constexpr size_t kMaxErrorValues = 4;

// One code's declaration: its id ("tensor_wrong_shape") and the names of its values (unused slots empty).
struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view id;
  std::array<std::string_view, kMaxErrorValues> value_names;
};
inline constexpr ErrorCodeInfo kErrorCodes[] = {
    {ErrorCode::Generic, "generic", {}},
#define X(code, id, ...) {ErrorCode::code, #id, {__VA_ARGS__}},
#include "util/error_codes.inc"
#undef X
};
static_assert(std::size(kErrorCodes) == kErrorCodeCount);

constexpr std::string_view error_code_id(ErrorCode code) { return kErrorCodes[static_cast<size_t>(code)].id; }
// The names of the values an error of `code` carries, in declared order.
constexpr std::span<const std::string_view> error_value_names(ErrorCode code) {
  const auto& names = kErrorCodes[static_cast<size_t>(code)].value_names;
  size_t n = 0;
  while (n < names.size() && !names[n].empty()) ++n;
  return {names.data(), n};
}

// One value of an error: its name (one of error_value_names(code)) and its text, data not words: "(512, 256)",
// "decoder.layers.2.linear1.weight", "NaN", "4.0 GB".
struct ErrorValue {
  std::string_view name;  // points into kErrorCodes once the Error holds it (static storage)
  std::string value;
  ErrorValue(std::string_view n, std::string v) : name(n), value(std::move(v)) {}
  ErrorValue(std::string_view n, const char* v) : name(n), value(v ? v : "") {}
  template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char>)
  ErrorValue(std::string_view n, I v) : name(n), value(std::to_string(v)) {}
};

class Error : public std::runtime_error {
 public:
  // An error without a code of its own (ErrorCode::Generic).
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  // An error with a code and its values. Values whose names are not exactly the code's declared names (each
  // once, any order) are a programming error: the error becomes Generic (the app then shows the English
  // message, never a sentence with a hole) and stderr says so; the tests of each code catch it.
  Error(ErrorKind kind, ErrorCode code, std::vector<ErrorValue> values, const std::string& message);
  // The same error said with more context ("[load_model] 'a.safetensors': " + cause.what()): kind, code and
  // values stay.
  Error(const Error& cause, const std::string& message)
      : std::runtime_error(message), kind_(cause.kind_), code_(cause.code_), values_(cause.values_) {}

  ErrorKind kind() const { return kind_; }
  ErrorCode code() const { return code_; }
  const std::vector<ErrorValue>& values() const { return values_; }
  // The value of that name, "" when the error has none.
  std::string_view value(std::string_view name) const;

 private:
  ErrorKind kind_;
  ErrorCode code_ = ErrorCode::Generic;
  std::vector<ErrorValue> values_;
};

// Builds the message "[where] what" and throws.
[[noreturn]] void fail(ErrorKind kind, const std::string& where, const std::string& what);
// The same with a code and its values: fail(ErrorKind::Shape, ErrorCode::TensorWrongShape, "load_model",
// {{"tensor", name}, {"expected", "(512, 256)"}, {"found", "(256, 512)"}}, "tensor '...': expected ...").
[[noreturn]] void fail(ErrorKind kind, ErrorCode code, const std::string& where, std::vector<ErrorValue> values,
                       const std::string& what);

}  // namespace sf
