// libFuzzer target: any bytes, parsed as a safetensors file and then as a Stepformer model file. Every input
// must end in a parsed file or an sf::Error; a crash, a sanitizer report, a leak or any other exception is a bug.
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "io/safetensors.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  try {
    const sf::SafetensorsFile file = sf::SafetensorsFile::from_bytes(bytes, "fuzz");
    for (const auto& t : file.tensors())
      if (sf::dtype_is_float_readable(t.dtype) && t.numel() < (1 << 20)) (void)t.to_floats();
    std::vector<std::string> warnings;
    const sf::Model model = sf::load_model(file, &warnings);
    (void)model.parameter_count();
  } catch (const sf::Error&) {
  }
  // The tokenizer sees the first bytes as user text (any bytes, including invalid UTF-8).
  sf::TokenizerSettings settings;
  const std::string_view text(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
  for (const char* language : {"en", "fr", "de"}) {
    settings.source_language = language;
    (void)sf::tokenize(text, settings);
  }
  return 0;
}
