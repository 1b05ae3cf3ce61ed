#include "decode/decoder.h"

#include <algorithm>
#include <limits>
#include <cmath>

#include "backend/cuda_model.h"
#include "model/model.h"
#include "transformer/forward.h"
#include "transformer/pass_memory.h"
#include "util/error.h"

namespace sf {

void validate_decode_options(const DecodeOptions& options) {
  if (options.strategy == DecodeStrategy::Sample) validate_sampling(options.sampling);
  if (options.strategy == DecodeStrategy::Beam && (options.beam_width < 1 || options.beam_width > kMaxBeamWidth))
    fail(ErrorKind::Input, "Decoder", "the beam width must be from 1 to " + std::to_string(kMaxBeamWidth) + ", got " +
                                          std::to_string(options.beam_width));
  if (options.max_length < 0)
    fail(ErrorKind::Input, "Decoder", "max_length must be >= 0, got " + std::to_string(options.max_length));
}

void validate_decode_options(const Config& config, const DecodeOptions& options, const Interventions& interventions) {
  validate_decode_options(options);
  const bool cached = options.use_kv_cache && kv_cache_exact(config, interventions);
  if (options.strategy == DecodeStrategy::Beam && !cached && options.beam_width > kMaxBeamWidthWithoutCache)
    fail(ErrorKind::Input, "Decoder",
         "a beam of " + std::to_string(options.beam_width) + " without the KV cache (" +
             (!options.use_kv_cache ? "the cache is switched off"
              : config.attention == AttentionStyle::ReshapeHeads
                  ? "this model's reshaped heads mix every token of the prefix"
                  : "the causal mask is off or a painted mask lets a token see later ones") +
             ") would recompute every hypothesis' whole prefix at every step; the widest beam then is " +
             std::to_string(kMaxBeamWidthWithoutCache));
}

namespace {

// Decoding's working memory (transformer/pass_memory.h) for this source and the longest translation it may write,
// before the encoder runs: refused with the numbers where it would not fit.
void check_decoding_memory(const Config& config, int source, int max_length, const DecodeOptions& options) {
  const int hypotheses = options.strategy == DecodeStrategy::Beam ? options.beam_width : 1;
  const int extra = max_length + 1 - source;  // (the longest translation, as a length beside the source's)
  check_pass_memory(config, source,
                    [&](int s) { return decoding_bytes(config, s, std::max(1, s + extra), hypotheses); }, "Decoder");
}

}  // namespace

std::vector<int> decoder_only_input(const Config& config, const std::vector<int>& prompt) {
  std::vector<int> input;
  if (config.starts_with_bos || prompt.empty()) input.push_back(config.bos_id);
  input.insert(input.end(), prompt.begin(), prompt.end());
  return input;
}

bool Decoder::start_without_encoder(const std::vector<int>& prompt, const Interventions& interventions) {
  if (!config_->has_decoder()) fail(ErrorKind::Input, "Decoder", "an encoder_only model does not generate text");
  if (config_->has_encoder()) return false;
  // A decoder-only model: `prompt` (after <bos> where the model starts with one) is the decoder's input, every
  // token generated continues it.
  validate_interventions(*config_, interventions);
  std::vector<int> first = decoder_only_input(*config_, prompt);
  const DecoderRows rows = DecoderRows::one_sequence(first);  // its positions from 0
  check_embedding_input(*config_, *weights_, false, rows.tokens, rows.positions);
  const int length = rows.size();
  if (length >= config_->max_positions)
    fail(ErrorKind::Input, "Decoder", "a prompt of " + std::to_string(prompt.size()) + " tokens leaves no position to "
                                      "generate in (the model has " + std::to_string(config_->max_positions) + ")");
  start_tokens_ = std::move(first);
  max_length_ = std::min(max_length_, config_->max_positions - length);
  check_decoding_memory(*config_, 0, length + max_length_, options_);  // no source
  auto empty = std::make_shared<Trace>();  // no encoder pass: the decoder's passes read none
  empty->interventions = interventions;
  encoder_ = std::move(empty);
  start(interventions);
  return true;
}

Decoder::Decoder(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
                 const Interventions& interventions, const DecodeOptions& options,
                 std::shared_ptr<const Trace> previous_encoder)
    : config_(&config), weights_(&weights), options_(options), rng_(options.seed) {
  validate_decode_options(config, options, interventions);
  max_length_ = options.max_length == 0 ? config.max_positions : std::min(options.max_length, config.max_positions);
  if (start_without_encoder(src_ids, interventions)) return;
  check_decoding_memory(config, static_cast<int>(src_ids.size()), max_length_, options);
  // reuse_encoder's rule, without its copy: the pass is shared.
  validate_interventions(config, interventions);
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), -1);
  if (previous_encoder && previous_encoder->has_encoder() && previous_encoder->sequences == 1 &&
      previous_encoder->src.ids == src_ids &&
      static_cast<int>(previous_encoder->encoder.size()) == config.n_encoder_layers &&
      plan_recompute(config, previous_encoder->interventions, interventions).encoder_from >= config.n_encoder_layers) {
    encoder_ = std::move(previous_encoder);
  } else {
    auto fresh = std::make_shared<Trace>();
    encode(config, weights, src_ids, interventions, *fresh);
    encoder_ = std::move(fresh);
  }
  start(interventions);
}

