// Where the shipped files are: assets/ of the source tree the binaries were built from, else of the working
// directory, else beside the installed binary (bin/../share/stepformer/assets).
#pragma once
#include <string>

namespace sf {

// The path of a shipped model, e.g. shipped_model_path("de-en") -> ".../assets/models/de-en.safetensors".
// Returns the first candidate that exists, or the source-tree path (which names the file in the error).
std::string shipped_model_path(const std::string& name = "de-en");

}  // namespace sf
