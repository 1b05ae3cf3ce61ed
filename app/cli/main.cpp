// stepformer-cli: the command-line face of the core. `stepformer-cli --help` lists the subcommands.
#include <cstdio>
#include <cstring>
#include <exception>

#include "backend/backend.h"
#include "cli/commands.h"
#include "io/user_files.h"
#include "util/error.h"
#include "util/printable.h"
#include "util/memory.h"

namespace sf::cli {

// One declaration per subcommand file.
// (Add new commands here and to the table below.)
int run_trace(const Args& args);  // cmd_trace.cpp
int run_info(const Args& args);  // cmd_info.cpp
int run_train(const Args& args);  // cmd_train.cpp
int run_translate(const Args& args);  // cmd_translate.cpp
int run_eval(const Args& args);  // cmd_eval.cpp
int run_timeline(const Args& args);  // cmd_timeline.cpp
int run_import_hf(const Args& args);  // cmd_import_hf.cpp
int run_tokenize(const Args& args);  // cmd_tokenize.cpp
int run_generate(const Args& args);  // cmd_generate.cpp
int run_fill_mask(const Args& args);  // cmd_fill_mask.cpp
int run_attribute(const Args& args);  // cmd_attribute.cpp
int run_subwords(const Args& args);  // cmd_subwords.cpp

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"trace", "run one forward pass and write every intermediate to a safetensors file", run_trace},
      {"info", "print a model file's config, parameter count, vocabularies and provenance", run_info},
      {"train", "train a translation model on Multi30k with the core's own backward pass", run_train},
      {"translate", "translate a sentence (greedy or beam search)", run_translate},
      {"eval", "translate a tokenized test set and print corpus BLEU", run_eval},
      {"timeline", "list a training timeline's snapshots, or keep some of them in a new file", run_timeline},
      {"import-hf", "write a Hugging Face folder (Marian opus-mt, GPT-2) as one model file", run_import_hf},
      {"tokenize", "print the token ids (or pieces) a model reads for a text", run_tokenize},
      {"generate", "continue a prompt with a decoder-only model (a GPT): greedy, beam or sampling", run_generate},
      {"fill-mask", "rank the words for a text's [MASK] with an encoder-only masked language model", run_fill_mask},
      {"attribute", "how much each input token moved each predicted token (gradient x input, integrated gradients, "
                    "attention rollout)", run_attribute},
      {"subwords", "learn a shared subword (BPE) vocabulary from the training sentences, as a SentencePiece model",
       run_subwords},
  };
  return table;
}

}  // namespace sf::cli

static void print_help() {
  std::printf("usage: stepformer-cli COMMAND [ARGS...]\n\nCommands:\n");
  for (const auto& c : sf::cli::commands()) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf("\n  stepformer-cli COMMAND --help   for a command's options\n"
              "  stepformer-cli --version\n");
}

int main(int argc, char** argv) {
  sf::keep_freed_memory();  // large buffers of a pass stay in the heap (util/memory.h)
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("stepformer-cli %s (%s)\n", STEPFORMER_VERSION, sf::backend_info().description.c_str());
    return 0;
  }
  sf::remove_temporary_files_on_signal();  // Ctrl-C during a write leaves no hidden temporary file behind
  for (const auto& c : sf::cli::commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(sf::cli::Args(argv + 2, argv + argc));
    } catch (const sf::Error& e) {
      std::fprintf(stderr, "stepformer-cli %s: %s: %s\n", c.name, sf::error_kind_name(e.kind()),
                   sf::printable_lines(e.what()).c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stepformer-cli %s: error: %s\n", c.name, sf::printable_lines(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "stepformer-cli: unknown command '%s' (see stepformer-cli --help)\n",
               sf::printable(argv[1]).c_str());
  return 2;
}