Decoder::Decoder(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
                 const Interventions& interventions, const DecodeOptions& options, const Trace* previous_encoder)
    : config_(&config), weights_(&weights), options_(options), rng_(options.seed) {
  validate_decode_options(config, options, interventions);
  max_length_ = options.max_length == 0 ? config.max_positions : std::min(options.max_length, config.max_positions);
  if (start_without_encoder(src_ids, interventions)) return;
  check_decoding_memory(config, static_cast<int>(src_ids.size()), max_length_, options);
  auto own = std::make_shared<Trace>();
  if (!previous_encoder || !reuse_encoder(config, *previous_encoder, src_ids, interventions, *own))
    encode(config, weights, src_ids, interventions, *own);
  encoder_ = std::move(own);
  start(interventions);
}

void Decoder::start(const Interventions& interventions) {
  encoded_.sequences = 1;
  encoded_.interventions = interventions;
  encoded_.src.ids = encoder_->src.ids;
  encoded_.enc_out = encoder_->enc_out;
  use_cache_ = options_.use_kv_cache && kv_cache_exact(*config_, interventions);
  if (start_tokens_.empty()) start_tokens_ = {config_->bos_id};  // a translation's; a prompt's were set before
  tree_.push_back(BeamNode{config_->bos_id, -1, 0, 0.0f, 0.0f, 0.0f, false, 0});
  live_ = {0};
  cross_ = std::make_shared<const CrossKeysValues>(cross_keys_values(*config_, *weights_, encoded_));
  // <bos> is fed on the first step (ensure_started), not here: a guided check of a whole guess reads its
  // prediction from its own pass (GuidedRedecoder::prefill).
  Hypothesis h;
  h.cache = empty_kv_cache(*config_);
  h.cache.cross = cross_;
  states_.push_back(std::move(h));
}

struct Decoder::GpuCache {
  std::shared_ptr<CudaDecoding> owner;
  int id;
  GpuCache(std::shared_ptr<CudaDecoding> decoding, int cache) : owner(std::move(decoding)), id(cache) {}
  GpuCache(const GpuCache&) = delete;
  GpuCache& operator=(const GpuCache&) = delete;
  ~GpuCache() { owner->release_cache(id); }
};

std::shared_ptr<Decoder::GpuCache> Decoder::gpu_cache(int id) const { return std::make_shared<GpuCache>(gpu_, id); }

void Decoder::own_gpu_cache(Hypothesis& h) const {
  if (h.gpu.use_count() > 1) h.gpu = gpu_cache(gpu_->copy_cache(h.gpu->id));
}

std::shared_ptr<Decoder::GpuCache> Decoder::copy_gpu_cache(const Hypothesis& h) const {
  return gpu_cache(gpu_->copy_cache(h.gpu->id));
}

Mat Decoder::gpu_chunk(const GpuCache& cache, const std::vector<int>& tokens) const { return gpu_->chunk(cache.id, tokens); }

void Decoder::truncate_gpu_cache(const GpuCache& cache, int length) const { gpu_->truncate_cache(cache.id, length); }

int Decoder::fed(const Hypothesis& h) const { return gpu_ ? gpu_->cache_length(h.gpu->id) : h.cache.length(); }

