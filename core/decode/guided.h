// Greedy re-decoding after an intervention, guided by an earlier translation (speculative decoding with the
// earlier translation as the draft, as prompt-lookup decoding does): most interventions change a word or two of
// a translation, so its tokens are guessed and checked many at a time instead of decoded one pass per token.
// Where the translation repeats itself more than it follows the earlier one (an intervention that breaks the
// model: "while a woman , while a woman , ..." to the length limit), its own earlier tokens are the draft.
//
//   Decoder d(config, weights, src, interventions, options);
//   GuidedRedecoder(d).run(previous_translation);   // the same tokens, tree and steps as d.run()
//
// Everything rests on one primitive, verify(draft): feed the draft's tokens after what decoding has consumed in
// one pass, and take them while each is what greedy decoding chooses (the forced token at its position, else
// the most likely), up to the first that is not. The draft's first token is always the choice of the
// prediction in hand, so every check moves decoding on. Three ways to run the pass:
//   Chunk     an exact KV cache: the draft's rows continue it, kept (record_chunk): the rows of the tokens taken,
//             chunk after chunk from the first pass, are what trace() puts the translation's traced pass together
//             from (assemble_traced_pass) instead of running it again; their output layer runs as the check
//             reaches them
//   FullPass  a traced pass over <bos> + everything + the draft, which fills the cache and, when it decodes to
//             the end, is the pass trace() shows (kept, not computed again); its output layer runs on rows as
//             the check reaches them (4, then twice as many as so far)
//   Prefixes  no exact cache (causal mask off, a painted mask that lets a query see a later key): a batch of
//             passes, one over each prefix the steps would decode (decode_prefixes); a draft that ends the
//             translation has its last pass traced and kept
// The tokens taken are ordinary steps of the Decoder (step_back undoes them one by one). A decoder whose steps
// compute on a GPU (Decoder::compute_on) checks there: Chunk and FullPass are both one CudaDecoding::chunk on a
// copy of the hypothesis' cache in GPU memory (<bos> first when nothing is fed yet), and no pass is kept for
// trace(), which computes its own.
#pragma once
#include <memory>
#include <vector>

#include "decode/decoder.h"

namespace sf {

class GuidedRedecoder {
 public:
  explicit GuidedRedecoder(Decoder& decoder) : d_(decoder) {}

  // Greedy, at the start, with an exact KV cache: takes the longest prefix of `candidate` that greedy decoding
  // chooses, checked in one traced pass over <bos> + candidate. Returns the tokens taken (0 where it does not
  // apply: another strategy, no exact cache, steps already taken, ids outside the target vocabulary). An empty
  // candidate still feeds <bos> in that pass (whose row begins the rows trace() may be put together from).
  int prefill(const std::vector<int>& candidate);
  // Greedy: decodes to the end, after prefill(guess), guessing each next stretch from `guess` (where it holds
  // the last tokens decoded, what follows them there) and checking it with verify(). Other strategies:
  // Decoder::run(). Returns the steps taken.
  int run(const std::vector<int>& guess);
  int guessed() const { return guessed_; }  // tokens taken from guesses (checked in batched passes)
  int checks() const { return verifications_; }  // verify() calls: the passes the checks ran
  int rows_fed() const { return rows_fed_; }     // the draft tokens they fed (taken or not)

  enum class Check { Chunk, FullPass, Prefixes };
  struct Verification {
    std::vector<int> tokens;  // the draft's tokens taken, from the first
    Mat predictions;        // (taken, Vt) row i: the logits tokens[i] was chosen from
    RowVec next;            // the prediction after the accepted tokens (empty when they finished decoding)
    KvCache cache;          // what the hypothesis has consumed after them (a finishing token is never fed);
                            // unused for a Chunk check on the CPU (extends_cache)
    // A Chunk check on the CPU writes its rows into the hypothesis' own cache past its end instead of into a copy
    // (at 200 tokens a copy is a megabyte, made every few tokens): the cache holds what it held, and take() makes
    // the rows of the tokens taken its own. Only the latest verification can be taken then (a later check writes
    // over the same rows); take() refuses an earlier one.
    bool extends_cache = false;
    int serial = 0;  // which verify() of this redecoder made it
    std::shared_ptr<Decoder::GpuCache> gpu;  // on the GPU: that cache there (cache unused)
    std::shared_ptr<const Trace> trace;  // the traced pass that trace() shows, when the check kept one
    // The check's rows of the tokens the hypothesis consumed with it, with their logits (on the CPU with a
    // cache): a piece of the traced pass that trace() puts together (Decoder::trace_assembled; pass null: none).
    RecordedRows rows;
  };
  // The primitive: checks `draft` after what the decoder's greedy hypothesis has consumed, changing nothing it
  // holds (a Chunk check writes the cache's rows past its end: see extends_cache).
  Verification verify(const std::vector<int>& draft, Check how, bool traced_last = false) const;
  // Takes a verification's tokens as steps of the decoder, with its cache and prediction.
  void take(Verification v);

 private:
  struct Continuation {  // what a guess says follows the tokens generated
    std::vector<int> tokens;
    bool aligned = false;  // it starts at most one position from where it stood in the guess: likely right
    int matched = 0;       // the last tokens generated it was found after (0: none, the guess from the position)
  };
  static Continuation continuation_guess(const std::vector<int>& generated, const std::vector<int>& guess);
  // The translation guessed from itself, token after token: what most often followed the last tokens generated
  // (3, else 2) where they occurred before, for up to `length` tokens. A model that loops ("while a woman ,
  // while a woman , ..."), as one often does after an intervention that breaks it, is then checked a stretch at
  // a time instead of one pass per token, and a loop that varies by its commonest turn.
  static Continuation repetition_guess(const std::vector<int>& generated, int length);

  Decoder& d_;
  int guessed_ = 0;
  mutable int verifications_ = 0;  // verify() calls so far: the serial of the latest
  mutable int rows_fed_ = 0;
};

}  // namespace sf
