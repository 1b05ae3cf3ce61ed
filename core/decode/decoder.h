// Decoding as a step API: a state machine over passes of the decoder, with one step forward and one back.
//
//   Decoder d(config, weights, src_ids, interventions, options);
//   while (d.step()) {}              // or step by step, with d.step_back() to undo
//   d.generated();                   // the output tokens (eos included when produced)
//   d.trace();                       // the full trace of the pass that chose the last token
//
// Strategies:
//   greedy  the most likely token (lowest id on ties)
//   sample  softmax(logits / temperature) cut to top-k and top-p, drawn from a generator seeded by `seed`;
//           stepping back restores the generator, so stepping forward again draws the same token
//   beam    width W: every live hypothesis proposes its 2W best tokens, the W best continuations by summed
//           log-probability stay alive; an eos among the best W finishes its hypothesis with the score
//           sum_logprob / ((5 + length) / 6)^alpha (GNMT length penalty, alpha = length_penalty). Decoding
//           stops when W hypotheses have finished, none is alive, or max_length is reached. Every hypothesis
//           that was ever alive is a node of tree(); width 1 is greedy.
// Interventions apply to every pass (decoder-side custom masks fitted to each prefix: fit_decoder_masks);
// forced_prefix forces the first generated tokens (teacher forcing).
// With a KV cache (use_kv_cache and kv_cache_exact(config, interventions)) each step costs one row of the decoder;
// otherwise each step recomputes the decoder on the whole prefix. Both give the same tokens.
// Re-decoding a sentence after an intervention, guessing from an earlier translation, is GuidedRedecoder's
// (decode/guided.h): it takes greedy steps into this decoder, which step_back undoes as any other.
// compute_on(gpu) moves the steps to a GPU (the KV caches in GPU memory: backend/cuda_model.h CudaDecoding); the
// strategies, the tree, step_back and the guided re-decoding are the same code on either device, and trace() is
// the GPU's traced pass.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decode/kv_cache.h"
#include "decode/sampling.h"
#include "model/config.h"
#include "model/weights.h"
#include "transformer/forward.h"  // OutputLayer
#include "transformer/interventions.h"
#include "transformer/trace.h"