std::string why_decoding_stays_on_the_cpu(const Config& config, const Interventions& interventions,
                                          const DecodeOptions& options) {
  if (!options.use_kv_cache) return "the KV cache is switched off";
  if (config.attention == AttentionStyle::ReshapeHeads) return "this model's reshaped heads have no KV cache";
  if (!interventions.causal_mask) return "the causal mask is off: every step recomputes the whole prefix";
  if (!interventions.custom_masks.empty()) return "painted masks compute on the CPU";
  return {};
}

void Decoder::compute_on(std::shared_ptr<CudaModel> gpu) {
  compute_on(*gpu);
  gpu_owner_ = std::move(gpu);
}

void Decoder::compute_on(CudaModel& gpu) {
  if (!history_.empty() || fed(states_.front()) > 0)
    fail(ErrorKind::Input, "Decoder", "compute_on: the decoder has already taken steps on the CPU");
  // The one rule of what the GPU's caches take (it implies use_cache_), in the words the app shows.
  if (const std::string why = why_decoding_stays_on_the_cpu(*config_, encoded_.interventions, options_); !why.empty())
    fail(ErrorKind::Unsupported, "cuda", why + ": decoding runs on the CPU");
  auto decoding = std::make_shared<CudaDecoding>(gpu, encoded_.src.ids, encoded_.interventions);
  const int first = decoding->new_cache();
  gpu_ = std::move(decoding);
  gpu_model_ = &gpu;
  states_.front().gpu = gpu_cache(first);
}

void Decoder::ensure_started() {
  Hypothesis& h = states_.front();
  if (fed(h) == 0 && !finished_) feed(h, start_tokens());
}

Decoder::Hypothesis Decoder::start_hypothesis() const {
  Hypothesis h;
  if (gpu_) {
    h.gpu = gpu_cache(gpu_->new_cache());
  } else {
    h.cache = empty_kv_cache(*config_);
    h.cache.cross = cross_;
  }
  feed(h, start_tokens());
  return h;
}

// Consumes tokens in order: next_logits becomes the prediction after the last.
void Decoder::feed(Hypothesis& h, std::span<const int> tokens) const {
  if (tokens.empty()) return;
  if (gpu_) {
    own_gpu_cache(h);
    for (int token : tokens) h.next_logits = gpu_->step({h.gpu->id}, {token}).row(0);
    return;
  }
  if (use_cache_) {
    for (int token : tokens) h.next_logits = decode_step(*config_, *weights_, encoded_, token, h.cache);
    return;
  }
  // Every row may see every other: the whole prefix again, from an empty self-attention cache, its last row only
  // through the last layer and the output projection. Only the last token's pass counts, so several tokens take
  // one pass (a beam rebuilt after stepping back: O(L) rows, not O(L^2)).
  std::vector<int> all = h.cache.tokens;
  all.insert(all.end(), tokens.begin(), tokens.end());
  truncate_kv_cache(h.cache, 0);
  h.next_logits = decode_chunk(*config_, *weights_, encoded_, all, h.cache, 1).row(0);
}

void Decoder::feed(Hypothesis& h, int token) const { feed(h, std::span<const int>(&token, 1)); }

void Decoder::feed_each(std::vector<Hypothesis>& hypotheses, const std::vector<int>& tokens) const {
  if (gpu_ && !hypotheses.empty()) {  // one pass of every hypothesis over its own cache
    std::vector<int> ids;
    for (Hypothesis& h : hypotheses) {
      own_gpu_cache(h);
      ids.push_back(h.gpu->id);
    }
    const Mat logits = gpu_->step(ids, tokens);  // (W, Vt)
    for (size_t i = 0; i < hypotheses.size(); ++i) hypotheses[i].next_logits = logits.row(static_cast<Eigen::Index>(i));
    return;
  }
  if (!use_cache_ || hypotheses.size() < 2) {
    for (size_t i = 0; i < hypotheses.size(); ++i) feed(hypotheses[i], tokens[i]);
    return;
  }
  std::vector<KvCache*> caches;
  for (Hypothesis& h : hypotheses) caches.push_back(&h.cache);
  const Mat logits = decode_steps(*config_, *weights_, encoded_, tokens, caches);  // (W, Vt)
  for (size_t i = 0; i < hypotheses.size(); ++i) hypotheses[i].next_logits = logits.row(static_cast<Eigen::Index>(i));
}

