#include "decode/guided.h"

#include <algorithm>
#include <functional>

#include "decode/kv_cache.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {

namespace {

// Without an exact cache, the most guessed tokens checked in one batch of passes (each over its whole prefix).
constexpr int kPrefixBatch = 6;
// With one, the most tokens a translation's guess from itself (repetition_guess) checks in one chunk. Short: a
// looping translation varies its loop, and a row fed past the first wrong guess costs as much as one taken.
constexpr int kRepetitionDraft = 4;

// The token that most often followed the last n tokens of `seq` where they occurred before it (of tokens seen
// equally often, the latest), or -1 where they did not occur.
int commonest_next(const std::vector<int>& seq, int n) {
  std::vector<std::pair<int, int>> seen;  // (token, times), in order of first sight
  int most = 0, pick = -1;
  for (size_t end = static_cast<size_t>(n); end < seq.size(); ++end) {
    if (!std::equal(seq.end() - n, seq.end(), seq.begin() + static_cast<std::ptrdiff_t>(end) - n)) continue;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return e.first == seq[end]; });
    if (it == seen.end()) it = seen.insert(seen.end(), {seq[end], 0});
    if (++it->second >= most) {  // >=: the later of two as common (end rises)
      most = it->second;
      pick = seq[end];
    }
  }
  return pick;
}

}  // namespace

