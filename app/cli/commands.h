// stepformer-cli subcommands: one file per command in app/cli/, registered in the table in main.cpp.
// Each returns the process exit code; sf::Error escaping a command is printed by main and gives exit code 1.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "model/hf_marian.h"
#include "model/model.h"

namespace sf::cli {

using Args = std::vector<std::string>;  // the arguments after the subcommand name

struct Command {
  const char* name;
  const char* summary;  // one line for `stepformer-cli --help`
  int (*run)(const Args& args);
};

// The registry, defined in main.cpp.
const std::vector<Command>& commands();

// Helpers every command shares (common.cpp).

// Loads MODEL (the shipped de-en model when `path` is empty) and prints the loader's warnings (unknown tensors,
// unknown config keys) to stderr, each as "stepformer-cli COMMAND: warning: ...", escaped (util/printable.h).
// Only an encoder-decoder model unless `every_shape` (the commands that take GPT and BERT models too).
Model load_model_warning(const char* command, const std::string& path, bool every_shape = false);

// Runs `work` on the GPU that --device chose (backend/device.h; a note about it printed as "stepformer-cli COMMAND:
// ..."): true when it ran there; false, for the caller to compute on the CPU, when no GPU was chosen or the GPU
// failed (ErrorKind::Unsupported, said once). Other errors pass through. tf32: the GPU's products on TF32 tensor
// cores (--tf32; CudaModel::set_tf32).
bool run_on_gpu(const char* command, DeviceRequest device, const Model& model,
                const std::function<void(CudaModel& gpu)>& work, bool tf32 = false);

// The sentence a command was given, checked: text with no word in it (empty or blank) is an ErrorKind::Input
// naming the fix, never a translation of nothing.
void require_words(const std::string& sentence, const char* what);

}  // namespace sf::cli
