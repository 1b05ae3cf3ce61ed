#include <cstdio>

#include "cli/commands.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/printable.h"

namespace sf::cli {

bool run_on_gpu(const char* command, DeviceRequest device, const Model& model,
                const std::function<void(CudaModel& gpu)>& work, bool tf32) {
  std::string note;
  const std::unique_ptr<CudaModel> gpu = open_device(device, model.config, model.weights, &note);
  if (!note.empty()) std::fprintf(stderr, "stepformer-cli %s: %s\n", command, printable(note).c_str());
  if (!gpu) {
    if (tf32) std::fprintf(stderr, "stepformer-cli %s: --tf32 concerns the GPU only: computing in FP32 on the CPU\n", command);
    return false;
  }
  try {
    gpu->set_tf32(tf32);
    work(*gpu);
    return true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
    std::fprintf(stderr, "stepformer-cli %s: the GPU failed (%s); computing on the CPU\n", command,
                 printable(e.what()).c_str());
    return false;
  }
}

Model load_model_warning(const char* command, const std::string& path, bool every_shape) {
  std::vector<std::string> warnings;
  Model model = open_model(path.empty() ? shipped_model_path() : path, &warnings);
  if (!every_shape) require_encoder_decoder(model.config, std::string("stepformer-cli ") + command);
  for (const std::string& w : warnings) std::fprintf(stderr, "stepformer-cli %s: warning: %s\n", command, printable(w).c_str());
  return model;
}

void require_words(const std::string& sentence, const char* what) {
  if (sentence.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
    fail(ErrorKind::Input, what, sentence.empty() ? "the sentence is empty: give the text to translate"
                                                  : "the sentence is blank (only spaces): give the text to translate");
}

}  // namespace sf::cli
