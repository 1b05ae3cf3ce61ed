#include "decode/decoder.h"

#include <algorithm>
#include <cmath>

#include "transformer/forward.h"
#include "util/error.h"

namespace sf {

namespace {

// Without an exact cache, the most guessed tokens checked in one batch of passes (each over its whole prefix).
constexpr int kPrefixBatch = 6;

}  // namespace

void validate_decode_options(const DecodeOptions& options) {
  if (options.strategy == DecodeStrategy::Sample) validate_sampling(options.sampling);
  if (options.strategy == DecodeStrategy::Beam && (options.beam_width < 1 || options.beam_width > kMaxBeamWidth))
    fail(ErrorKind::Input, "Decoder", "the beam width must be from 1 to " + std::to_string(kMaxBeamWidth) + ", got " +
                                          std::to_string(options.beam_width));
  if (options.max_length < 0)
    fail(ErrorKind::Input, "Decoder", "max_length must be >= 0, got " + std::to_string(options.max_length));
}

Decoder::Decoder(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
                 const Interventions& interventions, const DecodeOptions& options, const Trace* previous_encoder)
    : config_(&config), weights_(&weights), options_(options), rng_(options.seed) {
  validate_decode_options(options);
  max_length_ = options.max_length == 0 ? config.max_positions : std::min(options.max_length, config.max_positions);
  if (!previous_encoder || !reuse_encoder(config, *previous_encoder, src_ids, interventions, encoded_))
    encode(config, weights, src_ids, interventions, encoded_);
  use_cache_ = options.use_kv_cache && kv_cache_exact(interventions);
  tree_.push_back(BeamNode{config.bos_id, -1, 0, 0.0f, 0.0f, 0.0f, false, 0});
  live_ = {0};
  // <bos> is fed on the first step (ensure_started), not here: prefill() reads its prediction from its own pass.
  Hypothesis h;
  h.cache = start_kv_cache(config, weights, encoded_);
  states_.push_back(std::move(h));
}

void Decoder::ensure_started() {
  Hypothesis& h = states_.front();
  if (h.cache.length() == 0 && !finished_) feed(h, config_->bos_id);
}

Decoder::Hypothesis Decoder::start_hypothesis() const {
  Hypothesis h;
  h.cache = start_kv_cache(*config_, *weights_, encoded_);  // without an exact cache: the cross keys/values
  feed(h, config_->bos_id);
  return h;
}

// Consumes one token: next_logits becomes the prediction after it.
void Decoder::feed(Hypothesis& h, int token) const {
  if (use_cache_) {
    h.next_logits = decode_step(*config_, *weights_, encoded_, token, h.cache);
    return;
  }
  // Every row may see every other: the whole prefix again, from an empty self-attention cache, its last row only
  // through the last layer and the output projection.
  std::vector<int> tokens = h.cache.tokens;
  tokens.push_back(token);
  truncate_kv_cache(h.cache, 0);
  h.next_logits = decode_chunk(*config_, *weights_, encoded_, tokens, h.cache, 1).row(0);
}

void Decoder::fill_cache(const Trace& t, int rows, KvCache& cache) const {
  cache.tokens.assign(t.tgt.ids.begin(), t.tgt.ids.begin() + rows);
  for (int l = 0; l < config_->n_decoder_layers; ++l) {
    const AttentionTrace& a = t.decoder[static_cast<size_t>(l)].self_attn;
    cache.keys[static_cast<size_t>(l)] = a.keys.topRows(rows);
    cache.values[static_cast<size_t>(l)] = a.values.topRows(rows);
  }
}

Decoder::Hypothesis Decoder::rebuild(int node) const {
  Hypothesis h = start_hypothesis();
  for (int token : path(node)) feed(h, token);
  return h;
}

int Decoder::forced_token(int position) const {
  const auto& forced = encoded_.interventions.forced_prefix;
  return position < static_cast<int>(forced.size()) ? forced[static_cast<size_t>(position)] : -1;
}

float Decoder::length_penalty(int length) const {
  return std::pow((5.0f + static_cast<float>(length)) / 6.0f, options_.length_penalty);
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
  std::vector<int> input = {config_->bos_id};
  const std::vector<int> tokens = generated();
  input.insert(input.end(), tokens.begin(), tokens.end());
  if (finished_ && !tokens.empty()) input.pop_back();
  return input;
}

bool Decoder::trace_kept() const {
  return finished_trace_ && finished_ && finished_trace_->tgt.ids == pass_input();
}

Trace Decoder::traced_pass(const std::vector<int>& input, OutputLayer output) const {
  Trace t = encoded_;
  t.interventions = fit_decoder_masks(encoded_.interventions, static_cast<int>(encoded_.src.ids.size()),
                                      static_cast<int>(input.size()));
  decode_pass(*config_, *weights_, input, t, output);
  return t;
}

Trace Decoder::trace() const {
  if (trace_kept()) return *finished_trace_;
  return traced_pass(pass_input(), OutputLayer::AllRows);
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
  history_.push_back(Snapshot{rng_, last_distribution_, single ? states_.front().next_logits : RowVec(), live_,
                              finished_beams_, tree_.size(), finished_});
}

bool Decoder::append_single(int token, const RowVec& logits) {
  const int parent = live_.front();
  const BeamNode& p = tree_[static_cast<size_t>(parent)];
  const float lp = log_softmax(logits)(token);
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

bool Decoder::take_if_chosen(int token) {
  const RowVec& logits = states_.front().next_logits;
  const int forced = forced_token(tree_[static_cast<size_t>(live_.front())].length);
  if ((forced >= 0 ? forced : argmax(logits)) != token) return false;
  push_history();
  last_distribution_ = softmax(logits);
  append_single(token, logits);
  return true;
}

int Decoder::prefill(const std::vector<int>& candidate) {
  if (options_.strategy != DecodeStrategy::Greedy || !use_cache_ || steps() != 0 || finished_) return 0;
  return check_in_full_pass(candidate);
}

int Decoder::check_in_full_pass(const std::vector<int>& continuation) {
  const std::vector<int> prefix = pass_input();  // <bos> + what is generated (fed or not yet)
  const int first = static_cast<int>(prefix.size());
  const int n = std::min(static_cast<int>(continuation.size()), max_length_ - (first - 1));
  if (n <= 0) return 0;
  std::vector<int> input = prefix;
  input.insert(input.end(), continuation.begin(), continuation.begin() + n);
  for (int id : input)
    if (id < 0 || id >= config_->tgt_vocab_size) return 0;  // a candidate from another vocabulary
  // A continuation that finishes (ends with <eos> or at max_length) is checked without feeding its last token:
  // then the pass is exactly the one trace() shows once decoding is finished, and is kept for it.
  const bool ends = continuation[static_cast<size_t>(n - 1)] == config_->eos_id || first - 1 + n >= max_length_;
  if (ends) input.pop_back();
  const int rows = static_cast<int>(input.size());
  // Row first - 1 + i of the logits predicts continuation[i]. The output layer (a 5,921-word vocabulary: most
  // of a row's cost) runs on the rows as the check reaches them, 4 rows first, then twice as many as so far:
  // a guess that goes wrong early (a word changed near the start) leaves the rest of the rows out; the rows
  // before first - 1 are computed only for a pass that is kept as the trace.
  Trace t = traced_pass(input, OutputLayer::Deferred);
  const int done_begin = first - 1;
  int done_end = done_begin;
  auto logits_row = [&](int row) -> RowVec {
    if (row >= done_end) {
      const int end = std::min(rows, std::max(row + 1, done_end + std::max(4, done_end - done_begin)));
      output_rows(*weights_, done_end, end, t);
      done_end = end;
    }
    return t.logits.row(row);
  };
  Hypothesis& h = states_.front();
  h.next_logits = logits_row(first - 1);  // what is generated so far need not be fed yet: the pass feeds it
  int taken = 0;
  while (taken < n && take_if_chosen(continuation[static_cast<size_t>(taken)])) {
    ++taken;
    if (finished_) break;
    h.next_logits = logits_row(first - 1 + taken);
  }
  // The cache holds what the hypothesis consumed: <bos> + the generated tokens but a finishing one (step_single
  // does not feed it), taken from the pass.
  const int consumed = first + (finished_ ? taken - 1 : taken);
  fill_cache(t, consumed, h.cache);
  if (finished_ && consumed == rows) {
    complete_output(*weights_, done_begin, done_end, t);
    finished_trace_ = std::make_shared<const Trace>(std::move(t));
  }
  return taken;
}

// The rest of the translation guessed from an earlier one (prompt-lookup decoding): where `guess` holds the last
// generated tokens (the longest match of up to 3, the occurrence nearest the current position), what follows
// them there; with no match, the guess from the current position on (a word replaced by another). `aligned`:
// the continuation starts at most one position away from where it stood in the guess (a word replaced, added
// or dropped), the likely case.
Decoder::Continuation Decoder::continuation_guess(const std::vector<int>& generated, const std::vector<int>& guess) {
  const int position = static_cast<int>(generated.size());  // of the next token
  const int size = static_cast<int>(guess.size());
  for (int n = std::min(3, position); n >= 1; --n) {
    int best = -1;  // where the continuation starts in guess
    for (int from = n; from < size; ++from) {
      if (!std::equal(generated.end() - n, generated.end(), guess.begin() + (from - n))) continue;
      if (best < 0 || std::abs(from - position) < std::abs(best - position)) best = from;
    }
    if (best >= 0) return {std::vector<int>(guess.begin() + best, guess.end()), std::abs(best - position) <= 1};
  }
  if (position < size) return {std::vector<int>(guess.begin() + position, guess.end()), true};
  return {};
}

int Decoder::take_greedy_token() {
  const int forced = forced_token(tree_[static_cast<size_t>(live_.front())].length);
  const int token = forced >= 0 ? forced : argmax(states_.front().next_logits);
  take_if_chosen(token);
  return token;
}

Decoder::Continuation Decoder::continuation_after_token(const std::vector<int>& guess, int most_aligned,
                                                        int most_weak) const {
  Continuation guessed = continuation_guess(generated(), guess);
  // A weak guess: a few tokens, not a whole pass. None that would be fed past max_length (a token that finishes
  // there is not fed: it is left to a pass of its own).
  const int room = max_length_ - tree_[static_cast<size_t>(live_.front())].length - 1;
  const int most = std::min(guessed.aligned ? most_aligned : most_weak, std::max(room, 0));
  if (static_cast<int>(guessed.tokens.size()) > most) guessed.tokens.resize(static_cast<size_t>(most));
  return guessed;
}

int Decoder::run_guided(const std::vector<int>& guess_in) {
  // A guess from another vocabulary (an earlier model's) guesses nothing.
  const bool usable = std::all_of(guess_in.begin(), guess_in.end(),
                                  [&](int id) { return id >= 0 && id < config_->tgt_vocab_size; });
  const std::vector<int>& guess = usable ? guess_in : std::vector<int>();
  if (options_.strategy != DecodeStrategy::Greedy) return run();
  const int start = steps();
  if (!use_cache_) {
    // Every step is a pass over its whole prefix. The token in hand and a few guessed after it give the next
    // steps' inputs at once: their passes run as one batch (decode_prefixes), and the guessed tokens are taken
    // up to the first that greedy decoding does not choose.
    ensure_started();
    Hypothesis& h = states_.front();
    while (!finished_) {
      const int token = take_greedy_token();
      if (finished_) break;
      const Continuation guessed = continuation_after_token(guess, kPrefixBatch, 2);
      const std::vector<int>& draft = guessed.tokens;
      std::vector<int> tokens = h.cache.tokens;  // <bos> + the path before `token`
      const int before = static_cast<int>(tokens.size());
      tokens.push_back(token);
      tokens.insert(tokens.end(), draft.begin(), draft.end());
      // The passes to run: after `token`, and after each guessed token but a finishing <eos> (never fed).
      const bool ends = !draft.empty() && draft.back() == config_->eos_id;
      int longest = static_cast<int>(tokens.size()) - (ends ? 1 : 0);
      // A likely guess that ends the translation: its last pass is the one trace() shows, so it runs traced.
      std::shared_ptr<Trace> full;
      if (ends && guessed.aligned) {
        // Only its last row's logits are needed to check the guess; the rest only if it is kept.
        full = std::make_shared<Trace>(
            traced_pass(std::vector<int>(tokens.begin(), tokens.begin() + longest), OutputLayer::Deferred));
        output_rows(*weights_, longest - 1, longest, *full);
        --longest;
      }
      std::vector<int> lengths;
      for (int n = before + 1; n <= longest; ++n) lengths.push_back(n);
      const Mat logits = decode_prefixes(*config_, *weights_, encoded_, tokens, lengths, *h.cache.cross);
      auto prediction = [&](int i) -> RowVec {  // after tokens[before + i]
        return i < static_cast<int>(lengths.size()) ? RowVec(logits.row(i)) : RowVec(full->logits.bottomRows(1));
      };
      truncate_kv_cache(h.cache, 0);  // no keys or values are kept without a cache: only the tokens fed
      h.cache.tokens.assign(tokens.begin(), tokens.begin() + before + 1);
      h.next_logits = prediction(0);
      int taken = 0;
      while (taken < static_cast<int>(draft.size()) && take_if_chosen(draft[static_cast<size_t>(taken)])) {
        ++taken;
        if (finished_) break;
        h.cache.tokens.push_back(draft[static_cast<size_t>(taken) - 1]);
        h.next_logits = prediction(taken);
      }
      if (finished_ && full && full->tgt.ids == pass_input()) {
        const int rows = static_cast<int>(full->dec_out.rows());
        complete_output(*weights_, rows - 1, rows, *full);
        finished_trace_ = std::move(full);
      }
      guessed_ += taken;
    }
    return steps() - start;
  }
  if (steps() == 0) guessed_ += prefill(guess);
  ensure_started();
  Hypothesis& h = states_.front();
  while (!finished_) {
    // The next token is known (the prediction in hand); what follows it is guessed, and both go through the
    // decoder in one pass: row 0 predicts the token after it, row i the one after draft[i - 1].
    const int token = take_greedy_token();
    if (finished_) break;
    std::vector<int> chunk = {token};
    const Continuation guessed = continuation_after_token(guess, max_length_, 3);
    const std::vector<int>& draft = guessed.tokens;
    if (guessed.aligned && !draft.empty() && draft.back() == config_->eos_id) {
      // A likely guess that runs to the end: checked in a full pass over the whole translation, which is the
      // pass trace() shows when the guess holds (then kept for it, not computed again).
      guessed_ += check_in_full_pass(draft);
      continue;
    }
    chunk.insert(chunk.end(), draft.begin(), draft.end());
    const int fed_before = h.cache.length();
    const Mat logits = decode_chunk(*config_, *weights_, encoded_, chunk, h.cache, static_cast<int>(chunk.size()));
    h.next_logits = logits.row(0);
    int taken = 0;  // of the draft
    while (taken < static_cast<int>(draft.size()) && take_if_chosen(draft[static_cast<size_t>(taken)])) {
      ++taken;
      if (finished_) break;
      h.next_logits = logits.row(taken);
    }
    guessed_ += taken;
    // Keep what the hypothesis consumed: the token and the draft's taken tokens but a finishing one (step_single
    // does not feed it).
    truncate_kv_cache(h.cache, fed_before + 1 + (finished_ ? taken - 1 : taken));
  }
  return steps() - start;
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
    last_distribution_ = sampling_distribution(h.next_logits, options_.sampling);
    if (token < 0) token = draw(last_distribution_, rng_);
  } else {
    last_distribution_ = softmax(h.next_logits);
    if (token < 0) token = argmax(h.next_logits);
  }
  if (!append_single(token, h.next_logits)) feed(h, token);
}

void Decoder::step_beam() {
  const int width = options_.beam_width;
  struct Candidate {
    int parent_slot;
    int token;
    float logprob;
    float sum;
  };
  std::vector<Candidate> candidates;
  for (size_t s = 0; s < live_.size(); ++s) {
    const BeamNode& p = tree_[static_cast<size_t>(live_[s])];
    const RowVec lp = log_softmax(states_[s].next_logits);
    const int forced = forced_token(p.length);
    if (forced >= 0) {
      candidates.push_back({static_cast<int>(s), forced, lp(forced), p.sum_logprob + lp(forced)});
      continue;
    }
    // The 2W best tokens of this hypothesis (ties towards the lower id).
    for (int id : top_k_ids(lp, 2 * width))
      candidates.push_back({static_cast<int>(s), id, lp(id), p.sum_logprob + lp(id)});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.sum > b.sum; });
  std::vector<int> new_live;
  std::vector<Hypothesis> new_states;
  for (size_t rank = 0; rank < candidates.size() && static_cast<int>(new_live.size()) < width; ++rank) {
    const Candidate& c = candidates[rank];
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
    Hypothesis h = states_[static_cast<size_t>(c.parent_slot)];
    feed(h, c.token);
    new_live.push_back(id);
    new_states.push_back(std::move(h));
  }
  live_ = std::move(new_live);
  states_ = std::move(new_states);
  if (live_.empty() || static_cast<int>(finished_beams_.size()) >= width) finished_ = true;
}

bool Decoder::step_back() {
  if (history_.empty()) return false;
  const Snapshot s = std::move(history_.back());
  history_.pop_back();
  rng_ = s.rng;
  last_distribution_ = s.last_distribution;
  live_ = s.live;
  finished_beams_ = s.finished_beams;
  tree_.resize(s.tree_size);
  finished_ = s.finished;
  // The live hypotheses' caches: greedy / sample truncate theirs (the earlier rows do not change with the causal
  // mask, and without a cache only the token list is kept); beams, whose caches were replaced, rebuild them.
  if (options_.strategy != DecodeStrategy::Beam) {
    Hypothesis& h = states_.front();
    truncate_kv_cache(h.cache, tree_[static_cast<size_t>(live_.front())].length + 1);
    h.next_logits = s.next_logits;
    return true;
  }
  states_.clear();
  for (int node : live_) states_.push_back(rebuild(node));
  return true;
}

}  // namespace sf
