#include "gui/app_state.h"


#include "decode/decoder.h"
#include "gui/model_loader.h"
#include "util/error.h"
#include "util/paths.h"

namespace sf::gui {

std::string default_model_path() { return shipped_model_path("de-en"); }

bool AppState::load_model(const std::string& path) {
  LoadedModel loaded = read_model_file(path);
  if (!loaded.model) {
    error = loaded.error;
    return false;
  }
  return use_model(std::move(loaded.model), path);
}

bool AppState::use_model(std::shared_ptr<const Model> loaded, const std::string& path) {
  if (!loaded) return false;
  std::string previous_path = path;
  std::swap(model, loaded);
  std::swap(model_path, previous_path);
  error.clear();
  if (!sentence.empty() && !recompute()) {
    std::swap(model, loaded);  // the sentence does not fit the new model: keep the old one
    std::swap(model_path, previous_path);
    return false;
  }
  return true;
}

bool AppState::set_sentence(const std::string& text) {
  const std::string previous = sentence;
  sentence = text;
  if (recompute()) return true;
  sentence = previous;
  return false;
}

bool AppState::recompute() {
  if (!model) {
    error = "no model loaded";
    return false;
  }
  try {
    std::vector<Token> tokens = encode(sentence, model->tokenizer, model->src_vocab, Side::Source);
    if (tokens.size() <= 2) fail(ErrorKind::Input, "sentence", "the sentence is empty: type a few words");
    if (static_cast<int>(tokens.size()) > model->config.max_positions)
      fail(ErrorKind::Input, "sentence",
           "the sentence has " + std::to_string(tokens.size()) + " tokens; this model reads at most " +
               std::to_string(model->config.max_positions));
    DecodeOptions options;
    options.max_length = std::min<int>(static_cast<int>(tokens.size()) + 30, model->config.max_positions - 1);
    Decoder decoder(model->config, model->weights, token_ids(tokens), interventions, options);
    decoder.run();
    Trace traced = decoder.trace();
    source_tokens = std::move(tokens);
    translation = decoder.generated();
    trace = std::move(traced);
    error.clear();
    ++version;
    return true;
  } catch (const Error& e) {
    error = std::string(error_kind_name(e.kind())) + ": " + e.what();
  }
  return false;
}

std::vector<std::string> AppState::source_labels() const {
  std::vector<std::string> out;
  for (const Token& t : source_tokens) out.push_back(t.special ? t.text : unescape_token(t.text));
  return out;
}

std::vector<std::string> AppState::decoder_input_labels() const {
  std::vector<std::string> out;
  if (!model) return out;
  for (int id : trace.tgt.ids) out.push_back(unescape_token(model->tgt_vocab.token(id)));
  return out;
}

std::string AppState::translation_text() const {
  if (!model) return "";
  std::vector<std::string> words;
  for (int id : translation)
    if (id != model->config.eos_id) words.push_back(model->tgt_vocab.token(id));
  return detokenize(words, model->tokenizer, Side::Target);
}

}  // namespace sf::gui
