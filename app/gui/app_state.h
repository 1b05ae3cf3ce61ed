// What the app shows and the user changes: the model, the sentence, the interventions, the decoding and its
// trace, and the last problem to show. Panels read it; inputs change it through the setters below, each of
// which checks the input at once (a bad one is refused with a message, the previous state kept) and decodes
// again: at once, or, where the app sets a budget, on a thread of its own (see step_budget_ms).
//
// Its fields are private, in three parts: what the user asked for (the model, and Inputs: sentence, reference,
// interventions, decode options, source padding; changed by the setters at once), what is shown (Decoded:
// source tokens, translation, decoder, trace; replaced together when a decoding is done, so a panel always reads
// one consistent result) and the background decoding that turns the one into the other.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/background_task.h"
#include "gui/text/text.h"
#include "gui/view_device.h"
#include "decode/decoder.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"
#include "util/error.h"

namespace sf::gui {

class AppState {
 public:
  // [SECTION] what the user asked for: changed by the setters below, each checked at once.
  const std::shared_ptr<const Model>& model() const { return model_; }  // immutable; shared with background work
  const std::string& model_path() const { return model_path_; }
  const std::string& sentence() const { return asked_.sentence; }    // what the user typed (source language)
  const std::string& reference() const { return asked_.reference; }  // for teacher forcing ("" = free running)
  const Interventions& interventions() const { return asked_.interventions; }  // forced_prefix: clicked or reference tokens
  const DecodeOptions& decode_options() const { return asked_.decode_options; }  // max_length is set per sentence
  int source_padding() const { return asked_.source_padding; }
  // An encoder-only model's blanks: the sentence positions (0 = [CLS]) whose input id the user turned into
  // config.mask_id (fill in the blank), ascending. Cleared with a new sentence or model.
  const std::vector<int>& masked_positions() const { return asked_.masked; }
  // The word a blank of what is shown hides: its id at `position` before [MASK] took its place; -1 where the
  // position is no blank the user made (a word, or a [MASK] typed into the sentence).
  int hidden_id(int position) const {
    return position >= 0 && position < static_cast<int>(shown_.hidden_ids.size()) ? shown_.hidden_ids[static_cast<size_t>(position)] : -1;
  }

  // [SECTION] what is shown: one finished decoding, replaced as a whole, so a panel always reads one result.
  // A translator's source as read (<bos> ... <eos>, unknown words marked); a decoder-only model's prompt, without
  // the <bos> the decoder reads before it (Decoder::start_tokens).
  const std::vector<Token>& source_tokens() const { return shown_.source_tokens; }
  // Target ids, no <bos>, <eos> once produced: a translator's translation, a decoder-only model's continuation of
  // the prompt (the prompt not included).
  const std::vector<int>& translation() const { return shown_.translation; }
  // The live decoding (null while steps of it run in the background).
  const std::shared_ptr<Decoder>& decoder() const { return shown_.decoder; }
  const Trace& trace() const { return shown_.trace; }  // the pass over <bos> + translation (its last row predicts the next)
  // The logits each token of the translation was chosen from (translation.size(), Vt), where the trace's rows are
  // not those: the KV cache inexact (the causal mask off, a painted mask that looks ahead, reshaped heads), when
  // row i of the last full pass also read the tokens written after it. Empty otherwise: trace row i is then the
  // very distribution token i was chosen from (Decoder::chosen_logits).
  const Mat& chosen_logits() const { return shown_.chosen_logits; }
  int version() const { return version_; }  // increments on every recompute: panels re-upload when it changes
  double last_recompute_ms() const { return last_recompute_ms_; }  // wall time of the last decode + trace
  int last_guessed() const { return last_guessed_; }  // tokens the last recompute took from a guess (GuidedRedecoder)
  const std::string& shown_gpu() const { return shown_gpu_; }    // the GPU what is shown was computed on ("": the CPU)
  const std::string& device_why() const { return device_why_; }  // why that was the CPU where a GPU is there; "" else

  // [SECTION] the last problem to show the user (the previous state stays).
  const std::string& error() const { return error_; }
  void set_error(std::string text) { error_ = std::move(text); }  // a problem found outside (a snapshot, a script)
  void clear_error() { error_.clear(); }