GuidedRedecoder::Verification GuidedRedecoder::verify(const std::vector<int>& draft_in, Check how,
                                                      bool traced_last) const {
  const Decoder& d = d_;
  const Config& config = *d.config_;
  const ModelWeights& weights = *d.weights_;
  if (d.options_.strategy != DecodeStrategy::Greedy || d.finished_ || d.live_.size() != 1)
    fail(ErrorKind::Input, "GuidedRedecoder::verify", "only a greedy decoder that has not finished is checked");
  const Decoder::Hypothesis& h = d.states_.front();
  const int generated = d.tree_[static_cast<size_t>(d.live_.front())].length;  // tokens decoded so far
  const bool in_hand = d.fed(h) > 0;  // a prediction after what is consumed (<bos> fed)
  const bool gpu = d.on_gpu();
  if ((how != Check::FullPass && !in_hand) || (how != Check::Prefixes && !d.use_cache_))
    fail(ErrorKind::Input, "GuidedRedecoder::verify", "this check does not apply to the decoder's state");
  // No token is fed past max_length; a token that finishes decoding (<eos>, or the last one max_length allows)
  // is checked but never fed.
  const int n = std::min(static_cast<int>(draft_in.size()), d.max_length_ - generated);
  const std::vector<int> draft(draft_in.begin(), draft_in.begin() + std::max(n, 0));
  auto finishes = [&](int i) { return draft[static_cast<size_t>(i)] == config.eos_id || generated + i + 1 >= d.max_length_; };
  const int fed = n > 0 && finishes(n - 1) ? n - 1 : n;  // draft tokens the pass feeds

  Verification v;
  v.serial = ++verifications_;
  rows_fed_ += fed;
  if (how == Check::Prefixes) v.cache.tokens = h.cache.tokens;  // without an exact cache: only its tokens
  // prediction(i): the logits before draft[i] (i = 0: after what is consumed), from whichever pass runs.
  std::function<RowVec(int)> prediction;
  std::shared_ptr<Trace> full;   // a traced pass that may become trace()'s
  std::shared_ptr<Trace> chunk;  // a chunk's rows, kept (Record::Rows)
  int done_begin = 0, done_end = 0;  // rows of `full` or `chunk` through the output layer so far
  // The logits of row `row` of `pass` (of `rows` rows), whose output layer (most of a row's cost for a large
  // vocabulary) runs on rows as the check reaches them, 4 first, then twice as many as so far: a guess that goes
  // wrong early leaves the rest out. A rest of at most half a batch joins it (a chunk of 5 or 6 rows runs its
  // output layer once: one more call for one row cost more than the row).
  auto output_row = [&](Trace& pass, int rows, int row) -> RowVec {
    if (row >= done_end) {
      const int batch = std::max(4, done_end - done_begin);
      int end = std::min(rows, std::max(row + 1, done_end + batch));
      if (rows - end <= batch / 2) end = rows;
      output_rows(weights, done_end, end, pass);
      done_end = end;
    }
    return pass.logits.row(row);
  };
  const int consumed_count = d.fed(h);
  if (gpu) {
    // One chunk continuing a copy of the hypothesis' cache in GPU memory: the draft's tokens, after <bos> when
    // nothing is fed yet (then row i of the logits predicts draft[i], else row i - 1 does, draft[0] being
    // predicted by the prediction in hand).
    v.gpu = d.copy_gpu_cache(h);
    // (reserved and pushed: GCC 12 sees an insert after an empty vector as a copy out of bounds, -Warray-bounds)
    std::vector<int> rows;
    rows.reserve(static_cast<size_t>(fed) + 1);
    if (!in_hand) rows.push_back(config.bos_id);
    for (int i = 0; i < fed; ++i) rows.push_back(draft[static_cast<size_t>(i)]);
    const Mat logits = d.gpu_chunk(*v.gpu, rows);
    prediction = [&, logits](int i) -> RowVec {
      if (in_hand) return i == 0 ? h.next_logits : RowVec(logits.row(i - 1));
      return logits.row(i);
    };
  } else if (how == Check::Chunk) {
    // The draft's rows continue the cache in one pass that keeps them: the rows taken are a piece of the traced
    // pass trace() puts together (Decoder::trace_assembled). Row i - 1 predicts draft[i]. The keys and values go
    // into the hypothesis' own cache past its end, and its length is put back right after (extends_cache).
    v.extends_cache = true;
    if (fed > 0) {
      chunk = std::make_shared<Trace>();
      KvCache& own = d_.states_.front().cache;
      try {
        record_chunk(config, weights, d.encoded_, std::vector<int>(draft.begin(), draft.begin() + fed), own, *chunk);
      } catch (...) {
        truncate_kv_cache(own, consumed_count);
        throw;
      }
      truncate_kv_cache(own, consumed_count);
    }
    prediction = [&](int i) -> RowVec { return i == 0 ? h.next_logits : output_row(*chunk, fed, i - 1); };
  } else if (how == Check::FullPass) {
    // <bos> + what is decoded + the draft, one traced pass that fills an empty cache, its output layer run on
    // rows as the check reaches them (output_row); rows before the check's only for a kept pass.
    std::vector<int> input = d.start_tokens();
    const std::vector<int> so_far = d.generated();
    input.insert(input.end(), so_far.begin(), so_far.end());
    const int first = static_cast<int>(input.size());  // row first - 1 + i predicts draft[i]
    input.insert(input.end(), draft.begin(), draft.begin() + fed);
    v.cache = empty_kv_cache(config);
    v.cache.cross = d.cross_;
    full = std::make_shared<Trace>(d.traced_pass(input, OutputLayer::Deferred, &v.cache));
    done_begin = done_end = in_hand ? first : first - 1;
    const int rows = static_cast<int>(input.size());
    prediction = [&, first, rows](int i) -> RowVec {
      if (i == 0 && in_hand) return h.next_logits;
      return output_row(*full, rows, first - 1 + i);
    };
  } else {
    // A pass over each prefix the steps would decode, all in one batch; a draft that ends the translation (a
    // likely guess) has its last pass traced: it is the one trace() shows.
    std::vector<int> tokens = h.cache.tokens;  // what is consumed, then the draft's tokens
    const int consumed = static_cast<int>(tokens.size());
    tokens.insert(tokens.end(), draft.begin(), draft.begin() + fed);
    int longest = static_cast<int>(tokens.size());
    if (traced_last && fed < n && fed > 0) {
      full = std::make_shared<Trace>(
          d.traced_pass(std::vector<int>(tokens.begin(), tokens.begin() + longest), OutputLayer::Deferred));
      output_rows(weights, longest - 1, longest, *full);
      done_begin = longest - 1;
      done_end = longest;
      --longest;
    }
    std::vector<int> lengths;
    for (int len = consumed + 1; len <= longest; ++len) lengths.push_back(len);
    const Mat logits = decode_prefixes(config, weights, d.encoded_, tokens, lengths, *d.cross_);
    const int batched = static_cast<int>(lengths.size());
    prediction = [&, logits, batched](int i) -> RowVec {
      if (i == 0) return h.next_logits;
      return i - 1 < batched ? RowVec(logits.row(i - 1)) : RowVec(full->logits.bottomRows(1));
    };
  }

  // The one accept loop: draft[i] is taken while it is greedy decoding's choice from prediction(i).
  std::vector<RowVec> rows;
  bool finished = false;
  while (static_cast<int>(v.tokens.size()) < n) {
    const int i = static_cast<int>(v.tokens.size());
    RowVec p = prediction(i);
    const int forced = d.forced_token(generated + i);
    if ((forced >= 0 ? forced : d.greedy_token(p, generated + i)) != draft[static_cast<size_t>(i)]) {
      v.next = std::move(p);
      break;
    }
    v.tokens.push_back(draft[static_cast<size_t>(i)]);
    rows.push_back(std::move(p));
    if (finishes(i)) {
      finished = true;
      break;
    }
  }
  if (!finished && static_cast<int>(v.tokens.size()) == n) v.next = prediction(n);
  v.predictions.resize(static_cast<Eigen::Index>(rows.size()), config.tgt_vocab_size);
  for (size_t i = 0; i < rows.size(); ++i) v.predictions.row(static_cast<Eigen::Index>(i)) = rows[i];

  // What the hypothesis has consumed: what it had and the tokens taken, but a finishing one.
  const int taken_fed = static_cast<int>(v.tokens.size()) - (finished ? 1 : 0);
  const int consumed_after =
      (gpu ? (in_hand ? consumed_count : 1) : how == Check::FullPass ? 1 + generated : consumed_count) + taken_fed;
  if (gpu) {
    d.truncate_gpu_cache(*v.gpu, consumed_after);
  } else if (how == Check::Prefixes) {  // without an exact cache only the tokens are kept
    v.cache.tokens.insert(v.cache.tokens.end(), v.tokens.begin(), v.tokens.begin() + taken_fed);
  } else if (how == Check::FullPass) {
    truncate_kv_cache(v.cache, consumed_after);
  }
  // A traced pass over exactly the finished translation's last input is the pass trace() shows.
  if (finished && full && static_cast<int>(full->tgt.ids.size()) == consumed_after) {
    complete_output(weights, done_begin, done_end, *full);
    v.trace = std::move(full);
    return v;
  }
  // Else, with an exact cache, the pass's rows of what the hypothesis consumed with the tokens taken (positions
  // consumed_count .. consumed_after; a chunk's row 0 is position consumed_count, a full pass's position 0),
  // with their logits: a piece of the traced pass to come. (Without one, a row of a shorter pass is not the
  // longer pass's row.)
  const std::shared_ptr<Trace>& kept = chunk ? chunk : full;
  const int first_position = chunk ? consumed_count : 0;
  const int begin = consumed_count - first_position, end = consumed_after - first_position;
  if (kept && how != Check::Prefixes && end > begin) {
    if (end > done_end) output_rows(weights, std::max(done_end, begin), end, *kept);
    if (begin < done_begin) output_rows(weights, begin, std::min(done_begin, end), *kept);
    v.rows = {kept, first_position, begin, end};
  }
  return v;
}

