#include "gui/app_state.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>

#include "decode/guided.h"
#include "gui/text/glyphs.h"
#include "gui/text/text.h"
#include "gui/words.h"
#include "transformer/forward.h"
#include "model/hf_marian.h"
#include "util/error.h"
#include "util/parallel.h"
#include "model/sentencepiece.h"
#include "util/paths.h"

namespace sf::gui {

// The subword translator where this build reads its SentencePiece model; the word model in the web build, which
// cannot (its page would otherwise open on an error).
std::string default_model_path() { return shipped_model_path(sentencepiece_available() ? "de-en-bpe" : "de-en"); }

std::string error_text(ErrorKind kind, const std::string& detail) {
  switch (kind) {
    case ErrorKind::File: return tr(T::error_file, {{"detail", detail}});
    case ErrorKind::Format: return tr(T::error_format, {{"detail", detail}});
    case ErrorKind::Shape: return tr(T::error_shape, {{"detail", detail}});
    case ErrorKind::Missing: return tr(T::error_missing, {{"detail", detail}});
    case ErrorKind::Value: return tr(T::error_value, {{"detail", detail}});
    case ErrorKind::Config: return tr(T::error_config, {{"detail", detail}});
    case ErrorKind::Input: return tr(T::error_input, {{"detail", detail}});
    case ErrorKind::Unsupported: return tr(T::error_unsupported, {{"detail", detail}});
  }
  return detail;
}

std::optional<T> error_code_entry(ErrorCode code) {
  switch (code) {
    case ErrorCode::Generic: return std::nullopt;
#define X(name, id, ...) \
  case ErrorCode::name: return T::error_##id;
#include "util/error_codes.inc"
#undef X
    case ErrorCode::count_: break;
  }
  return std::nullopt;
}

std::string error_text(const Error& error) {
  const std::optional<T> entry = error_code_entry(error.code());
  if (!entry) return error_text(error.kind(), error.what());
  std::vector<TextArg> args;
  args.reserve(error.values().size());
  for (const ErrorValue& v : error.values()) args.emplace_back(v.name, v.value);
  return tr(*entry, args);
}

bool AppState::fail_with(const std::exception& e) {
  if (const auto* typed = dynamic_cast<const Error*>(&e))
    error_ = error_text(*typed);
  else
    error_ = e.what();
  return false;
}

bool AppState::load_model(const std::string& path) {
  try {
    auto loaded = std::make_shared<const Model>(sf::open_model(path));
    return use_model(std::move(loaded), path);
  } catch (const std::exception& e) {
    return fail_with(e);
  }
}

namespace {
bool same_description(const Model& a, const Model& b) {
  return a.family == b.family && config_to_json(a.config) == config_to_json(b.config) &&
         a.src_vocab.tokens() == b.src_vocab.tokens() && a.tgt_vocab.tokens() == b.tgt_vocab.tokens() &&
         tokenizer_settings_to_json(a.tokenizer) == tokenizer_settings_to_json(b.tokenizer);
}
}  // namespace

bool AppState::use_weights(std::shared_ptr<const Model> loaded, const std::string& path) {
  if (!loaded) return false;
  if (!model_ || model_undo_ || asked_.sentence.empty() || !same_description(*model_, *loaded))
    return use_model(std::move(loaded), path);
  std::shared_ptr<const Model> previous = std::move(model_);
  const std::string previous_path = model_path_;
  model_ = std::move(loaded);
  model_path_ = path;
  if (rebuild(-1)) return true;
  model_ = std::move(previous);
  model_path_ = previous_path;
  return false;
}

bool AppState::use_model(std::shared_ptr<const Model> loaded, const std::string& path) {
  // Interventions and forced tokens name heads and ids of the old model: they start afresh with a new one.
  // What is shown belongs to the old model: it is put aside (nothing is shown until the new model's decoding is
  // done) and comes back, with the old model, when the sentence does not fit the new one. (A model asked for
  // while another's first decoding still runs keeps the first undo: it holds what was last shown.)
  const Interventions old_interventions = asked_.interventions;
  const bool first = !model_undo_;
  if (first)
    model_undo_ = ModelUndo{std::move(model_), model_path_, asked_, std::move(shown_)};
  std::shared_ptr<const Model> previous = first ? nullptr : std::move(model_);
  const std::string previous_path = model_path_;
  model_ = std::move(loaded);
  model_path_ = path;
  asked_.interventions = Interventions{};
  asked_.masked.clear();  // (positions of the old model's reading of the sentence)
  asked_.interventions.causal_mask = old_interventions.causal_mask;
  asked_.interventions.padding_mask = old_interventions.padding_mask;
  asked_.interventions.positional_encoding = old_interventions.positional_encoding;
  // A model that says how it is decoded (Marian's generation config) gives the beam width and length penalty.
  if (model_->generation.present) {
    if (model_->generation.beam_width > 1) asked_.decode_options.beam_width = std::min(model_->generation.beam_width, kMaxBeamWidth);
    asked_.decode_options.length_penalty = model_->generation.length_penalty;
  }
  shown_ = Decoded{};
  error_.clear();
  // The example sentence is German for a translator and a prompt for a decoder-only model: the one that fits.
  const std::string kept_sentence = asked_.sentence;
  // (an encoder-only model reads English too: the same example)
  const bool prompt = model_->config.stacks != ModelStacks::EncoderDecoder;
  if (prompt && asked_.sentence == kDefaultSentence) asked_.sentence = kDefaultPrompt;
  if (!prompt && asked_.sentence == kDefaultPrompt) asked_.sentence = kDefaultSentence;
  if (asked_.sentence.empty()) {
    model_undo_.reset();
    return true;
  }
  if (rebuild(-1)) return true;
  const std::string reason = error_;
  asked_.interventions = old_interventions;
  asked_.sentence = kept_sentence;
  if (first) {
    undo_model();
  } else {
    model_ = std::move(previous);
    model_path_ = previous_path;
  }
  error_ = reason;
  return false;
}

bool AppState::set_sentence(const std::string& text) {
  // A sentence with no word would "translate" <bos> <eos> into whatever the model says about nothing.
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
    error_ = tr(decoder_only() ? T::gpt_prompt_no_words : text.empty() ? T::state_sentence_empty : T::state_sentence_blank);
    return false;
  }
  // Painted masks and forced tokens belong to the old sentence's positions; a reference to its meaning.
  const std::string previous = asked_.sentence, previous_reference = asked_.reference;
  const Interventions previous_interventions = asked_.interventions;
  asked_.sentence = text;
  asked_.reference.clear();
  asked_.interventions.custom_masks.clear();
  asked_.interventions.forced_prefix.clear();
  const std::vector<int> previous_masked = std::exchange(asked_.masked, {});
  if (rebuild(-1)) return true;
  asked_.masked = previous_masked;
  asked_.sentence = previous;
  asked_.reference = previous_reference;
  asked_.interventions = previous_interventions;
  return false;
}