  // Where decodings compute (--device; the app's default is auto, a bare AppState's the CPU): the GPU copy of
  // the model, made on first use. Set before the first decoding; shared with the work on the worker thread.
  const std::shared_ptr<ViewDevice>& device() const { return device_; }
  void set_device(std::shared_ptr<ViewDevice> device) { device_ = std::move(device); }
  // The sentence the next model decodes, without decoding now: before any model is there, or the example
  // sentence to fall back on when the user's does not fit a new model.
  void keep_sentence(const std::string& text) { asked_.sentence = text; }

  // Loads a model file; on failure sets `error` (naming the problem) and keeps the current model.
  bool load_model(const std::string& path);
  // Swaps in a model loaded elsewhere (e.g. off the frame thread); false (old model kept) when the sentence or
  // the interventions do not fit it.
  bool use_model(std::shared_ptr<const Model> loaded, const std::string& path);
  // Other weights of the same model (a training snapshot, the live weights of a run): where `loaded` has the
  // current model's config, vocabularies and tokenizer, the sentence, the interventions and the decoding
  // strategy stay and the translation is decoded again (what is shown stays until it is done); otherwise as
  // use_model. False (the current model kept) when it cannot be decoded.
  bool use_weights(std::shared_ptr<const Model> loaded, const std::string& path);
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
  static constexpr int kMaxSourcePadding = 64;
  // Fill in the blank (an encoder-only model with a [MASK] token): position `position` of the sentence as read
  // reads [MASK] (config.mask_id) in place of its word, or its word again where it was masked; the model
  // recomputes as for an intervention. Refused with a message (nothing changed) for a model without a mask token
  // or of another shape, a position outside the sentence, or [CLS], [SEP] and <pad> (no word to hide).
  bool toggle_mask(int position);
  // Why a click on a token cannot mask it ("" where it can): the tooltip of a token that does nothing.
  std::string why_not_maskable(int position) const;
  // Forces `token` at output position `position`: the translation keeps its first `position` tokens, takes
  // `token`, and the decoder continues from there.
  bool force_token(int position, int token);
  // Token by token: `count` steps forward / back (one trace at the end), run to the end, back to the start.
  // False when there is nothing to step (finished, at the start) or a decoding is still being computed.
  bool step(int count = 1);
  bool step_back(int count = 1);
  bool run_to_end();
  bool restart();
  bool recompute();
  // The translation of the current sentence by the model as trained (no interventions, no forced tokens), with
  // the current decoding strategy: what a change is compared against. Decoded once per sentence, model and
  // strategy, then kept; empty when there is no sentence or it cannot be decoded.
  const std::vector<int>& translation_as_trained();

  // Frames stay short. With a budget (the app sets one; 0, the default, computes everything at once, as tests
  // and lesson checks want), every decoding (a new sentence, an intervention, steps, the translation as trained)
  // runs on a thread of its own; the setter waits for it up to the budget, and what is not done by then is taken
  // by poll_background() on a later frame while the window goes on showing the previous result: a 240-word
  // sentence with a beam of 64 no longer freezes the window for seconds. One decoding runs at a time; a newer
  // request cancels it (at its next step) and runs after it. Scripts and --screenshot wait while busy().
  void set_step_budget_ms(double ms) { step_budget_ms_ = ms; }
  double step_budget_ms() const { return step_budget_ms_; }
  bool busy() const;
  double busy_seconds() const;  // how long the running decoding has taken so far (the top bar shows it)
  void poll_background();       // once a frame: takes finished work, starts the next
  void finish_background();     // waits for all of it (a lesson check, a test)
  // A decoding that failed after its setter had returned (accepted, then still computing): its message, once;
  // the inputs are back to the last ones that decoded. Scripts log it against their line.
  std::string take_late_failure();
  // Called on the worker as each decoding (a rebuild, steps) starts: tests hold a decoding there to see the state
  // while it runs, or make it fail late (the setters check every input they can before, so in the app only the
  // unforeseen, running out of memory say, fails there).
  void set_worker_start_hook(std::function<void()> hook) { on_worker_start_ = std::move(hook); }
  // Called on the worker as a decoding's work returns, its outcome made (cancelled or not): tests hold a finished
  // decoding there, so a newer request arrives after the work's last look at its cancel flag.
  void set_worker_end_hook(std::function<void()> hook) { on_worker_end_ = std::move(hook); }
  AppState() = default;
  AppState(const AppState&) = delete;
  AppState& operator=(const AppState&) = delete;
  ~AppState();

