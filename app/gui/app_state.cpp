#include "gui/app_state.h"

#include <algorithm>
#include <chrono>

#include "util/error.h"
#include "util/paths.h"

namespace sf::gui {

std::string default_model_path() { return shipped_model_path("de-en"); }

bool AppState::fail_with(const std::exception& e) {
  if (const auto* typed = dynamic_cast<const Error*>(&e))
    error = std::string(error_kind_name(typed->kind())) + ": " + typed->what();
  else
    error = e.what();
  return false;
}

bool AppState::load_model(const std::string& path) {
  try {
    return use_model(std::make_shared<const Model>(sf::load_model(path)), path);
  } catch (const std::exception& e) {
    return fail_with(e);
  }
}

bool AppState::use_model(std::shared_ptr<const Model> loaded, const std::string& path) {
  // Interventions and forced tokens name heads and ids of the old model: they start afresh with a new one.
  // Everything is swapped as a whole, and swapped back when the sentence does not fit the new model.
  std::shared_ptr<const Model> old_model = std::move(model);
  std::unique_ptr<Decoder> old_decoder = std::move(decoder);
  const std::string old_path = model_path;
  const Interventions old_interventions = interventions;
  model = std::move(loaded);
  model_path = path;
  interventions = Interventions{};
  interventions.causal_mask = old_interventions.causal_mask;
  interventions.padding_mask = old_interventions.padding_mask;
  interventions.positional_encoding = old_interventions.positional_encoding;
  error.clear();
  if (sentence.empty() || rebuild(-1)) return true;
  const std::string reason = error;
  model = std::move(old_model);
  decoder = std::move(old_decoder);
  model_path = old_path;
  interventions = old_interventions;
  error = reason;
  return false;
}

bool AppState::set_sentence(const std::string& text) {
  // A sentence with no word would "translate" <bos> <eos> into whatever the model says about nothing.
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
    error = text.empty() ? "the sentence is empty: type a sentence to translate"
                         : "the sentence is blank (only spaces): type a sentence to translate";
    return false;
  }
  // Painted masks and forced tokens belong to the old sentence's positions; a reference to its meaning.
  const std::string previous = sentence, previous_reference = reference;
  const Interventions previous_interventions = interventions;
  sentence = text;
  reference.clear();
  interventions.custom_masks.clear();
  interventions.forced_prefix.clear();
  if (rebuild(-1)) return true;
  sentence = previous;
  reference = previous_reference;
  interventions = previous_interventions;
  return false;
}

bool AppState::set_interventions(const Interventions& next) {
  const Interventions previous = interventions;
  const std::string previous_reference = reference;
  interventions = next;
  if (next.forced_prefix.empty()) reference.clear();  // back to free running
  if (recompute()) return true;
  interventions = previous;
  reference = previous_reference;
  return false;
}

bool AppState::set_decode_options(const DecodeOptions& next) {
  const DecodeOptions previous = decode_options;
  decode_options = next;
  ++decode_options_version_;  // the translation as trained is decoded again with these
  if (recompute()) return true;
  decode_options = previous;
  return false;
}

bool AppState::set_source_padding(int pads) {
  if (pads < 0 || pads > kMaxSourcePadding) {
    error = "padding: " + std::to_string(pads) + " <pad> tokens asked for; 0 to " + std::to_string(kMaxSourcePadding);
    return false;
  }
  const int previous = source_padding;
  source_padding = pads;
  if (sentence.empty() || rebuild(-1)) return true;
  source_padding = previous;
  return false;
}

bool AppState::set_reference(const std::string& text) {
  if (!model) {
    error = "no model loaded";
    return false;
  }
  Interventions next = interventions;
  next.forced_prefix.clear();
  if (!text.empty()) {
    try {
      const std::vector<Token> tokens = encode(text, model->tokenizer, model->tgt_vocab, Side::Target);
      for (size_t i = 1; i < tokens.size(); ++i) next.forced_prefix.push_back(tokens[i].id);  // after <bos>, <eos> kept
      if (next.forced_prefix.size() <= 1) fail(ErrorKind::Input, "reference", "the reference translation is empty");
    } catch (const std::exception& e) {
      return fail_with(e);
    }
  }
  const std::string previous = reference;
  reference = text;
  if (set_interventions(next)) return true;
  reference = previous;
  return false;
}