namespace sf {

class CudaModel;
class CudaDecoding;

enum class DecodeStrategy { Greedy, Sample, Beam };

// How a beam search scores and ends (both keep, at each step, the W best continuations by summed log-probability):
//   Gnmt         a hypothesis that ends scores sum / ((5 + length) / 6)^alpha; decoding stops once W have ended
//                (our models' default)
//   HuggingFace  transformers' beam search (generate() with num_beams, early_stopping False; Marian models):
//                an ending hypothesis scores sum / length^alpha (length: generated tokens, </s> included);
//                the W best endings are kept, a better one replacing the worst; decoding stops when the best
//                open hypothesis, scored at its length, cannot beat the worst of W endings, or at max_length
enum class BeamScoring { Gnmt, HuggingFace };

// The widest beam a decoder accepts: each hypothesis is a row of every step's decoder pass and a KV cache of its
// own, so a width of thousands would freeze the app for minutes and take gigabytes; 64 is far past where BLEU
// stops improving.
inline constexpr int kMaxBeamWidth = 64;
// The widest beam without the KV cache (the causal mask off, or a painted mask that lets a query see a later
// key): then every position's vector depends on the tokens after it, so each step recomputes every hypothesis'
// whole prefix, O(width x length^2) decoder rows for a translation: a beam of 64 on a long sentence ran for
// minutes. Eight keeps it to seconds.
inline constexpr int kMaxBeamWidthWithoutCache = 8;

struct DecodeOptions {
  DecodeStrategy strategy = DecodeStrategy::Greedy;
  int max_length = 0;            // most generated tokens (eos included); 0 or more than fits: config.max_positions
  SamplingOptions sampling;      // strategy Sample
  uint64_t seed = 0;             // strategy Sample
  int beam_width = 4;            // strategy Beam: 1 to kMaxBeamWidth
  float length_penalty = 0.6f;   // strategy Beam: alpha
  bool use_kv_cache = true;
  // Ids no strategy ever picks (Hugging Face's bad_words_ids of one token; Marian's <pad>, its decoder start):
  // their log-probabilities count as -inf, as NoBadWordsLogitsProcessor sets them. The distribution shown for
  // a greedy or sampled step is then over the other tokens.
  std::vector<int> never_generate;
  BeamScoring beam_scoring = BeamScoring::Gnmt;
  // Hugging Face's renormalize_logits: the log-probabilities are renormalised over the tokens left after
  // never_generate (and the forced </s>), as the log-softmax it applies after its logits processors.
  bool renormalize = false;
  // Hugging Face's forced_eos_token_id: the last token max_length allows is </s>, with log-probability 0.
  bool force_eos_at_max_length = false;
};

struct GenerationDefaults;  // model/model.h
// The rules a model's authors decode by, whatever the strategy (Hugging Face's generation config: bad_words_ids,
// renormalize_logits, forced_eos_token_id, beams scored as transformers does). Leaves `options` as they are for a
// model that says nothing (our own).
void apply_generation_rules(const GenerationDefaults& generation, DecodeOptions& options);
// The rules, and the choices too: num_beams (beam search when above 1), length_penalty, max_length (Hugging
// Face's counts the start token). What the CLI's translate does unless told otherwise.
void apply_generation_defaults(const GenerationDefaults& generation, DecodeOptions& options);

// Why a decoder with these inputs cannot compute on a GPU (Decoder::compute_on refuses it), in words for the
// user; empty where it can: its steps need an exact KV cache (the causal mask on, the cache not switched off) and
// no painted mask (the GPU's caches take none).
std::string why_decoding_stays_on_the_cpu(const Config& config, const Interventions& interventions,
                                          const DecodeOptions& options);

// A decoder-only model's input for `prompt`: <bos> then the prompt where config.starts_with_bos (our own GPT), else
// the prompt as it is (GPT-2), or <bos> alone for an empty prompt (nothing to read: the model starts from
// <|endoftext|>, as Hugging Face's generate does).
std::vector<int> decoder_only_input(const Config& config, const std::vector<int>& prompt);

// Throws ErrorKind::Input for options a Decoder refuses (a beam width outside 1..kMaxBeamWidth, sampling
// parameters out of range, a negative max_length): what the constructor checks first, for callers that check
// before handing the work to another thread.
void validate_decode_options(const DecodeOptions& options);
// The same, and the beam width a decoder takes with these interventions (kMaxBeamWidthWithoutCache where they
// or the model make the KV cache inexact, or options.use_kv_cache is off).
void validate_decode_options(const Config& config, const DecodeOptions& options, const Interventions& interventions);

struct BeamNode {
  int token = 0;             // the token this node appends (bos for the root)
  int parent = -1;           // node index; -1 for the root
  int length = 0;            // generated tokens up to and including this one
  float logprob = 0.0f;      // log p(token | the parent's prefix)
  float sum_logprob = 0.0f;  // summed over the path
  float score = 0.0f;        // sum_logprob / ((5 + length) / 6)^alpha
  bool finished = false;     // ended with eos or at max_length
  int step = 0;              // the step that created it (0 for the root)
};

// The decoder keeps references to `config` and `weights` (immutable, shared): they must outlive it. Its own run
// state (encoder trace, caches, tree, history) is copied with it.
class Decoder {
 public:
  // Runs the encoder, or takes it from `previous_encoder` (an encoder pass of the same model, e.g. another
  // decoder's encoder_pass()) where its source is the same and the interventions change nothing before the
  // decoder (reuse_encoder): then it is shared, not copied. Throws ErrorKind::Input for bad ids, interventions or
  // options. A decoder-only model (config.stacks) has no encoder: src_ids is then the prompt, which every pass reads as
  // decoder_only_input (start_tokens()), and max_length is cut to the positions the prompt leaves; an encoder-only
  // model does not generate (ErrorKind::Input).
  Decoder(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
          const Interventions& interventions = {}, const DecodeOptions& options = {},
          std::shared_ptr<const Trace> previous_encoder = nullptr);
  // The same, copying the encoder pass of `previous_encoder` where it can be reused.
  Decoder(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
          const Interventions& interventions, const DecodeOptions& options, const Trace* previous_encoder);

  bool step();       // one token (beam: one token on every live hypothesis); false when already finished
  // Whether trace() returns a pass that decoding already ran (GuidedRedecoder's check of a guess that ran to the
  // end, kept), rather than one of its own.
  bool trace_kept() const;
  // Whether trace() puts its pass together from the rows GuidedRedecoder's checks computed (chunks through the
  // KV cache, recorded: assemble_traced_pass) rather than running it: they begin with pass_input()'s (after
  // stepping back too).
  bool trace_assembled() const;
  bool step_back();  // undoes the last step; false at the start
  // Undoes up to `count` steps (a beam's hypotheses are rebuilt once, at the end); returns how many were undone.
  int step_back(int count);
  int run();         // steps until finished; returns the number of steps taken
  bool finished() const { return finished_; }
  int steps() const { return static_cast<int>(history_.size()); }

