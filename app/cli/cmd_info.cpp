// stepformer-cli info MODEL: what a model file holds (config, parameter count, vocabularies, special tokens,
// tokenizer settings, provenance) and any warnings from loading it.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "model/hf_marian.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

void print_help() {
  std::printf(
      "usage: stepformer-cli info MODEL.safetensors [--json]\n\n"
      "Prints a model file's configuration, parameter count, vocabulary sizes, special tokens, tokenizer\n"
      "settings and provenance (dataset, training command, scores), then any warnings from loading it.\n"
      "Loading checks every tensor (names, shapes, finite values), so a clean exit means the file is usable.\n\n"
      "  --json   print the same as one JSON object\n");
}

std::string special(const Vocabulary& v, int id) {
  return std::to_string(id) + " " + (id >= 0 && id < v.size() ? printable(v.token(id)) : std::string("?"));
}

}  // namespace

int run_info(const Args& args) {
  std::string path;
  bool as_json = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      print_help();
      return 0;
    }
    if (a == "--json") {
      as_json = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "stepformer-cli info: unknown option '%s' (see stepformer-cli info --help)\n", a.c_str());
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "stepformer-cli info: one model file at a time\n");
      return 2;
    }
  }
  if (path.empty()) {
    print_help();
    return 2;
  }

  std::vector<std::string> warnings;
  const Model m = open_model(path, &warnings, /*read_weights=*/false);  // checked, not kept: memory stays small
  const Config& c = m.config;

  if (as_json) {
    nlohmann::json j = {{"path", path},
                        {"family", m.family},
                        {"config", config_to_json(c)},
                        {"parameters", m.parameter_count()},
                        {"src_vocab_size", m.src_vocab.size()},
                        {"tgt_vocab_size", m.tgt_vocab.size()},
                        {"tokenizer", tokenizer_settings_to_json(m.tokenizer)},
                        {"provenance", m.provenance},
                        {"warnings", warnings}};
    // ASCII only (control characters and the rest as \uXXXX); bytes that are not UTF-8 become U+FFFD.
    std::printf("%s\n", j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  // Text from the file is escaped: a provenance or a token holding ESC [ ... must not drive the terminal.
  std::printf("model       %s\n", printable(path).c_str());
  std::printf("family      %s\n", printable(m.family).c_str());
  std::printf("parameters  %lld\n", static_cast<long long>(m.parameter_count()));
  std::printf("\nconfig\n");
  const nlohmann::json config_json = config_to_json(c);  // named: items() only refers to it
  for (const auto& [key, value] : config_json.items())
    std::printf("  %-22s %s\n", key.c_str(), value.dump().c_str());
  std::printf("\nvocabularies\n");
  // A stack's vocabulary only: a decoder-only model (a language model) has no source, an encoder-only no target.
  if (c.has_encoder()) std::printf("  source   %d tokens\n", m.src_vocab.size());
  if (c.has_decoder()) std::printf("  target   %d tokens\n", m.tgt_vocab.size());
  if (m.tokenizer.kind == "words_bpe")
    std::printf("  kind     byte-pair pieces (SentencePiece BPE), one vocabulary for both languages; %s\n",
                c.share_embeddings && c.tie_output_embedding ? "one embedding matrix for both and the output layer"
                : c.share_embeddings                         ? "one embedding matrix for both"
                                                             : "an embedding matrix for each");
  if (c.has_encoder())
    std::printf("  special  pad %s | bos %s | eos %s | unk %s   (source ids and tokens)\n",
                special(m.src_vocab, c.pad_id).c_str(), special(m.src_vocab, c.bos_id).c_str(),
                special(m.src_vocab, c.eos_id).c_str(), special(m.src_vocab, c.unk_id).c_str());
  if (c.has_decoder())
    std::printf("  special  pad %s | bos %s | eos %s | unk %s   (target ids and tokens)\n",
                special(m.tgt_vocab, c.pad_id).c_str(), special(m.tgt_vocab, c.bos_id).c_str(),
                special(m.tgt_vocab, c.eos_id).c_str(), special(m.tgt_vocab, c.unk_id).c_str());
  std::printf("\ntokenizer\n");
  const nlohmann::json tokenizer_json = tokenizer_settings_to_json(m.tokenizer);
  for (const auto& [key, value] : tokenizer_json.items())
    std::printf("  %-22s %s\n", key.c_str(), value.dump().c_str());
  std::printf("\nprovenance\n");
  if (m.provenance.empty()) std::printf("  (none recorded)\n");
  for (const auto& [key, value] : m.provenance.items())
    std::printf("  %-22s %s\n", printable(key).c_str(),
                printable(value.is_string() ? value.get<std::string>()
                                            : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
                    .c_str());
  if (!warnings.empty()) {
    std::printf("\nwarnings\n");
    for (const std::string& w : warnings) std::printf("  %s\n", printable(w).c_str());
  }
  return 0;
}

}  // namespace sf::cli
