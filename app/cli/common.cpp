#include <cstdio>

#include "cli/commands.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/printable.h"

namespace sf::cli {

Model load_model_warning(const char* command, const std::string& path) {
  std::vector<std::string> warnings;
  Model model = load_model(path.empty() ? shipped_model_path() : path, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "stepformer-cli %s: warning: %s\n", command, printable(w).c_str());
  return model;
}

void require_words(const std::string& sentence, const char* what) {
  if (sentence.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
    fail(ErrorKind::Input, what, sentence.empty() ? "the sentence is empty: give the text to translate"
                                                  : "the sentence is blank (only spaces): give the text to translate");
}

}  // namespace sf::cli