  // The best hypothesis: generated tokens, no bos (and no prompt), eos included when produced.
  std::vector<int> generated() const;
  // What every hypothesis starts from: <bos>, and a decoder-only model's prompt after it.
  const std::vector<int>& start_tokens() const { return start_tokens_; }
  // The decoder input of the pass that chooses the next token (start_tokens() + generated), or, once finished,
  // of the pass that chose the last token (start_tokens() + generated without its last token).
  std::vector<int> pass_input() const;
  // The full trace of pass_input() (the encoder half is reused, the decoder half recomputed, or put together
  // from the rows guided re-decoding computed: GuidedRedecoder).
  Trace trace() const;
  // The encoder pass (its trace's encoder half; its interventions may differ from this decoder's on the decoder
  // side, where it was shared), for another decoder of the same source to share.
  const Trace& encoded() const { return *encoder_; }
  const std::shared_ptr<const Trace>& encoder_pass() const { return encoder_; }

  // Greedy / sample: the distribution the last token was drawn from (1, Vt) (greedy: the softmax); empty before
  // the first step and for beam search. Computed when asked, from the prediction the last step kept for step_back.
  RowVec last_distribution() const;
  // The logits each generated token of the best hypothesis was chosen from (generated().size(), Vt): row i is the
  // prediction of the pass over <bos> + its first i tokens, as the step that chose token i (or took it forced)
  // computed it. Greedy and sampling kept those for step_back; a beam keeps only each node's log-probability, so
  // its rows are computed here, one pass per prefix (decode_prefixes). Row i of trace() is the same distribution
  // only while the KV cache is exact (kv_cache_exact): with the causal mask off it also read the tokens after i.
  Mat chosen_logits() const;

  const std::vector<BeamNode>& tree() const { return tree_; }
  const std::vector<int>& live_beams() const { return live_; }          // node ids, best first
  const std::vector<int>& finished_beams() const { return finished_beams_; }  // node ids, in finishing order
  int best_node() const;                                                // the best hypothesis' node
  std::vector<int> path(int node) const;                                // tokens root..node, no bos

  const DecodeOptions& options() const { return options_; }
  const Interventions& interventions() const { return encoded_.interventions; }  // this decoder's (its passes')
  bool uses_kv_cache() const { return use_cache_; }

  // Computes every step from here on on `gpu` (which must outlive this decoder and its copies): its encoder pass
  // there, each step one pass of the live hypotheses over their caches in GPU memory. Before the first step only
  // (ErrorKind::Input after). ErrorKind::Unsupported where the GPU cannot take them (no exact KV cache, a painted
  // mask, a CUDA failure): the decoder stays on the CPU, unchanged. A CUDA failure in a later step throws
  // Unsupported from step() or trace(), and the decoder is then to be dropped (the CLI decodes again on the CPU).
  // trace() is then the GPU's traced forward over pass_input(), copied back once (the same tensors as the CPU's
  // within float rounding; tests/cuda); the encoder pass (encoded()) the constructor made stays the CPU's.
  void compute_on(CudaModel& gpu);
  // The same, the decoder (and its copies) keeping `gpu` alive: for decoders handed between threads (the app's).
  void compute_on(std::shared_ptr<CudaModel> gpu);
  bool on_gpu() const { return gpu_ != nullptr; }

 private:
  friend class GuidedRedecoder;  // takes greedy steps and the state its checks computed (decode/guided.h)
  struct GpuCache;     // a cache in GPU memory (decoder.cpp), released with the last hypothesis sharing it
  struct Hypothesis {  // a live beam (greedy and sample use one)
    KvCache cache;     // has consumed bos + the path (without an exact cache: only its tokens); unused on the GPU
    std::shared_ptr<GpuCache> gpu;  // on the GPU: the cache there, shared by copies until one of them changes
    RowVec next_logits;
  };
  struct Snapshot {    // what step_back restores
    Rng rng;
    RowVec next_logits;  // greedy / sample: the live hypothesis' prediction before the step
    std::vector<int> live, finished_beams;
    size_t tree_size = 0;
    bool finished = false;
  };