bool AppState::force_token(int position, int token) {
  if (!model) return false;
  if (position < 0 || position > static_cast<int>(translation.size())) {
    error = "cannot force a word at position " + std::to_string(position) + ": the translation has " +
            std::to_string(translation.size()) + " tokens so far (positions 0 to " + std::to_string(translation.size()) + ")";
    return false;
  }
  Interventions next = interventions;
  next.forced_prefix.assign(translation.begin(), translation.begin() + position);
  next.forced_prefix.push_back(token);
  const Interventions previous = interventions;
  const std::string previous_reference = reference;
  interventions = next;
  reference.clear();
  if (rebuild(decoding_finished() || !decoder ? -1 : position + 1)) return true;
  interventions = previous;
  reference = previous_reference;
  return false;
}

bool AppState::recompute() {
  return rebuild(decoder && !decoder->finished() ? decoder->steps() : -1);
}

bool AppState::rebuild(int steps) {
  if (!model) {
    error = "no model loaded";
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    std::vector<Token> tokens = encode(sentence, model->tokenizer, model->src_vocab, Side::Source);
    if (tokens.size() <= 2) fail(ErrorKind::Input, "sentence", "the sentence is empty: type a few words");
    for (int i = 0; i < source_padding; ++i) {  // as in a batch: <pad> after <eos>
      Token pad;
      pad.text = model->src_vocab.token(model->config.pad_id);
      pad.id = model->config.pad_id;
      pad.special = true;
      tokens.push_back(pad);
    }
    if (static_cast<int>(tokens.size()) > model->config.max_positions)
      fail(ErrorKind::Input, "sentence",
           "the sentence has " + std::to_string(tokens.size()) + " tokens; this model reads at most " +
               std::to_string(model->config.max_positions));
    validate_interventions(model->config, interventions);
    DecodeOptions options = decode_options;
    options.max_length = std::min<int>(static_cast<int>(tokens.size()) + 30, model->config.max_positions - 1);
    options.max_length = std::max<int>(options.max_length, static_cast<int>(interventions.forced_prefix.size()));
    const std::vector<int> src_ids = token_ids(tokens);
    const bool same_source = decoder && src_ids == token_ids(source_tokens) && decoder_model_ == model.get();
    // The encoder pass is taken from the current decoder where the change is past it (a decoder head, say).
    auto next = std::make_unique<Decoder>(model->config, model->weights, src_ids, interventions, options,
                                          same_source ? &decoder->encoded() : nullptr);
    // Decoding to the end after a change (an intervention, say): most changes keep most of the translation, so
    // a guess (the translation these very inputs gave before, else the current one) is checked in one batched
    // pass, and where the new translation departs from it, the rest is guessed again and checked a stretch at
    // a time (Decoder::run_guided).
    decoding_in_background_ = false;
    if (steps < 0 && step_budget_ms > 0 && !(same_source && options.strategy == DecodeStrategy::Greedy)) {
      decoding_in_background_ = !step_within_budget(*next, start);  // the rest on the next frames
    } else if (steps < 0 && same_source) {
      const std::vector<int>* guess = &translation;
      for (const RememberedTranslation& r : remembered_)
        if (r.is_for(model.get(), src_ids, interventions)) guess = &r.translation;
      next->run_guided(*guess);
    } else if (steps < 0) {
      next->run();
    }
    for (int i = 0; i < steps && next->step(); ++i) {}
    Trace traced = next->trace();
    last_guessed = next->guessed();
    source_tokens = std::move(tokens);
    decoder = std::move(next);
    decoder_model_ = model.get();
    translation = decoder->generated();
    trace = std::move(traced);
    error.clear();
    ++version;
    if (decoder->finished() && options.strategy == DecodeStrategy::Greedy) {
      std::erase_if(remembered_,
                    [&](const RememberedTranslation& r) { return r.is_for(model.get(), src_ids, interventions); });
      if (remembered_.size() >= kRemembered) remembered_.erase(remembered_.begin());
      remembered_.push_back({model.get(), src_ids, interventions, translation});
    }
  } catch (const std::exception& e) {
    return fail_with(e);
  }
  last_recompute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return true;
}

void AppState::take_decoder_state() {
  translation = decoder->generated();
  trace = decoder->trace();
  error.clear();
  ++version;
}

bool AppState::step() {
  decoding_in_background_ = false;
  if (!decoder || !decoder->step()) return false;
  take_decoder_state();
  return true;
}

bool AppState::step_back() {
  decoding_in_background_ = false;
  if (!decoder || !decoder->step_back()) return false;
  take_decoder_state();
  return true;
}