void GuidedRedecoder::take(Verification v) {
  if (v.extends_cache && v.serial != verifications_)
    fail(ErrorKind::Input, "GuidedRedecoder::take", "a later check has written over this check's rows of the cache");
  for (size_t i = 0; i < v.tokens.size(); ++i)
    d_.take_greedy(v.tokens[i], v.predictions.row(static_cast<Eigen::Index>(i)));
  Decoder::Hypothesis& h = d_.states_.front();
  if (v.gpu)  // its cache in GPU memory (h.cache is unused there)
    h.gpu = std::move(v.gpu);
  else if (v.extends_cache)  // the rows of the tokens it consumed (a finishing one is never fed) are past its end
    h.cache.tokens.insert(h.cache.tokens.end(), v.tokens.begin(), v.tokens.end() - (d_.finished_ ? 1 : 0));
  else
    h.cache = std::move(v.cache);
  if (!d_.finished_) h.next_logits = std::move(v.next);
  if (v.trace) d_.finished_trace_ = std::move(v.trace);
  // The rows recorded stay those of the consumed tokens from position 0 while every check adds its own; a check
  // without rows (on a GPU, without a cache) or a token fed by a step ends them for this decoding.
  std::vector<RecordedRows>& rows = d_.recorded_rows_;
  auto recorded = [&] { return rows.empty() ? 0 : rows.back().first_position + rows.back().end; };
  if (v.rows.pass && v.rows.first_position + v.rows.begin == recorded()) rows.push_back(std::move(v.rows));
  if (recorded() != d_.fed(h)) rows.clear();
}

