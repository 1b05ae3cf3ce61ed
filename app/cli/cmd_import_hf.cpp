// stepformer-cli import-hf DIR --out MODEL.safetensors: a Hugging Face Marian (opus-mt), GPT-2 or BERT folder as one
// Stepformer model file, carrying the config, the vocabularies, the generation defaults and the tokenizer (both
// SentencePiece models; GPT-2's merges). A
// folder with only pytorch_model.bin is converted first by tools/hf_bin_to_safetensors.py (Debian's
// python3-torch), into a temporary folder of its own that is removed afterwards.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/user_files.h"
#include "model/hf_bert.h"
#include "model/hf_gpt2.h"
#include "model/hf_files.h"
#include "model/hf_marian.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

namespace fs = std::filesystem;

// A temporary folder removed with everything in it when this goes out of scope.
struct TemporaryFolder {
  std::string path;
  TemporaryFolder() {
    std::string pattern = (fs::temp_directory_path() / "stepformer-import-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) fail(ErrorKind::File, "import-hf", "cannot create a temporary folder in " +
                                                                           fs::temp_directory_path().string());
    path = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Runs /usr/bin/python3 SCRIPT ARGS... (no shell: paths are arguments, never parsed); its output goes to ours.
void run_python(const std::string& script, const std::vector<std::string>& args) {
  const char* python = "/usr/bin/python3";
  if (::access(python, X_OK) != 0)
    fail(ErrorKind::Unsupported, "import-hf",
         "converting pytorch_model.bin needs Python with PyTorch: install Debian's python3-torch "
         "(apt-get install python3-torch), or give a folder that has model.safetensors");
  std::vector<std::string> argv_strings = {python, script};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) fail(ErrorKind::File, "import-hf", "cannot start " + std::string(python));
  if (child == 0) {
    ::execv(python, argv.data());
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(ErrorKind::Format, "import-hf",
         "converting pytorch_model.bin failed (" + script + ", exit " +
             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + "; its message is above)");
}

}  // namespace

int run_import_hf(const Args& args) {
  OptionParser p("import-hf");
  std::string out;
  bool f16 = false;
  p.value("--out", &out);
  p.flag("--f16", &f16);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() != 1 || out.empty()) {
    std::fputs("usage: stepformer-cli import-hf DIR --out MODEL.safetensors [--f16]\n\n"
               "Writes a Hugging Face folder as one Stepformer model file: a Marian translator (opus-mt: config.json,\n"
               "model.safetensors or pytorch_model.bin, source.spm, target.spm, vocab.json), with both SentencePiece\n"
               "models; or a GPT-2 (config.json, model.safetensors or pytorch_model.bin, vocab.json, merges.txt),\n"
               "with its byte-level BPE; or a BERT (BertForMaskedLM: config.json, model.safetensors or\n"
               "pytorch_model.bin, vocab.txt, tokenizer_config.json), with its WordPiece vocabulary. The weights keep the checkpoint's own names, with the config, the\n"
               "vocabularies and the generation defaults.\n"
               "The app and every command also open the folder itself; the file is one thing to copy around.\n"
               "A folder with only pytorch_model.bin is converted with tools/hf_bin_to_safetensors.py, which\n"
               "needs Debian's python3-torch.\n"
               "  --out FILE   the model file to write; replaces an existing regular file (keeping its permission\n"
               "               bits), never a file of DIR, a link or anything that is not a regular file\n"
               "  --f16        store the weights as F16 (half the size; values rounded to half precision)\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const std::string folder = p.positional()[0];
  if (!is_hf_model_folder(folder))
    fail(ErrorKind::File, "import-hf", "'" + printable(folder) + "' is not a folder holding a config.json");
  WriteRules rules{.replace = true, .inputs = {}, .allowed_folder = ""};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) rules.inputs.push_back(entry.path().string());
  if (const std::string problem = check_output_path(out, rules); !problem.empty()) {
    std::fprintf(stderr, "stepformer-cli import-hf: %s\n", printable(problem).c_str());
    return 1;
  }

  // Which reader: config.json's model_type (model/hf_files.h).
  const std::string config_path = hf::in_folder(folder, "config.json");
  const std::string type = hf::model_type(hf::read_json_file(config_path, hf::kMaxJsonBytes, "a config.json"), config_path);
  const bool gpt2 = type == "gpt2", bert = type == "bert";
  auto load = [&](std::vector<std::string>* warnings, const std::string& weights) {
    if (bert) return load_hf_bert(folder, warnings, true, weights);
    return gpt2 ? load_hf_gpt2(folder, warnings, true, weights) : load_hf_marian(folder, warnings, true, weights);
  };
  std::vector<std::string> warnings;
  Model model;
  const bool has_safetensors = fs::exists(fs::path(folder) / "model.safetensors", ec);
  const fs::path bin = fs::path(folder) / "pytorch_model.bin";
  if (!has_safetensors && fs::exists(bin, ec)) {
    const std::string script = tool_script_path("hf_bin_to_safetensors.py");
    if (script.empty())
      fail(ErrorKind::Missing, "import-hf", "tools/hf_bin_to_safetensors.py was not found beside this build");
    TemporaryFolder temporary;
    const std::string converted = temporary.path + "/model.safetensors";
    run_python(script, {bin.string(), converted});
    try {
      model = load(&warnings, converted);
    } catch (const Error& e) {  // (the fault is the user's file: named as it, not as our temporary copy)
      std::string message = e.what();
      for (size_t at; (at = message.find(converted)) != std::string::npos;)
        message.replace(at, converted.size(), bin.string() + " (converted)");
      throw Error(e.kind(), message);
    }
    model.provenance["converted_from"] = "pytorch_model.bin";
  } else {
    model = load(&warnings, "");
  }
  model.provenance["converter"] = "stepformer-cli import-hf";
  for (const std::string& w : warnings) std::fprintf(stderr, "stepformer-cli import-hf: warning: %s\n", printable(w).c_str());
  save_model(model, out, f16 ? DType::F16 : DType::F32, rules);
  if (bert)
    std::printf("wrote %s: %s (family bert, %lld parameters, %d layers x %d heads, d_model %d, vocabulary %d, "
                "WordPiece)\n",
                printable(out).c_str(), printable(model.provenance.value("hub_name", folder)).c_str(),
                static_cast<long long>(model.parameter_count()), model.config.n_encoder_layers, model.config.n_heads,
                model.config.d_model, model.config.src_vocab_size);
  else if (gpt2)
    std::printf("wrote %s: %s (family gpt2, %lld parameters, %d layers x %d heads, d_model %d, vocabulary %d, "
                "byte-level BPE)\n",
                printable(out).c_str(), printable(model.provenance.value("hub_name", folder)).c_str(),
                static_cast<long long>(model.parameter_count()), model.config.n_decoder_layers, model.config.n_heads,
                model.config.d_model, model.config.tgt_vocab_size);
  else
    std::printf("wrote %s: %s (family marian, %lld parameters, vocabularies %d and %d, SentencePiece tokenizer)\n",
                printable(out).c_str(), printable(model.provenance.value("hub_name", folder)).c_str(),
                static_cast<long long>(model.parameter_count()), model.config.src_vocab_size,
                model.config.tgt_vocab_size);
  return 0;
}

}  // namespace sf::cli
