// is_hf_model_folder (model/hf_marian.h) on its own: a filesystem check the app's option parsing uses, kept apart
// from the Marian reader so that the option fuzzer (tests/fuzz) links it without the model's layers.
#include <sys/stat.h>

#include "model/hf_marian.h"

namespace sf {

bool is_hf_model_folder(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string config = path.empty() || path.back() == '/' ? path + "config.json" : path + "/config.json";
  return ::stat(config.c_str(), &st) == 0;
}

}  // namespace sf