std::vector<Decoder::Hypothesis> Decoder::continue_hypotheses(const std::vector<int>& parent_slots,
                                                             const std::vector<int>& tokens) {
  std::vector<size_t> last_child(states_.size(), parent_slots.size());
  for (size_t i = 0; i < parent_slots.size(); ++i) last_child[static_cast<size_t>(parent_slots[i])] = i;
  std::vector<Hypothesis> next(parent_slots.size());
  for (size_t i = 0; i < parent_slots.size(); ++i) {  // rising i: a parent's copies are made before its move
    Hypothesis& parent = states_[static_cast<size_t>(parent_slots[i])];
    next[i] = last_child[static_cast<size_t>(parent_slots[i])] == i ? std::move(parent) : parent;
  }
  states_.clear();
  feed_each(next, tokens);
  return next;
}

Decoder::Hypothesis Decoder::rebuild(int node) const {
  Hypothesis h = start_hypothesis();
  feed(h, path(node));
  return h;
}

int Decoder::forced_token(int position) const {
  const auto& forced = encoded_.interventions.forced_prefix;
  return position < static_cast<int>(forced.size()) ? forced[static_cast<size_t>(position)] : -1;
}

float Decoder::length_penalty(int length) const {
  return std::pow((5.0f + static_cast<float>(length)) / 6.0f, options_.length_penalty);
}

RowVec Decoder::allowed(const RowVec& logits) const {
  if (options_.never_generate.empty()) return logits;
  RowVec out = logits;
  for (int id : options_.never_generate)
    if (id >= 0 && id < out.size()) out(id) = -std::numeric_limits<float>::infinity();
  return out;
}

RowVec Decoder::next_logprobs(const RowVec& logits, int length) const {
  RowVec lp = allowed(log_softmax(logits));
  if (options_.force_eos_at_max_length && length + 1 >= max_length_) {  // ForcedEOSTokenLogitsProcessor
    lp.setConstant(-std::numeric_limits<float>::infinity());
    lp(config_->eos_id) = 0.0f;
  }
  return options_.renormalize ? log_softmax(lp) : lp;
}

int Decoder::greedy_token(const RowVec& logits, int length) const {
  if (options_.force_eos_at_max_length && length + 1 >= max_length_) return config_->eos_id;
  return options_.never_generate.empty() ? argmax(logits) : argmax(allowed(logits));
}

void apply_generation_rules(const GenerationDefaults& g, DecodeOptions& options) {
  if (!g.present) return;
  options.never_generate = g.never_generate;
  options.renormalize = g.renormalize;
  options.force_eos_at_max_length = g.force_eos;
  options.beam_scoring = BeamScoring::HuggingFace;
}

void apply_generation_defaults(const GenerationDefaults& g, DecodeOptions& options) {
  if (!g.present) return;
  apply_generation_rules(g, options);
  options.length_penalty = g.length_penalty;
  if (g.beam_width > 1) {
    options.strategy = DecodeStrategy::Beam;
    options.beam_width = std::min(g.beam_width, kMaxBeamWidth);
  }
  if (g.max_length > 1) options.max_length = g.max_length - 1;  // Hugging Face counts the start token
}

std::vector<int> Decoder::path(int node) const {
  std::vector<int> tokens;
  for (int n = node; n > 0; n = tree_[static_cast<size_t>(n)].parent) tokens.push_back(tree_[static_cast<size_t>(n)].token);
  std::reverse(tokens.begin(), tokens.end());
  return tokens;
}

int Decoder::best_node() const {
  int best = -1;
  for (int n : finished_beams_)
    if (best < 0 || tree_[static_cast<size_t>(n)].score > tree_[static_cast<size_t>(best)].score) best = n;
  if (best >= 0) return best;
  return live_.empty() ? 0 : live_.front();
}

std::vector<int> Decoder::generated() const { return path(best_node()); }

std::vector<int> Decoder::pass_input() const {
  std::vector<int> input = start_tokens();
  const std::vector<int> tokens = generated();
  input.insert(input.end(), tokens.begin(), tokens.end());
  if (finished_ && !tokens.empty()) input.pop_back();
  return input;
}

bool Decoder::trace_kept() const {
  return finished_trace_ && finished_ && finished_trace_->tgt.ids == pass_input();
}

// The one copy of the encoder half: for the trace a caller keeps (a kept decoder half is copied too, a new one
// moved in).
Trace Decoder::with_encoder(Trace decoder_half) const { return join_halves(*encoder_, std::move(decoder_half)); }