int GuidedRedecoder::prefill(const std::vector<int>& candidate) {
  Decoder& d = d_;
  // (An empty candidate still feeds <bos> in a traced pass: its row begins the rows trace() is put together from.)
  if (d.options_.strategy != DecodeStrategy::Greedy || !d.use_cache_ || d.steps() != 0 || d.finished_) return 0;
  for (int id : candidate)
    if (id < 0 || id >= d.config_->tgt_vocab_size) return 0;  // a candidate from another vocabulary
  Verification v = verify(candidate, Check::FullPass);
  const int taken = static_cast<int>(v.tokens.size());
  take(std::move(v));
  return taken;
}

// The rest of the translation guessed from an earlier one (prompt-lookup decoding): where `guess` holds the last
// generated tokens (the longest match of up to 3, the occurrence nearest the current position), what follows
// them there; with no match, the guess from the current position on (a word replaced by another). `aligned`:
// the continuation starts at most one position away from where it stood in the guess (a word replaced, added
// or dropped), the likely case.
GuidedRedecoder::Continuation GuidedRedecoder::continuation_guess(const std::vector<int>& generated,
                                                                  const std::vector<int>& guess) {
  const int position = static_cast<int>(generated.size());  // of the next token
  const int size = static_cast<int>(guess.size());
  for (int n = std::min(3, position); n >= 1; --n) {
    int best = -1;  // where the continuation starts in guess
    for (int from = n; from < size; ++from) {
      if (!std::equal(generated.end() - n, generated.end(), guess.begin() + (from - n))) continue;
      if (best < 0 || std::abs(from - position) < std::abs(best - position)) best = from;
    }
    if (best >= 0) return {std::vector<int>(guess.begin() + best, guess.end()), std::abs(best - position) <= 1, n};
  }
  if (position < size) return {std::vector<int>(guess.begin() + position, guess.end()), true, 0};
  return {};
}

// Token after token: the token that most often followed the last 3 (else 2) tokens where they occurred before
// (commonest_next), appended, and again from there. Not from one token alone: a word that recurs ("a", ",")
// says little about what follows it. A loop that varies ("a b c a b c a b d a b c") is guessed by its commonest
// turn, which a copy of the latest period would not.
GuidedRedecoder::Continuation GuidedRedecoder::repetition_guess(const std::vector<int>& generated, int length) {
  Continuation c;
  std::vector<int> seq = generated;
  for (int i = 0; i < length; ++i) {
    int pick = -1, context = std::min(3, static_cast<int>(seq.size()) - 1);
    while (context >= 2 && (pick = commonest_next(seq, context)) < 0) --context;
    if (pick < 0) break;
    if (i == 0) c.matched = context;
    c.tokens.push_back(pick);
    seq.push_back(pick);
  }
  c.aligned = !c.tokens.empty();
  return c;
}