  bool ready() const {
    return model_ && (shown_.trace.has_decoder() || (encoder_only() && shown_.trace.has_output() && shown_.model == model_));
  }
  // A decoder-only model (GPT, config.stacks): the sentence is a prompt the model continues, read after <bos>;
  // no source, no encoder, no cross-attention.
  bool decoder_only() const { return model_ && model_->config.stacks == ModelStacks::DecoderOnly; }
  // A decoder-only model's first prompt token is its decoder input 1 (after <bos>: our GPT) or 0 (GPT-2 reads the
  // prompt as it is: config.starts_with_bos); 0 for a translator.
  int prompt_start() const;
  // An encoder-only model (BERT, config.stacks): one bidirectional stack over the sentence ([CLS] ... [SEP]) and
  // a prediction at every position (logits (S, Vs)); no decoder, no decoding: what is shown is one forward pass.
  bool encoder_only() const { return model_ && model_->config.stacks == ModelStacks::EncoderOnly; }
  // The decoder rows that read the prompt after <bos> (a decoder-only model's prompt length; 0 for a translator):
  // row r of the decoder pass predicts generated token r - prompt_rows() (rows before that predict the prompt's
  // own next token, which is given, not chosen).
  int prompt_rows() const;
  bool decoding_finished() const { return shown_.decoder && shown_.decoder->finished(); }
  // Where what is shown was computed, in words: "GPU NVIDIA H100 80GB HBM3" or "CPU, 2 threads".
  std::string shown_device() const;
  // Token strings for axis labels: source tokens as the model read them (an unknown word is "<unk>"), decoder
  // input tokens (<bos> + translation), and decoder rows as "input -> predicted" ("orange -> shirt": the
  // position reads "orange" and predicts "shirt"; the last row of an unfinished decoding predicts "?").
  std::vector<std::string> source_labels() const;
  std::vector<std::string> decoder_input_labels() const;
  std::vector<std::string> decoder_row_labels() const;
  // What hovering a label says: the word as typed, and for an unknown word that the model read <unk>.
  std::vector<std::string> source_label_tips() const;
  std::string translation_text() const;
  // A decoder-only model's prompt followed by its continuation, as one text (the tokenizer's joining).
  std::string prompt_and_continuation_text() const;
  // What decoder row `row` predicts, as a label: the prompt's next token (given) or the generated one ("?" not yet).
  std::string predicted_at_row(int row) const;
  // The logits output token `position` was chosen from (Vt), or, at position translation.size() of an unfinished
  // decoding, those the next step chooses from (the trace's last row); empty past that.
  RowVec chosen_distribution_logits(int position) const;
  // Whether row `position` of the last full pass (trace.logits) differs from what chose that token: see
  // chosen_logits.
  bool last_pass_differs_from_choice() const { return shown_.chosen_logits.size() > 0; }
  std::string target_token(int id) const;  // a target id as text (unescaped)
  // A source id as text: BERT's names for an encoder-only model's <bos> and <eos> ([CLS], [SEP]), a word unescaped.
  std::string source_token(int id) const;
  // An encoder-only model's likeliest token at every position (argmax of the pass's probs rows, (S)); empty for
  // other shapes.
  std::vector<int> predicted_ids() const;
  // The sentence as read with every blank filled by its likeliest token: "[CLS] a [dog] runs [SEP]" (the
  // filled-in words in brackets, BERT's names for the specials).
  std::string filled_in_text() const;

