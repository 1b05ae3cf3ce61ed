// Typed errors thrown by the core. Every message names the function and the thing at fault, e.g.
//   [load_model] tensor 'decoder.layers.2.linear1.weight': expected (512, 256), found (256, 512)
// The app catches sf::Error at one boundary and shows it; the CLI prints it and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

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

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Builds the message "[where] what" and throws.
[[noreturn]] void fail(ErrorKind kind, const std::string& where, const std::string& what);

}  // namespace sf