bool AppState::set_interventions(const Interventions& next) {
  const Interventions previous = asked_.interventions;
  const std::string previous_reference = asked_.reference;
  asked_.interventions = next;
  if (next.forced_prefix.empty()) asked_.reference.clear();  // back to free running
  if (recompute()) return true;
  asked_.interventions = previous;
  asked_.reference = previous_reference;
  return false;
}

bool AppState::set_decode_options(const DecodeOptions& next) {
  const DecodeOptions previous = asked_.decode_options;
  asked_.decode_options = next;
  ++decode_options_version_;  // the translation as trained is decoded again with these
  if (recompute()) return true;
  asked_.decode_options = previous;
  return false;
}

bool AppState::set_source_padding(int pads) {
  if (pads < 0 || pads > kMaxSourcePadding) {
    error_ = tr(T::state_padding_out_of_range, {{"pads", pads}, {"max", kMaxSourcePadding}});
    return false;
  }
  if (decoder_only() && pads > 0) {  // (the prompt is the decoder's input: no source, no batch of sources)
    error_ = tr(T::gpt_no_source_padding);
    return false;
  }
  const int previous = asked_.source_padding;
  asked_.source_padding = pads;
  if (asked_.sentence.empty() || rebuild(-1)) return true;
  asked_.source_padding = previous;
  return false;
}

bool AppState::set_reference(const std::string& text) {
  if (!model_) {
    error_ = tr(T::state_no_model);
    return false;
  }
  Interventions next = asked_.interventions;
  next.forced_prefix.clear();
  if (!text.empty()) {
    try {
      if (text.size() > kMaxSentenceBytes)  // named as the reference, not as "the sentence" encode() would say
        fail(ErrorKind::Input, "reference",
             tr(T::state_reference_too_long, {{"bytes", text.size()}, {"limit", kMaxSentenceBytes}}));
      // The reference's tokens, then <eos> (the decoder's start token comes from the config).
      for (const Token& t : encode_text(*model_, text, Side::Target, /*specials=*/false)) next.forced_prefix.push_back(t.id);
      if (next.forced_prefix.empty()) fail(ErrorKind::Input, "reference", tr(T::state_reference_empty));
      next.forced_prefix.push_back(model_->config.eos_id);
    } catch (const std::exception& e) {
      return fail_with(e);
    }
  }
  const std::string previous = asked_.reference;
  asked_.reference = text;
  if (set_interventions(next)) return true;
  asked_.reference = previous;
  return false;
}