std::vector<RecordedRows> Decoder::recorded_rows_of(const std::vector<int>& input) const {
  std::vector<RecordedRows> pieces;
  if (gpu_model_) return pieces;
  int at = 0;  // rows of `input` covered so far
  const int rows = static_cast<int>(input.size());
  for (const RecordedRows& p : recorded_rows_) {
    if (at == rows) break;
    if (p.first_position + p.begin != at) return {};
    RecordedRows piece = p;
    piece.end = std::min(p.end, p.begin + (rows - at));
    const std::vector<int>& ids = p.pass->tgt.ids;
    if (!std::equal(ids.begin() + piece.begin, ids.begin() + piece.end, input.begin() + at)) return {};
    at += piece.end - piece.begin;
    pieces.push_back(std::move(piece));
  }
  if (at != rows) return {};
  return pieces;
}

bool Decoder::trace_assembled() const { return !trace_kept() && !recorded_rows_of(pass_input()).empty(); }

Trace Decoder::traced_pass(const std::vector<int>& input, OutputLayer output, KvCache* fill) const {
  Trace t;  // the decoder half; decoder_pass fits the painted masks to the input's length
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence(input);
  if (output == OutputLayer::AllRows)
    for (int r = 0; r < pass.rows.size(); ++r) pass.output_rows.push_back(r);
  if (fill) pass.caches = {fill};
  pass.record = Record::Trace;
  pass.trace = &t;
  decoder_pass(*config_, *weights_, encoded_, cross_.get(), pass);
  return t;
}

Trace Decoder::trace() const {
  if (trace_kept()) return with_encoder(*finished_trace_);
  if (gpu_model_) {  // the whole traced pass there, copied back once
    Trace t;
    gpu_model_->forward(encoded_.src.ids, pass_input(), encoded_.interventions, t);
    return t;
  }
  if (std::vector<RecordedRows> rows = recorded_rows_of(pass_input()); !rows.empty())
    return with_encoder(assemble_traced_pass(*config_, encoded_, *cross_, rows));
  return with_encoder(traced_pass(pass_input(), OutputLayer::AllRows));
}

bool Decoder::step() {
  if (finished_) return false;
  ensure_started();
  push_history();
  if (options_.strategy == DecodeStrategy::Beam) step_beam();
  else step_single();
  return true;
}

void Decoder::push_history() {
  const bool single = options_.strategy != DecodeStrategy::Beam;
  history_.push_back(Snapshot{rng_, single ? states_.front().next_logits : RowVec(), live_,
                              finished_beams_, tree_.size(), finished_});
}

bool Decoder::append_single(int token, const RowVec& logits) {
  const int parent = live_.front();
  const BeamNode& p = tree_[static_cast<size_t>(parent)];
  const float lp = log_softmax_at(logits, token);
  BeamNode n{token, parent, p.length + 1, lp, p.sum_logprob + lp, 0.0f, false, steps()};
  n.score = n.sum_logprob / length_penalty(n.length);
  n.finished = token == config_->eos_id || n.length >= max_length_;
  tree_.push_back(n);
  const int id = static_cast<int>(tree_.size()) - 1;
  if (n.finished) {
    finished_beams_.push_back(id);
    live_.clear();  // states_ keeps the hypothesis (bos + path(parent) consumed) for step_back
    finished_ = true;
  } else {
    live_ = {id};
  }
  return n.finished;
}

RowVec Decoder::last_distribution() const {
  if (options_.strategy == DecodeStrategy::Beam || history_.empty()) return RowVec();
  // Single decoding grows tree_ by one node a step (step_back cuts it back): its last node is the last token,
  // chosen from the prediction history_.back() kept, with one token fewer generated.
  const RowVec& prediction = history_.back().next_logits;
  if (options_.strategy == DecodeStrategy::Sample) return sampling_distribution(allowed(prediction), options_.sampling);
  return next_logprobs(prediction, tree_.back().length - 1).array().exp().matrix();
}