bool AppState::run_to_end() {
  if (!decoder || decoder->finished()) return false;
  if (step_budget_ms > 0) {
    decoding_in_background_ = !step_within_budget(*decoder, std::chrono::steady_clock::now());
  } else {
    decoder->run();
  }
  take_decoder_state();
  return true;
}

bool AppState::step_within_budget(Decoder& d, std::chrono::steady_clock::time_point start) const {
  const auto budget = std::chrono::duration<double, std::milli>(step_budget_ms);
  while (!d.finished()) {
    d.step();
    if (std::chrono::steady_clock::now() - start > budget) break;
  }
  return d.finished();
}

void AppState::continue_decoding() {
  if (!decoding_in_background_ || !decoder) {
    decoding_in_background_ = false;
    return;
  }
  decoding_in_background_ = !step_within_budget(*decoder, std::chrono::steady_clock::now());
  take_decoder_state();
}

bool AppState::restart() { return rebuild(0); }

const std::vector<int>& AppState::translation_as_trained() {
  const std::vector<int> src_ids = token_ids(source_tokens);
  if (!model || src_ids.empty()) {
    as_trained_ = {};
    return as_trained_.translation;
  }
  if (as_trained_.model == model.get() && as_trained_.src_ids == src_ids && as_trained_.version == decode_options_version_)
    return as_trained_.translation;
  as_trained_ = {model.get(), src_ids, decode_options_version_, {}};
  if (interventions == Interventions{} && decoder && decoder->finished()) {
    as_trained_.translation = translation;
    return as_trained_.translation;
  }
  for (const RememberedTranslation& r : remembered_)
    if (r.is_for(model.get(), src_ids, Interventions{}) && decode_options.strategy == DecodeStrategy::Greedy) {
      as_trained_.translation = r.translation;
      return as_trained_.translation;
    }
  try {
    DecodeOptions options = decode_options;
    options.max_length = std::min<int>(static_cast<int>(src_ids.size()) + 30, model->config.max_positions - 1);
    Decoder d(model->config, model->weights, src_ids, Interventions{}, options);
    d.run();
    as_trained_.translation = d.generated();
  } catch (const std::exception&) {
    as_trained_.translation.clear();  // shown as nothing to compare with
  }
  return as_trained_.translation;
}

std::vector<std::string> AppState::source_labels() const {
  std::vector<std::string> out;
  for (const Token& t : source_tokens) {
    if (t.unknown && model) out.push_back(model->src_vocab.token(model->config.unk_id));
    else out.push_back(t.special ? t.text : unescape_token(t.text));
  }
  return out;
}

std::vector<std::string> AppState::source_label_tips() const {
  std::vector<std::string> out;
  for (const Token& t : source_tokens) {
    const std::string id = " (id " + std::to_string(t.id) + ")";
    if (t.unknown) {
      out.push_back("\"" + t.surface + "\" is not in the vocabulary: the model reads <unk>" + id);
    } else if (t.special) {
      const bool bos = model && t.id == model->config.bos_id, eos = model && t.id == model->config.eos_id;
      out.push_back(t.text + (bos ? ": the beginning of the sentence" : eos ? ": the end of the sentence"
                                                                           : ": padding, as a batch adds it"));
    } else {
      out.push_back("\"" + t.surface + "\" -> token \"" + unescape_token(t.text) + "\"" + id);
    }
  }
  return out;
}

std::vector<std::string> AppState::decoder_row_labels() const {
  std::vector<std::string> out = decoder_input_labels();
  for (size_t t = 0; t < out.size(); ++t) {
    // Row t reads decoder input t and predicts the token after it: translation[t] once chosen.
    std::string predicted = "?";
    if (t < translation.size()) predicted = target_token(translation[t]);
    out[t] += " -> " + predicted;
  }
  return out;
}

std::vector<std::string> AppState::decoder_input_labels() const {
  std::vector<std::string> out;
  if (!model) return out;
  for (int id : trace.tgt.ids) out.push_back(target_token(id));
  return out;
}

std::string AppState::target_token(int id) const {
  if (!model || id < 0 || id >= static_cast<int>(model->tgt_vocab.size())) return "?";
  return unescape_token(model->tgt_vocab.token(id));
}

std::string AppState::translation_text() const {
  if (!model) return "";
  std::vector<std::string> words;
  for (int id : translation)
    if (id != model->config.eos_id) words.push_back(model->tgt_vocab.token(id));
  return detokenize(words, model->tokenizer, Side::Target);
}

}  // namespace sf::gui