bool AppState::force_token(int position, int token) {
  if (!model_) return false;
  if (position < 0 || position > static_cast<int>(shown_.translation.size())) {
    error_ = tr(T::state_cannot_force, {{"position", position}, {"tokens", shown_.translation.size()}});
    return false;
  }
  Interventions next = asked_.interventions;
  next.forced_prefix.assign(shown_.translation.begin(), shown_.translation.begin() + position);
  next.forced_prefix.push_back(token);
  const Interventions previous = asked_.interventions;
  const std::string previous_reference = asked_.reference;
  asked_.interventions = next;
  asked_.reference.clear();
  if (rebuild(decoding_finished() || !shown_.decoder ? -1 : position + 1)) return true;
  asked_.interventions = previous;
  asked_.reference = previous_reference;
  return false;
}

bool AppState::recompute() {
  return rebuild(shown_.decoder && !shown_.decoder->finished() ? shown_.decoder->steps() : -1);
}

bool AppState::rebuild(int steps) {
  if (!model_) {
    error_ = tr(T::state_no_model);
    return false;
  }
  // Checked here, at once (a bad input is refused in the frame that gave it); decoded by run_work.
  std::vector<Token> tokens;
  DecodeOptions options = asked_.decode_options;
  apply_generation_rules(model_->generation, options);  // a Marian model's: <pad> never generated, HF beams
  const bool prompt = model_->config.stacks == ModelStacks::DecoderOnly;
  try {
    // A decoder-only model reads the prompt in the target's vocabulary, after the <bos> the Decoder puts first.
    tokens = prompt ? encode_text(*model_, asked_.sentence, Side::Target, /*specials=*/false)
                    : encode_text(*model_, asked_.sentence, Side::Source);
    if (std::none_of(tokens.begin(), tokens.end(), [](const Token& t) { return !t.special; }))
      fail(ErrorKind::Input, "sentence", tr(prompt ? T::gpt_prompt_no_words : T::state_sentence_no_words));
    if (prompt && static_cast<int>(tokens.size()) + 1 >= model_->config.max_positions)  // (<bos>) + prompt + one more
      fail(ErrorKind::Input, "sentence",
           tr(T::gpt_prompt_too_long, {{"tokens", tokens.size()}, {"max", model_->config.max_positions - 2}}));
    for (int i = 0; i < (prompt ? 0 : asked_.source_padding); ++i) {  // as in a batch: <pad> after <eos>
      Token pad;
      pad.text = model_->src_vocab.token(model_->config.pad_id);
      pad.id = model_->config.pad_id;
      pad.special = true;
      tokens.push_back(pad);
    }
    if (static_cast<int>(tokens.size()) > model_->config.max_positions)
      fail(ErrorKind::Input, "sentence",
           tr(T::state_sentence_too_long, {{"tokens", tokens.size()}, {"max", model_->config.max_positions}}));
    validate_interventions(model_->config, asked_.interventions);
    validate_decode_options(model_->config, options, asked_.interventions);
    options.max_length = max_length_for(static_cast<int>(tokens.size()));
    options.max_length = std::max<int>(options.max_length, static_cast<int>(asked_.interventions.forced_prefix.size()));
  } catch (const std::exception& e) {
    return fail_with(e);
  }
  if (encoder_only()) return rebuild_encoder_only(std::move(tokens));
  const std::vector<int> src_ids = token_ids(tokens);
  const bool same_source = shown_.decoder && shown_.model == model_ && src_ids == token_ids(shown_.source_tokens);
  // Decoding to the end after a change (an intervention, say): most changes keep most of the translation, so
  // a guess (the translation these very inputs gave before, else the current one) is checked in one batched
  // pass, and where the new translation departs from it, the rest is guessed again and checked a stretch at
  // a time (GuidedRedecoder, decode/guided.h).
  const bool guided = steps < 0 && same_source && options.strategy == DecodeStrategy::Greedy;
  std::vector<int> guess;
  if (guided) {
    guess = shown_.translation;
    for (const RememberedTranslation& r : remembered_)
      if (r.is_for(model_.get(), src_ids, asked_.interventions)) guess = r.translation;
  }
  // The encoder pass is taken from the current decoder where the change is past it (a decoder head, say): the
  // work shares that pass (immutable), not the decoder.
  std::shared_ptr<const Trace> encoder_pass = same_source && !prompt ? shown_.decoder->encoder_pass() : nullptr;
  Work work = [m = model_, tokens = std::move(tokens), src_ids, iv = asked_.interventions, options, steps, guided,
               guess = std::move(guess), encoder_pass = std::move(encoder_pass),
               device = device_](const std::atomic<bool>& cancelled) mutable {
    const auto start = std::chrono::steady_clock::now();
    Outcome out;
    out.model = m;
    // On the GPU where the device and the inputs allow (a painted mask stays on the CPU); a CUDA failure on the
    // way decodes again on the CPU, and that model's views stay there.
    std::shared_ptr<CudaModel> gpu = device->gpu_for(m);
    out.device_why = gpu ? why_decoding_stays_on_the_cpu(m->config, iv, options) : device->note();
    std::shared_ptr<Decoder> next;
    std::optional<GuidedRedecoder> redecoder;
    auto decode = [&](bool on_gpu) {
      next = std::make_shared<Decoder>(m->config, m->weights, src_ids, iv, options, encoder_pass);
      if (on_gpu) next->compute_on(gpu);
      redecoder.emplace(*next);
      if (guided) {
        redecoder->run(guess);
      } else if (steps < 0) {
        while (!cancelled && next->step()) {}
      }
      for (int i = 0; i < steps && !cancelled && next->step(); ++i) {}
      if (!cancelled) {
        out.trace = next->trace();
        if (!kv_cache_exact(m->config, iv)) out.chosen = next->chosen_logits();
      }
    };
    const bool try_gpu = gpu && out.device_why.empty();
    try {
      decode(try_gpu);
    } catch (const Error& e) {
      if (!try_gpu || e.kind() != ErrorKind::Unsupported) throw;
      device->fail(m, error_text(e));
      out.device_why = device->note();
      decode(false);
    }
    if (cancelled) {
      out.cancelled = true;
      return out;
    }
    if (next->on_gpu()) out.gpu = gpu->device_name();
    out.guessed = redecoder->guessed();
    out.decoder = std::move(next);
    out.source_tokens = std::move(tokens);
    out.interventions = std::move(iv);
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  return run_work(std::move(work));
}

bool AppState::toggle_mask(int position) {
  if (const std::string why = why_not_maskable(position); !why.empty()) {
    error_ = why;
    return false;
  }
  const std::vector<int> previous = asked_.masked;
  const auto at = std::lower_bound(asked_.masked.begin(), asked_.masked.end(), position);
  if (at != asked_.masked.end() && *at == position) asked_.masked.erase(at);  // its word again
  else asked_.masked.insert(at, position);
  if (rebuild(-1)) return true;
  asked_.masked = previous;
  return false;
}

std::string AppState::why_not_maskable(int position) const {
  if (!model_) return tr(T::state_no_model);
  if (!encoder_only()) return tr(T::bert_mask_encoder_only, {{"shape", to_string(model_->config.stacks)}});
  if (!model_->config.has_mask_token()) return tr(T::bert_no_mask_token);
  if (position < 0 || position >= static_cast<int>(shown_.source_tokens.size()))
    return tr(T::bert_mask_outside, {{"position", position}, {"tokens", shown_.source_tokens.size()}});
  const Token& t = shown_.source_tokens[static_cast<size_t>(position)];
  const bool masked = std::binary_search(asked_.masked.begin(), asked_.masked.end(), position);
  if (t.special && !masked) return tr(T::bert_mask_special, {{"token", source_token(t.id)}});
  return "";
}

bool AppState::rebuild_encoder_only(std::vector<Token> tokens) {
  // The blanks: position p reads [MASK] in place of its word (a masked language model's input, as its training
  // hid 15% of the words); positions past the sentence (masked before a change of it) are dropped.
  const Config& c = model_->config;
  std::erase_if(asked_.masked, [&](int p) { return p < 0 || p >= static_cast<int>(tokens.size()); });
  std::vector<int> hidden(tokens.size(), -1);
  for (int p : asked_.masked) {
    Token& t = tokens[static_cast<size_t>(p)];
    hidden[static_cast<size_t>(p)] = t.id;
    t.id = c.mask_id;
    t.text = model_->src_vocab.token(c.mask_id);
    t.unknown = false;
  }
  std::vector<int> src_ids = token_ids(tokens);
  // One traced pass (forward's encoder-only half: encoder, output head over every position); on the CPU, the
  // worker thread where the app sets a budget, as every decoding.
  Work work = [m = model_, tokens = std::move(tokens), src_ids = std::move(src_ids), hidden = std::move(hidden),
               iv = asked_.interventions](const std::atomic<bool>& cancelled) mutable {
    const auto start = std::chrono::steady_clock::now();
    Outcome out;
    out.model = m;
    out.single_pass = true;
    out.trace = forward(m->config, m->weights, src_ids, {}, iv);
    if (cancelled) {
      out.cancelled = true;
      return out;
    }
    out.source_tokens = std::move(tokens);
    out.hidden_ids = std::move(hidden);
    out.interventions = std::move(iv);
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  return run_work(std::move(work));
}

std::string AppState::source_token(int id) const {
  if (!model_ || id < 0 || id >= static_cast<int>(model_->src_vocab.size())) return "?";
  // BERT's names of the two tokens every sentence is read between: [CLS] (where the sentence's summary forms)
  // and [SEP] (its end); our files call them <bos> and <eos>.
  if (encoder_only() && id == model_->config.bos_id) return "[CLS]";
  if (encoder_only() && id == model_->config.eos_id) return "[SEP]";
  std::string token = unescape_token(model_->src_vocab.token(id));
  note_glyphs(token);
  return token;
}

std::vector<int> AppState::predicted_ids() const {
  std::vector<int> out;
  if (!encoder_only()) return out;
  const Mat& probs = shown_.trace.probs;  // (S, Vs)
  for (Eigen::Index r = 0; r < probs.rows(); ++r) {
    Eigen::Index best = 0;
    probs.row(r).maxCoeff(&best);
    out.push_back(static_cast<int>(best));
  }
  return out;
}

std::string AppState::filled_in_text() const {
  const std::vector<int> predicted = predicted_ids();
  std::string out;
  for (size_t p = 0; p < shown_.source_tokens.size(); ++p) {
    const Token& t = shown_.source_tokens[p];
    const bool blank = model_ && t.id == model_->config.mask_id && p < predicted.size();
    if (model_ && t.id == model_->config.pad_id) continue;
    out += (out.empty() ? "" : " ") +
           (blank ? "[" + source_token(predicted[p]) + "]" : t.unknown ? t.surface : source_token(t.id));
  }
  return out;
}

bool AppState::run_work(Work work) {
  if (on_worker_start_ || on_worker_end_)
    work = [start = on_worker_start_, end = on_worker_end_, inner = std::move(work)](const std::atomic<bool>& cancelled) {
      if (start) start();
      Outcome out = inner(cancelled);
      if (end) end();
      return out;
    };
  if (step_budget_ms_ <= 0) {  // at once, on this thread
    Outcome out;
    try {
      out = work(std::atomic<bool>{false});
    } catch (const std::exception& e) {
      return fail_with(e);
    }
    return commit(std::move(out));
  }
  const auto start = std::chrono::steady_clock::now();
  if (task_.running()) {  // the newest request waits for the running one to stop; an older waiting one is dropped
    task_.cancel();
    queued_ = std::move(work);
    if (!task_.wait_for(step_budget_ms_)) return true;
    try {
      task_.take();  // superseded: dropped, whatever it gave
    } catch (const std::exception&) {
    }
    work = std::move(*queued_);
    queued_.reset();
  }
  task_.start(std::move(work));
  const double spent = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!task_.wait_for(std::max(0.0, step_budget_ms_ - spent))) return true;  // poll_background() takes it
  try {
    return commit(task_.take());
  } catch (const std::exception& e) {
    return fail_with(e);
  }
}

bool AppState::commit(Outcome out) {
  if (out.cancelled) return true;
  if (!out.decoder && !out.single_pass) {
    error_ = tr(T::state_decoding_interrupted);
    return false;
  }
  last_recompute_ms_ = out.ms;
  last_guessed_ = out.guessed;
  shown_gpu_ = std::move(out.gpu);
  device_why_ = std::move(out.device_why);
  shown_.decoder = std::move(out.decoder);
  shown_.model = std::move(out.model);
  shown_.trace = std::move(out.trace);
  shown_.chosen_logits = std::move(out.chosen);
  shown_.translation = shown_.decoder ? shown_.decoder->generated() : std::vector<int>{};
  const bool rebuilt = out.source_tokens.has_value();
  if (rebuilt) shown_.source_tokens = std::move(*out.source_tokens);
  shown_.hidden_ids = std::move(out.hidden_ids);
  shown_inputs_ = asked_;
  model_undo_.reset();
  error_.clear();
  ++version_;
  if (rebuilt && shown_.decoder && shown_.decoder->finished() && shown_.decoder->options().strategy == DecodeStrategy::Greedy) {
    const std::vector<int> src_ids = token_ids(shown_.source_tokens);
    const Model* m = shown_.model.get();
    std::erase_if(remembered_, [&](const RememberedTranslation& r) { return r.is_for(m, src_ids, out.interventions); });
    if (remembered_.size() >= kRemembered) remembered_.erase(remembered_.begin());
    remembered_.push_back({m, src_ids, out.interventions, shown_.translation});
  }
  return true;
}

void AppState::fail_late(const std::exception& e) {
  fail_with(e);
  late_failure_ = error_;
  // The inputs go back to those of what is shown (the setter that asked for this has long returned).
  if (model_undo_) {
    shown_inputs_ = model_undo_->inputs;
    undo_model();
  }
  asked_ = shown_inputs_;
}

void AppState::undo_model() {
  model_ = std::move(model_undo_->model);
  model_path_ = model_undo_->path;
  shown_ = std::move(model_undo_->shown);
  model_undo_.reset();
}

RowVec AppState::chosen_distribution_logits(int position) const {
  if (position < 0) return RowVec();
  if (position < shown_.chosen_logits.rows()) return shown_.chosen_logits.row(position);
  const int row = position + prompt_rows();  // the decoder row that chose generated token `position`
  if (row < shown_.trace.logits.rows() && (shown_.chosen_logits.size() == 0 || position == static_cast<int>(shown_.translation.size())))
    return shown_.trace.logits.row(row);
  return RowVec();
}

std::string AppState::shown_device() const {
  if (!shown_gpu_.empty()) return tr(T::state_device_gpu, {{"gpu", shown_gpu_}});
  if (parallel_threads() == 1) return tr(T::state_device_cpu_one);  // a web page, or OMP_NUM_THREADS=1
  return tr(T::state_device_cpu, {{"threads", parallel_threads()}});
}

bool AppState::busy() const { return task_.running() || queued_.has_value() || as_trained_task_.running(); }

double AppState::busy_seconds() const { return std::max(task_.seconds_running(), as_trained_task_.seconds_running()); }

void AppState::poll_background() {
  if (task_.running() && task_.done()) {
    try {
      Outcome out = task_.take();
      if (!queued_ && !commit(std::move(out))) late_failure_ = error_;
    } catch (const std::exception& e) {
      if (!queued_) fail_late(e);
    }
  }
  if (!task_.running() && queued_) {
    task_.start(std::move(*queued_));
    queued_.reset();
  }
  if (as_trained_task_.running() && as_trained_task_.done()) {
    try {
      std::vector<int> ids = as_trained_task_.take();
      as_trained_.translation = std::move(ids);
    } catch (const std::exception&) {
      as_trained_.translation.clear();  // shown as nothing to compare with
    }
    as_trained_.computing = false;
  }
}

void AppState::finish_background() {
  while (busy()) {
    task_.wait_for(50);
    as_trained_task_.wait_for(50);
    poll_background();
  }
}

std::string AppState::take_late_failure() { return std::exchange(late_failure_, std::string()); }

AppState::~AppState() {
  task_.cancel();
  as_trained_task_.cancel();
}

// Steps run on the decoder itself: the work takes it (panels see no decoder until it is back) and gives it back
// with the trace of where it stopped. count > 0: forward, < 0: back, kToEnd: to the end.
namespace {
constexpr int kToEnd = std::numeric_limits<int>::max();
}

bool AppState::step(int count) {
  if (!shown_.decoder || busy() || shown_.decoder->finished() || count <= 0) return false;
  return advance(count);
}

bool AppState::step_back(int count) {
  if (!shown_.decoder || busy() || shown_.decoder->steps() == 0 || count <= 0) return false;
  return advance(-count);
}

bool AppState::run_to_end() {
  if (!shown_.decoder || busy() || shown_.decoder->finished()) return false;
  return advance(kToEnd);
}

bool AppState::advance(int count) {
  Work work = [d = std::move(shown_.decoder), m = shown_.model, count, device = device_, why = device_why_,
               gpu = shown_gpu_](const std::atomic<bool>& cancelled) mutable {
    const auto start = std::chrono::steady_clock::now();
    Outcome out;
    out.model = m;
    out.gpu = gpu;
    out.device_why = why;
    const int target = count == kToEnd ? kToEnd : std::max(0, d->steps() + count);
    auto walk = [&](Decoder& walked, int by) {
      if (by > 0) {
        for (int i = 0; i < by && !cancelled && walked.step(); ++i) {}
      } else {
        walked.step_back(-by);  // one rebuild of a beam's hypotheses, however many steps
      }
      if (!cancelled) {
        out.trace = walked.trace();
        if (!kv_cache_exact(m->config, walked.interventions())) out.chosen = walked.chosen_logits();
      }
    };
    try {
      walk(*d, count);
    } catch (const Error& e) {
      // A CUDA failure in a step on the GPU: the same decoding again on the CPU, to the same step.
      if (!d->on_gpu() || e.kind() != ErrorKind::Unsupported) throw;
      device->fail(m, error_text(e));
      out.device_why = device->note();
      d = std::make_shared<Decoder>(m->config, m->weights, d->encoded().src.ids, d->interventions(), d->options(),
                                    d->encoder_pass());
      walk(*d, target);
      out.gpu.clear();
    }
    if (cancelled) {
      out.cancelled = true;
      return out;
    }
    out.guessed = 0;
    out.decoder = d;
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  return run_work(std::move(work));
}

bool AppState::restart() { return rebuild(0); }

const std::vector<int>& AppState::translation_as_trained() {
  const std::vector<int> src_ids = token_ids(shown_.source_tokens);
  if (!model_ || src_ids.empty() || shown_.model != model_ || encoder_only()) {  // (BERT translates nothing)
    as_trained_ = {};
    return as_trained_.translation;
  }
  if (as_trained_.model == model_.get() && as_trained_.src_ids == src_ids && as_trained_.version == decode_options_version_)
    return as_trained_.translation;
  as_trained_ = {model_.get(), src_ids, decode_options_version_, {}, false};
  if (asked_.interventions == Interventions{} && shown_.decoder && shown_.decoder->finished()) {
    as_trained_.translation = shown_.translation;
    return as_trained_.translation;
  }
  for (const RememberedTranslation& r : remembered_)
    if (r.is_for(model_.get(), src_ids, Interventions{}) && asked_.decode_options.strategy == DecodeStrategy::Greedy) {
      as_trained_.translation = r.translation;
      return as_trained_.translation;
    }
  DecodeOptions options = asked_.decode_options;
  apply_generation_rules(model_->generation, options);
  options.max_length = max_length_for(static_cast<int>(src_ids.size()));
  auto work = [m = model_, src_ids, options, hook = on_worker_start_](const std::atomic<bool>& cancelled) {
    if (hook) hook();  // as every decoding's (run_work)
    Decoder d(m->config, m->weights, src_ids, Interventions{}, options);
    while (!cancelled && d.step()) {}
    return cancelled ? std::vector<int>{} : d.generated();
  };
  if (step_budget_ms_ <= 0) {
    try {
      as_trained_.translation = work(std::atomic<bool>{false});
    } catch (const std::exception&) {
      as_trained_.translation.clear();  // shown as nothing to compare with
    }
    return as_trained_.translation;
  }
  as_trained_.computing = true;
  as_trained_task_.start(work);  // (cancels and waits for one decoding an older sentence)
  if (as_trained_task_.wait_for(step_budget_ms_)) poll_background();
  return as_trained_.translation;
}

int AppState::prompt_start() const { return decoder_only() && model_->config.starts_with_bos ? 1 : 0; }

int AppState::prompt_rows() const {
  // The decoder reads prompt_start() + n tokens of the prompt; its rows but the last predict the prompt's own next
  // token (given), the last the first generated one. (An empty prompt is refused: rebuild.)
  if (!decoder_only() || shown_.source_tokens.empty()) return 0;
  return static_cast<int>(shown_.source_tokens.size()) + prompt_start() - 1;
}

int AppState::max_length_for(int input_tokens) const {
  // A translation about as long as its source, and some; a continuation of kContinuationTokens (the Decoder cuts
  // both to the positions the model has).
  const int most = model_->config.max_positions - 1;
  if (model_->config.stacks == ModelStacks::DecoderOnly) return std::max(1, std::min(kContinuationTokens, most - input_tokens));
  return std::min(input_tokens + 30, most);
}

std::vector<std::string> AppState::source_labels() const {
  std::vector<std::string> out;
  for (const Token& t : shown_.source_tokens) {
    if (encoder_only() && !t.unknown) out.push_back(source_token(t.id));  // ([CLS], [SEP], [MASK], words)
    else if (t.unknown && model_) out.push_back((decoder_only() ? model_->tgt_vocab : model_->src_vocab).token(model_->config.unk_id));
    else if (decoder_only() && !t.special) out.push_back(target_token(t.id));  // (a prompt: the target's pieces)
    else out.push_back(t.special ? t.text : unescape_token(t.text));
  }
  return out;
}

std::vector<std::string> AppState::source_label_tips() const {
  std::vector<std::string> out;
  for (const Token& t : shown_.source_tokens) {
    if (t.unknown) {
      out.push_back(tr(T::state_token_unknown, {{"word", t.surface}, {"id", t.id}}));
    } else if (encoder_only() && (t.special || t.id == model_->config.mask_id)) {
      const bool bos = t.id == model_->config.bos_id, eos = t.id == model_->config.eos_id;
      out.push_back(tr(bos   ? T::bert_token_cls
                       : eos ? T::bert_token_sep
                       : t.id == model_->config.mask_id ? T::bert_token_mask
                                                        : T::state_token_pad,
                       {{"token", source_token(t.id)}, {"id", t.id}}));
    } else if (t.special) {
      const bool bos = model_ && t.id == model_->config.bos_id, eos = model_ && t.id == model_->config.eos_id;
      out.push_back(tr(bos ? T::state_token_bos : eos ? T::state_token_eos : T::state_token_pad, {{"token", t.text}}));
    } else {
      out.push_back(tr(T::state_token, {{"word", t.surface}, {"token", unescape_token(t.text)}, {"id", t.id}}));
    }
  }
  return out;
}

std::vector<std::string> AppState::decoder_row_labels() const {
  std::vector<std::string> out = decoder_input_labels();
  for (size_t t = 0; t < out.size(); ++t) out[t] += " -> " + predicted_at_row(static_cast<int>(t));
  return out;
}

std::string AppState::predicted_at_row(int row) const {
  // Row t reads decoder input t and predicts the token after it: a prompt's own next token (rows inside a
  // decoder-only model's prompt, where the next token is given), else translation[t - prompt_rows()] once chosen.
  const std::vector<int>& ids = shown_.trace.tgt.ids;
  const int generated = row - prompt_rows();
  if (generated < 0) return row + 1 < static_cast<int>(ids.size()) ? target_token(ids[static_cast<size_t>(row + 1)]) : "?";
  if (generated < static_cast<int>(shown_.translation.size())) return target_token(shown_.translation[static_cast<size_t>(generated)]);
  return "?";
}

std::vector<std::string> AppState::decoder_input_labels() const {
  std::vector<std::string> out;
  if (!model_) return out;
  for (int id : shown_.trace.tgt.ids) out.push_back(target_token(id));
  return out;
}

std::string AppState::target_token(int id) const {
  if (encoder_only()) return source_token(id);  // (one vocabulary, the source's: what its output head scores)
  if (!model_ || id < 0 || id >= static_cast<int>(model_->tgt_vocab.size())) return "?";
  // A byte-level piece (GPT-2's "Ġman") as the bytes it stands for, spaces and broken characters visible
  // (gui/words.h); a word or a SentencePiece piece as the vocabulary writes it.
  const std::string& piece = model_->tgt_vocab.token(id);
  std::string token = model_->tokenizer.kind == "byte_bpe" ? piece_as_read(byte_level_piece_bytes(piece)) : unescape_token(piece);
  note_glyphs(token);  // the candidates, the beam tree, the timeline draw it: the font atlas must hold it
  return token;
}

std::string AppState::prompt_and_continuation_text() const {
  if (!model_) return "";
  std::vector<std::string> pieces;
  for (const Token& t : shown_.source_tokens)
    if (!t.special) pieces.push_back(t.unknown ? t.surface : t.text);  // (an unknown word as typed)
  for (int id : shown_.translation)
    if (id != model_->config.eos_id) pieces.push_back(model_->tgt_vocab.token(id));
  return decode_text(*model_, pieces, Side::Target);
}

std::string AppState::translation_text() const {
  if (!model_) return "";
  std::vector<std::string> words;
  for (int id : shown_.translation)
    if (id != model_->config.eos_id) words.push_back(model_->tgt_vocab.token(id));
  return decode_text(*model_, words, Side::Target);
}

}  // namespace sf::gui
