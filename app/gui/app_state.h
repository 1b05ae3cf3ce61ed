// What the app shows and the user changes: the model, the sentence, the translation and its trace, the
// interventions, and where in the model the user is. Panels read it; the app recomputes it when an input
// changes (never per frame).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/tokenizer.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"

namespace sf::gui {

struct AppState {
  std::shared_ptr<const Model> model;  // immutable; shared with background work
  std::string model_path;
  std::string sentence;                // what the user typed (source language)
  std::vector<Token> source_tokens;    // <bos> ... <eos>, with surfaces and unknown words marked
  std::vector<int> translation;        // generated target ids, no <bos>, <eos> included when produced
  Interventions interventions;
  Trace trace;                         // the pass over <bos> + translation (what chose every output token)
  std::string error;                   // the last problem to show the user; the previous state stays
  int version = 0;                     // increments on every recompute: panels re-upload when it changes

  // Loads a model file; on failure sets `error` (naming the problem) and keeps the current model. Blocks:
  // the app reads files with ModelLoader (gui/model_loader.h) and hands the result to use_model.
  bool load_model(const std::string& path);
  // Swaps in a model loaded elsewhere (off the frame thread) and recomputes the sentence with it; false (old
  // model kept, `error` set) when the sentence does not fit it.
  bool use_model(std::shared_ptr<const Model> loaded, const std::string& path);
  // Tokenizes, decodes greedily and traces. On bad input sets `error` and keeps the previous result.
  bool set_sentence(const std::string& text);
  bool recompute();

  bool ready() const { return model && trace.has_decoder(); }
  // Token strings for axis labels: source tokens, decoder input tokens (<bos> + translation).
  std::vector<std::string> source_labels() const;
  std::vector<std::string> decoder_input_labels() const;
  std::string translation_text() const;
};

// The model the app opens by default: assets/models/de-en.safetensors beside the source tree or the binary.
std::string default_model_path();
inline constexpr const char* kDefaultSentence = "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.";

}  // namespace sf::gui