int GuidedRedecoder::run(const std::vector<int>& guess_in) {
  Decoder& d = d_;
  if (d.options_.strategy != DecodeStrategy::Greedy) return d.run();
  // A guess from another vocabulary (an earlier model's) guesses nothing.
  const bool usable = std::all_of(guess_in.begin(), guess_in.end(),
                                  [&](int id) { return id >= 0 && id < d.config_->tgt_vocab_size; });
  const std::vector<int> guess = usable ? guess_in : std::vector<int>();
  const int start = d.steps();
  if (start == 0) guessed_ += prefill(guess);
  d.ensure_started();
  int misses = 0;  // checks in a row that took nothing of their guess: the translation has left the guess
  while (!d.finished_) {
    // The next token is greedy decoding's choice from the prediction in hand; what follows it is guessed, and
    // the two are checked together.
    const RowVec in_hand = d.states_.front().next_logits;
    const int generated = d.tree_[static_cast<size_t>(d.live_.front())].length;
    const int forced = d.forced_token(generated);
    const int token = forced >= 0 ? forced : d.greedy_token(in_hand, generated);
    if (token == d.config_->eos_id || generated + 1 >= d.max_length_) {  // it ends decoding: nothing to check
      d.take_greedy(token, in_hand);
      break;
    }
    std::vector<int> so_far = d.generated();
    so_far.push_back(token);
    Continuation guessed = continuation_guess(so_far, guess);
    // Where the earlier translation matches less of what was just generated than the translation's own past
    // does, the model is repeating itself: that is the better guess.
    Continuation repeated = repetition_guess(so_far, d.use_cache_ ? kRepetitionDraft : kPrefixBatch);
    const bool from_itself =
        repeated.matched > guessed.matched || (repeated.matched > 0 && repeated.matched == guessed.matched && !guessed.aligned);
    if (from_itself) guessed = std::move(repeated);
    // A likely guess is checked whole (with a cache); a weak one a few tokens at a time; none is fed past
    // max_length (a token that finishes there is left to a pass of its own).
    const int room = std::max(d.max_length_ - (generated + 1) - 1, 0);
    // After a miss the earlier translation is checked a few tokens at a time too, until a guess holds again: a
    // translation that has left it (positions off: hardly a word in common) would otherwise pay a pass over its
    // whole rest, or a full traced pass, for every token it decodes. Three tokens after one miss (a word
    // replaced: the guess holds again a word later), one fewer after each further miss, down to one: a row fed
    // past a wrong guess costs as much as one taken. (A guess from itself is short anyway.)
    const bool likely = guessed.aligned && (misses == 0 || from_itself);
    const int weak = std::max(1, (d.use_cache_ ? 4 : 3) - misses);
    const int most = std::min(likely ? (d.use_cache_ ? d.max_length_ : kPrefixBatch) : weak, room);
    if (static_cast<int>(guessed.tokens.size()) > most) guessed.tokens.resize(static_cast<size_t>(most));
    std::vector<int> draft = {token};
    draft.insert(draft.end(), guessed.tokens.begin(), guessed.tokens.end());
    // A likely guess that runs to the end: with a cache, checked in a full traced pass over the whole
    // translation, the pass trace() shows when the guess holds.
    const bool to_the_end = likely && !guessed.tokens.empty() && guessed.tokens.back() == d.config_->eos_id;
    const Check how = !d.use_cache_ ? Check::Prefixes : to_the_end ? Check::FullPass : Check::Chunk;
    Verification v = verify(draft, how, to_the_end);
    guessed_ += static_cast<int>(v.tokens.size()) - 1;  // the first was not a guess
    misses = draft.size() > 1 && v.tokens.size() <= 1 ? misses + 1 : 0;
    take(std::move(v));
  }
  return d.steps() - start;
}

}  // namespace sf