Mat Decoder::chosen_logits() const {
  const std::vector<int> tokens = generated();
  const int n = static_cast<int>(tokens.size());
  if (options_.strategy != DecodeStrategy::Beam) {
    // One step a token: step i kept the prediction it chose token i from (push_history, take_greedy).
    Mat out(n, config_->tgt_vocab_size);  // (T, Vt)
    for (int i = 0; i < n && i < static_cast<int>(history_.size()); ++i) out.row(i) = history_[static_cast<size_t>(i)].next_logits;
    return out;
  }
  if (n == 0) return Mat(0, config_->tgt_vocab_size);
  // <bos> (+ the prompt) + every token but the last: the prefixes that chose tokens 0 .. n-1
  std::vector<int> input = start_tokens();
  const int start = static_cast<int>(input.size());
  input.insert(input.end(), tokens.begin(), tokens.end() - 1);
  std::vector<int> lengths(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) lengths[static_cast<size_t>(i)] = start + i;
  return decode_prefixes(*config_, *weights_, encoded_, input, lengths, *cross_);
}

void Decoder::take_greedy(int token, const RowVec& prediction) {
  states_.front().next_logits = prediction;  // what step_back restores
  push_history();
  append_single(token, prediction);
}

int Decoder::run() {
  int n = 0;
  while (step()) ++n;
  return n;
}

void Decoder::step_single() {
  Hypothesis& h = states_.front();
  int token = forced_token(tree_[static_cast<size_t>(live_.front())].length);
  if (options_.strategy == DecodeStrategy::Sample) {
    if (token < 0) token = draw(sampling_distribution(allowed(h.next_logits), options_.sampling), rng_);
  } else if (token < 0) {
    token = greedy_token(h.next_logits, tree_[static_cast<size_t>(live_.front())].length);
  }
  if (!append_single(token, h.next_logits)) feed(h, token);
}

std::vector<Decoder::BeamCandidate> Decoder::beam_candidates() const {
  const int width = options_.beam_width;
  std::vector<BeamCandidate> candidates;
  for (size_t s = 0; s < live_.size(); ++s) {
    const BeamNode& p = tree_[static_cast<size_t>(live_[s])];
    const RowVec lp = next_logprobs(states_[s].next_logits, p.length);  // banned ids -inf
    const int forced = forced_token(p.length);
    if (forced >= 0) {
      candidates.push_back({static_cast<int>(s), forced, lp(forced), p.sum_logprob + lp(forced)});
      continue;
    }
    // The 2W best tokens of this hypothesis (ties towards the lower id); a banned one never.
    for (int id : top_k_ids(lp, 2 * width))
      if (lp(id) > -std::numeric_limits<float>::infinity())
        candidates.push_back({static_cast<int>(s), id, lp(id), p.sum_logprob + lp(id)});
  }
  // Best summed log-probability first: the global 2W best are among these.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const BeamCandidate& a, const BeamCandidate& b) { return a.sum > b.sum; });
  return candidates;
}

void Decoder::step_beam() {
  if (options_.beam_scoring == BeamScoring::HuggingFace) return step_beam_hugging_face();
  const int width = options_.beam_width;
  const std::vector<BeamCandidate> candidates = beam_candidates();
  std::vector<int> new_live, parent_slots, tokens;  // the open hypotheses of the next step
  for (size_t rank = 0; rank < candidates.size() && static_cast<int>(new_live.size()) < width; ++rank) {
    const BeamCandidate& c = candidates[rank];
    const int parent = live_[static_cast<size_t>(c.parent_slot)];
    const BeamNode& p = tree_[static_cast<size_t>(parent)];
    const bool eos = c.token == config_->eos_id;
    if (eos && static_cast<int>(rank) >= width) continue;  // an eos outside the best W does not finish
    BeamNode n{c.token, parent, p.length + 1, c.logprob, c.sum, 0.0f, false, steps()};
    n.score = n.sum_logprob / length_penalty(n.length);
    n.finished = eos || n.length >= max_length_;
    tree_.push_back(n);
    const int id = static_cast<int>(tree_.size()) - 1;
    if (n.finished) {
      finished_beams_.push_back(id);
      continue;
    }
    new_live.push_back(id);
    parent_slots.push_back(c.parent_slot);
    tokens.push_back(c.token);
  }
  live_ = std::move(new_live);
  states_ = continue_hypotheses(parent_slots, tokens);
  if (live_.empty() || static_cast<int>(finished_beams_.size()) >= width) finished_ = true;
}

