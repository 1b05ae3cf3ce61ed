// What the app shows and the user changes: the model, the sentence, the interventions, the decoding and its
// trace, and the last problem to show. Panels read it; inputs change it through the setters below, each of
// which recomputes at once (in the same frame) and keeps the previous state when the new input is bad.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"

namespace sf::gui {

struct AppState {
  std::shared_ptr<const Model> model;  // immutable; shared with background work
  std::string model_path;
  std::string sentence;                // what the user typed (source language)
  std::string reference;               // a reference translation for teacher forcing ("" = free running)
  std::vector<Token> source_tokens;    // <bos> ... <eos>, with surfaces and unknown words marked
  std::vector<int> translation;        // generated target ids, no <bos>, <eos> included when produced
  Interventions interventions;         // the user's changes; forced_prefix holds clicked or reference tokens
  DecodeOptions decode_options;        // strategy and its parameters (max_length is set per sentence)
  std::unique_ptr<Decoder> decoder;    // the live decoding of the sentence (reads model: reset before swapping)
  Trace trace;                         // the pass over <bos> + translation (what chose every output token)
  std::string error;                   // the last problem to show the user; the previous state stays
  int version = 0;                     // increments on every recompute: panels re-upload when it changes
  double last_recompute_ms = 0.0;      // wall time of the last recompute (decode + trace)
  int last_guessed = 0;                // tokens the last recompute took from a guess (Decoder::run_guided)

  // Loads a model file; on failure sets `error` (naming the problem) and keeps the current model.
  bool load_model(const std::string& path);
  // Swaps in a model loaded elsewhere (e.g. off the frame thread); false (old model kept) when the sentence or
  // the interventions do not fit it.
  bool use_model(std::shared_ptr<const Model> loaded, const std::string& path);
  // Tokenizes, decodes and traces. On bad input sets `error` and keeps the previous result.
  bool set_sentence(const std::string& text);
  // Replaces the interventions and recomputes; a change the model cannot take is refused, previous kept.
  bool set_interventions(const Interventions& next);
  bool set_decode_options(const DecodeOptions& next);
  // Teacher forcing: the reference's tokens are forced one by one (then <eos>); "" returns to free running.
  bool set_reference(const std::string& text);
  // <pad> tokens after the sentence's <eos>, as a batch pads a short sentence to the length of its longest:
  // what the padding mask is for (a sentence alone has none). 0 .. kMaxSourcePadding, within the model's
  // longest input; a count out of range is refused with a message.
  bool set_source_padding(int pads);
  int source_padding = 0;
  static constexpr int kMaxSourcePadding = 64;
  // Forces `token` at output position `position`: the translation keeps its first `position` tokens, takes
  // `token`, and the decoder continues from there.
  bool force_token(int position, int token);
  // Token by token: one step forward / back, run to the end, back to the start.
  bool step();
  bool step_back();
  bool run_to_end();
  bool restart();
  bool recompute();
  // The translation of the current sentence by the model as trained (no interventions, no forced tokens), with
  // the current decoding strategy: what a change is compared against. Decoded once per sentence, model and
  // strategy, then kept; empty when there is no sentence or it cannot be decoded.
  const std::vector<int>& translation_as_trained();

  // Frames stay short: with a budget (the app sets one; 0, the default, decodes to the end at once), a
  // decoding to the end stops when the budget is spent and continue_decoding(), called once a frame, goes on
  // from there: a 240-word sentence decoded with a beam of 64 fills in over a few frames instead of freezing
  // the window for seconds. Scripts wait for it as for a model loading.
  double step_budget_ms = 0;
  bool decoding_in_background() const { return decoding_in_background_; }
  void continue_decoding();

  bool ready() const { return model && trace.has_decoder(); }
  bool decoding_finished() const { return decoder && decoder->finished(); }
  // Token strings for axis labels: source tokens as the model read them (an unknown word is "<unk>"), decoder
  // input tokens (<bos> + translation), and decoder rows as "input -> predicted" ("orange -> shirt": the
  // position reads "orange" and predicts "shirt"; the last row of an unfinished decoding predicts "?").
  std::vector<std::string> source_labels() const;
  std::vector<std::string> decoder_input_labels() const;
  std::vector<std::string> decoder_row_labels() const;
  // What hovering a label says: the word as typed, and for an unknown word that the model read <unk>.
  std::vector<std::string> source_label_tips() const;
  std::string translation_text() const;
  std::string target_token(int id) const;  // a target id as text (unescaped)

 private:
  bool decoding_in_background_ = false;
  // Steps `d` until it finishes or the budget from `start` is spent; true when it finished.
  bool step_within_budget(Decoder& d, std::chrono::steady_clock::time_point start) const;
  // Rebuilds the decoder for the current inputs and advances it `steps` steps (-1: to the end).
  bool rebuild(int steps);
  void take_decoder_state();  // translation and trace from the decoder
  bool fail_with(const std::exception& e);
  const Model* decoder_model_ = nullptr;  // the model `decoder` and `translation` came from
  // Greedy translations finished lately, by model, source and interventions: switching a change off and on
  // again (a class watching a head come and go) re-decodes from the translation it had, checked in one pass.
  struct RememberedTranslation {
    const Model* model = nullptr;
    std::vector<int> src_ids;
    Interventions interventions;
    std::vector<int> translation;
    bool is_for(const Model* m, const std::vector<int>& src, const Interventions& iv) const {
      return model == m && src_ids == src && interventions == iv;
    }
  };
  std::vector<RememberedTranslation> remembered_;  // most recent last, at most kRemembered
  struct AsTrained {
    const Model* model = nullptr;
    std::vector<int> src_ids;
    int version = -1;  // decode_options_version_ it was decoded with
    std::vector<int> translation;
  } as_trained_;
  int decode_options_version_ = 0;
  static constexpr size_t kRemembered = 16;
};

// The model the app opens by default: assets/models/de-en.safetensors beside the source tree or the binary.
std::string default_model_path();
inline constexpr const char* kDefaultSentence = "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.";

}  // namespace sf::gui
