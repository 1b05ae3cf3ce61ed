// Where the shipped files are: assets/ of the source tree when the program runs from the build folder made from
// it, else beside the installed binary (bin/../share/stepformer/assets), else of the working directory.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace sf {

// The path of a shipped model, e.g. shipped_model_path("de-en") -> ".../assets/models/de-en.safetensors"; the default:
// the subword translator, de-en-bpe.
// Returns the first candidate that exists, or the first candidate's path (which names the file in the error).
std::string shipped_model_path(const std::string& name = "de-en-bpe");

// A script of tools/ ("hf_bin_to_safetensors.py") of this program's own: in tool_folders(), never the working
// directory (a tools/ there is anyone's); "" when absent.
std::string tool_script_path(const std::string& name);
// Where tool_script_path looks: the source tree when the program runs from the build folder made from it, and
// bin/../share/stepformer beside the program.
std::vector<std::filesystem::path> tool_folders();

// Multi30k's tokenized files (train.lc.norm.tok.de, ...) where the project keeps them, ../shared/data/multi30k/tok
// beside the source tree (or the working directory): what live training reads when not told. "" when absent.
std::string multi30k_data_dir();
// The folders multi30k_data_dir looks in, in order (for a message that names them where the data are not).
std::vector<std::string> multi30k_search_folders();

}  // namespace sf