// transformers' _beam_search (generation/utils.py, the vectorised one of 2025), one step, for K = beam_width:
//   1. every open hypothesis k: lp_k = next_logprobs (log-softmax, bad words -inf, </s> forced at max_length,
//      renormalised); candidates: the 2K best of sum_k + lp_k[v] over all k and v
//   2. a candidate "ends" when its token is </s> or it reaches max_length
//   3. the K best candidates that do not end are the new open hypotheses
//   4. a candidate that ends and ranks among the first K is a finished hypothesis, scored sum / length^alpha
//      (length: its generated tokens, </s> included); the K best finished are kept
//   5. stop when every candidate ended, or when K have finished and the best open hypothesis, scored at its
//      length (sum / length^alpha), is no better than the worst of them
void Decoder::step_beam_hugging_face() {
  const int width = options_.beam_width;
  std::vector<BeamCandidate> candidates = beam_candidates();
  if (static_cast<int>(candidates.size()) > 2 * width) candidates.resize(static_cast<size_t>(2 * width));
  std::vector<int> new_live, parent_slots, tokens;  // the open hypotheses of the next step
  bool every_candidate_ends = true;
  for (size_t rank = 0; rank < candidates.size(); ++rank) {
    const BeamCandidate& c = candidates[rank];
    const int parent = live_[static_cast<size_t>(c.parent_slot)];
    const BeamNode& p = tree_[static_cast<size_t>(parent)];
    const bool ends = c.token == config_->eos_id || p.length + 1 >= max_length_;
    every_candidate_ends = every_candidate_ends && ends;
    if (ends ? static_cast<int>(rank) >= width : static_cast<int>(new_live.size()) >= width) continue;
    BeamNode n{c.token, parent, p.length + 1, c.logprob, c.sum, 0.0f, ends, steps()};
    n.score = n.sum_logprob / std::pow(static_cast<float>(n.length), options_.length_penalty);
    tree_.push_back(n);
    const int id = static_cast<int>(tree_.size()) - 1;
    if (ends) {
      finished_beams_.push_back(id);
      continue;
    }
    new_live.push_back(id);
    parent_slots.push_back(c.parent_slot);
    tokens.push_back(c.token);
  }
  // The K best finished (stable: an earlier one stays ahead of an equal later one).
  std::stable_sort(finished_beams_.begin(), finished_beams_.end(), [&](int a, int b) {
    return tree_[static_cast<size_t>(a)].score > tree_[static_cast<size_t>(b)].score;
  });
  if (static_cast<int>(finished_beams_.size()) > width) finished_beams_.resize(static_cast<size_t>(width));
  live_ = std::move(new_live);
  states_ = continue_hypotheses(parent_slots, tokens);
  bool improvable = true;
  if (static_cast<int>(finished_beams_.size()) >= width && !live_.empty()) {
    const BeamNode& best_open = tree_[static_cast<size_t>(live_.front())];
    const float best_possible =
        best_open.sum_logprob / std::pow(static_cast<float>(best_open.length), options_.length_penalty);
    improvable = best_possible > tree_[static_cast<size_t>(finished_beams_.back())].score;
  }
  if (live_.empty() || every_candidate_ends || !improvable) finished_ = true;
}

bool Decoder::step_back() { return step_back(1) == 1; }

int Decoder::step_back(int count) {
  int undone = 0;
  for (; undone < count && !history_.empty(); ++undone) {
    const Snapshot s = std::move(history_.back());
    history_.pop_back();
    rng_ = s.rng;
    live_ = s.live;
    finished_beams_ = s.finished_beams;
    tree_.resize(s.tree_size);
    finished_ = s.finished;
    // The live hypotheses' caches: greedy / sample truncate theirs (the earlier rows do not change with the
    // causal mask, and without a cache only the token list is kept); beams, whose caches were replaced, rebuild
    // them once, below, however many steps are undone.
    if (options_.strategy != DecodeStrategy::Beam) {
      Hypothesis& h = states_.front();
      const int keep = tree_[static_cast<size_t>(live_.front())].length + 1;
      if (gpu_) {
        own_gpu_cache(h);
        gpu_->truncate_cache(h.gpu->id, keep);
      } else {
        truncate_kv_cache(h.cache, keep);
      }
      h.next_logits = s.next_logits;
    }
  }
  if (undone > 0 && options_.strategy == DecodeStrategy::Beam) {
    states_.clear();
    for (int node : live_) states_.push_back(rebuild(node));
  }
  return undone;
}

}  // namespace sf