  void start(const Interventions& interventions);  // the rest of construction, once the encoder pass is there
  // A decoder-only model's construction (no encoder pass; `prompt` after <bos>); false for a model with an encoder.
  bool start_without_encoder(const std::vector<int>& prompt, const Interventions& interventions);
  Hypothesis start_hypothesis() const;
  int fed(const Hypothesis& h) const;  // the tokens its cache has consumed
  std::shared_ptr<GpuCache> gpu_cache(int id) const;
  void own_gpu_cache(Hypothesis& h) const;  // before a change: a cache of its own where copies share it
  // GuidedRedecoder's checks on the GPU: a copy of h's cache there, continued by `tokens` in one pass (its logits,
  // (k, Vt)), then cut back to `length` rows.
  std::shared_ptr<GpuCache> copy_gpu_cache(const Hypothesis& h) const;
  Mat gpu_chunk(const GpuCache& cache, const std::vector<int>& tokens) const;
  void truncate_gpu_cache(const GpuCache& cache, int length) const;
  void feed(Hypothesis& h, int token) const;
  void feed(Hypothesis& h, std::span<const int> tokens) const;
  // A beam's step: hypothesis i gets tokens[i]; with the cache, one decoder pass for all (decode_steps).
  void feed_each(std::vector<Hypothesis>& hypotheses, const std::vector<int>& tokens) const;
  // The states of the next step's hypotheses, the child of parent slot parent_slots[i] taking tokens[i]: each
  // parent's state goes to its last child by move and is copied for the others (a cache holds the whole prefix).
  // Empties states_.
  std::vector<Hypothesis> continue_hypotheses(const std::vector<int>& parent_slots, const std::vector<int>& tokens);
  Hypothesis rebuild(int node) const;
  void step_single();
  // The decoder's traced pass over `input` (<bos> + tokens) on the encoder pass, painted masks fitted to it;
  // its output layer on every row (OutputLayer::AllRows) or none yet. `fill`: an empty cache it fills. The
  // trace holds the decoder half only (with_encoder completes it).
  Trace traced_pass(const std::vector<int>& input, OutputLayer output, KvCache* fill = nullptr) const;
  Trace with_encoder(Trace decoder_half) const;
  // The recorded rows of `input` (recorded_rows_ cut to its length), or none where they do not begin with it.
  std::vector<RecordedRows> recorded_rows_of(const std::vector<int>& input) const;
  void ensure_started();  // feeds <bos> to the hypothesis if nothing was fed yet
  void push_history();                             // what step_back restores, before a step
  bool append_single(int token, const RowVec& logits);  // greedy / sample: the tree node; true if it finished
  // Greedy: a step taking `token`, chosen from `prediction` (the logits before it; not fed).
  void take_greedy(int token, const RowVec& prediction);
  void step_beam();
  float length_penalty(int length) const;
  // `logits` with the never_generate ids at -inf.
  RowVec allowed(const RowVec& logits) const;
  // The log-probabilities the next token of a hypothesis with `length` generated tokens is chosen by: the
  // log-softmax of `logits`, never_generate at -inf, </s> forced at max_length (force_eos_at_max_length),
  // renormalised (renormalize).
  RowVec next_logprobs(const RowVec& logits, int length) const;
  // The greedy choice (lowest id on ties) for a hypothesis with `length` generated tokens.
  int greedy_token(const RowVec& logits, int length) const;
  void step_beam_hugging_face();
  // A continuation of live hypothesis `parent_slot` by `token`: its log-probability and the path's sum.
  struct BeamCandidate {
    int parent_slot;
    int token;
    float logprob;
    float sum;
  };
  // Every live hypothesis' 2W best tokens (its forced one alone), best sum first.
  std::vector<BeamCandidate> beam_candidates() const;
  int forced_token(int position) const;

  const Config* config_;
  const ModelWeights* weights_;
  DecodeOptions options_;
  std::shared_ptr<const Trace> encoder_;  // the encoder pass, whole (shared with decoders of the same source);
                                          // an empty trace for a decoder-only model
  std::vector<int> start_tokens_;         // <bos>, and after it a decoder-only model's prompt
  Trace encoded_;  // what the decoder passes read of it: this decoder's interventions, src ids, enc.out
  bool use_cache_ = true;
  int max_length_ = 0;
  Rng rng_;
  std::vector<BeamNode> tree_;
  std::vector<int> live_;
  std::vector<int> finished_beams_;
  std::vector<Hypothesis> states_;  // parallel to live_ (greedy / sample: kept when finished)
  std::vector<Snapshot> history_;
  bool finished_ = false;
  std::shared_ptr<const CrossKeysValues> cross_;  // of encoded_, shared by every hypothesis' cache
  std::shared_ptr<const Trace> finished_trace_;  // a guided pass that finished decoding: trace() reuses it
  std::vector<RecordedRows> recorded_rows_;  // GuidedRedecoder's checks' rows, from position 0 (trace_assembled)
  std::shared_ptr<CudaDecoding> gpu_;  // compute_on's: the steps compute there
  CudaModel* gpu_model_ = nullptr;     // compute_on's: trace() computes there
  std::shared_ptr<CudaModel> gpu_owner_;  // compute_on's, where it was given as shared
};

}  // namespace sf