 private:
  // What a decoding gives back: the decoder and its trace, and for a new decoder the source it read.
  struct Outcome {
    std::shared_ptr<const Model> model;  // the decoder reads its weights: kept alive with it
    std::shared_ptr<Decoder> decoder;
    Trace trace;
    Mat chosen;  // Decoder::chosen_logits where the KV cache is inexact, else empty
    std::optional<std::vector<Token>> source_tokens;  // a rebuild: the source as read
    std::vector<int> hidden_ids;  // an encoder-only pass: the id each blank hides (-1 elsewhere)
    Interventions interventions;  // a rebuild: what it decoded with (remembered translations are keyed by it)
    int guessed = 0;
    std::string gpu;              // the GPU it was computed on ("": the CPU)
    std::string device_why;       // why on the CPU, where a GPU was there
    bool cancelled = false;       // a newer request came: the result is dropped
    bool single_pass = false;     // an encoder-only model's pass: a trace and no decoder
    double ms = 0.0;
  };
  using Work = BackgroundTask<Outcome>::Work;
  // Runs `work` at once (no budget) and commits it, or starts it (or queues it behind the running one) and
  // commits it if it is done within the budget. False only when it failed before returning (error is set).
  bool run_work(Work work);
  bool commit(Outcome outcome);  // replaces what is shown; false with error set when the work failed
  void fail_late(const std::exception& e);
  // Rebuilds the decoder for the current inputs and advances it `steps` steps (-1: to the end).
  bool rebuild(int steps);
  // An encoder-only model's one traced pass over the sentence with its blanks, off the frame thread as rebuild's.
  bool rebuild_encoder_only(std::vector<Token> tokens);
  // The most tokens a decoding of `input_tokens` source (or prompt) tokens writes.
  int max_length_for(int input_tokens) const;
  bool advance(int count);  // the decoder `count` steps on (< 0: back), off the frame thread where there is a budget
  bool fail_with(const std::exception& e);

  // [SECTION] what the user asked for
  struct Inputs {
    std::string sentence, reference;
    Interventions interventions;
    DecodeOptions decode_options;
    int source_padding = 0;
    std::vector<int> masked;  // an encoder-only model's blanks (masked_positions)
  };
  std::shared_ptr<const Model> model_;
  std::string model_path_;
  Inputs asked_;

  // [SECTION] what is shown: one decoding's result, replaced as a whole
  struct Decoded {
    std::shared_ptr<const Model> model;  // the model it came from (the decoder reads its weights)
    std::shared_ptr<Decoder> decoder;
    Trace trace;
    Mat chosen_logits;
    std::vector<Token> source_tokens;
    std::vector<int> translation;
    std::vector<int> hidden_ids;  // (S) hidden_id
  };
  Decoded shown_;
  Inputs shown_inputs_;  // the inputs it was decoded from
  int version_ = 0;
  double last_recompute_ms_ = 0.0;
  int last_guessed_ = 0;
  std::string shown_gpu_, device_why_;
  std::string error_;
  std::shared_ptr<ViewDevice> device_ = std::make_shared<ViewDevice>(DeviceRequest::Cpu);

  // [SECTION] the background decoding
  double step_budget_ms_ = 0;
  std::function<void()> on_worker_start_, on_worker_end_;
  BackgroundTask<Outcome> task_;
  std::optional<Work> queued_;  // the newest request, waiting for the running one to stop
  // While a new model's first decoding runs: what to go back to if it fails.
  struct ModelUndo {
    std::shared_ptr<const Model> model;
    std::string path;
    Inputs inputs;
    Decoded shown;
  };
  std::optional<ModelUndo> model_undo_;
  void undo_model();  // puts back the model and what was shown before it (model_undo_)
  std::string late_failure_;
  BackgroundTask<std::vector<int>> as_trained_task_;
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
    bool computing = false;  // as_trained_task_ is decoding it
  } as_trained_;
  int decode_options_version_ = 0;
  static constexpr size_t kRemembered = 16;
};

// The model the app opens by default: assets/models/de-en-bpe.safetensors (the subword translator) beside the source
// tree or the binary; de-en.safetensors (the word model) in a build without SentencePiece (the web page).
std::string default_model_path();

// The app's one way to show a core error (util/error.h): the string table's sentence for its kind, with the
// core's own text ("[load_model] tensor '...' holds NaN") as the detail: "value error: [load_model] ...".
std::string error_text(ErrorKind kind, const std::string& detail);
// A core error in the user's words: the string table's entry for its code (error_<id> in gui/text/en.inc) with
// the error's values, e.g. "Tensor 'x' has the shape (256, 512); the model's configuration needs (512, 256)."; an
// error of the generic code as above, its kind's sentence with the core's English text.
std::string error_text(const Error& error);
// The table entry that words `code`; none for ErrorCode::Generic.
std::optional<T> error_code_entry(ErrorCode code);
inline constexpr const char* kDefaultSentence = "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.";
// The example a decoder-only model opens with (the English side of the example sentence, cut to a beginning).
inline constexpr const char* kDefaultPrompt = "A man in an orange shirt";
// Tokens a decoder-only model writes after its prompt at most (fewer where its positions end first).
inline constexpr int kContinuationTokens = 24;

}  // namespace sf::gui
