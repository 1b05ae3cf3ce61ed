// The host's half of a decoder pass (transformer/passes.h): what the pass is, worked out and checked before any
// arithmetic, whichever backend then computes it.
//
//   in    the rows (token, position, sequence), what each sequence's KV cache holds (its tokens; its length is
//         where the sequence's positions must start), the rows whose logits are wanted, what is recorded, and
//         which source sequence of the encoder pass each sequence reads
//   out   each sequence's rows, first position, source, the interventions fitted to its length, the tokens its
//         self-attention keys belong to (cache, then its rows), the rows the last layer still queries; and each
//         attention's mask for a sequence in a layer (build_mask, transformer/layers.h)
//
// What it reads is checked here (ErrorKind::Input, naming the problem) before the pass writes anything; the backend
// checks what lives in its own memory (its caches' keys and values) and the ids against the vocabulary. Nothing
// here depends on where the numbers live (host or GPU memory): the CUDA backend can plan its passes the same way.
#pragma once
#include <span>
#include <vector>

#include "model/config.h"
#include "nn/attention.h"
#include "transformer/interventions.h"
#include "transformer/layers.h"

namespace sf {

struct DecoderRows {
  std::vector<int> tokens;     // (R) decoder input tokens
  std::vector<int> positions;  // (R) each row's position in its sequence
  std::vector<int> sequences;  // (R) each row's sequence, 0 .. N-1, a sequence's rows together

  // One sequence: `tokens` at positions first_position ...
  static DecoderRows one_sequence(const std::vector<int>& tokens, int first_position = 0);
  void add_sequence(const std::vector<int>& tokens, int first_position = 0);
  int size() const { return static_cast<int>(tokens.size()); }
};

// What a pass asks, as the plan reads it.
struct DecoderPlanRequest {
  // The rows, and the encoder pass they read: its source ids (`sources` sequences of one length, stacked) and
  // interventions (painted decoder masks are fitted to each sequence here). The request reads everything where
  // it is (these, the caches' tokens, the output rows and sources): each must outlive it.
  DecoderPlanRequest(const DecoderRows& rows, const std::vector<int>& source_ids, int sources,
                     const Interventions& interventions)
      : rows(&rows), source_ids(&source_ids), sources(sources), interventions(&interventions) {}
  const DecoderRows* rows;
  const std::vector<int>* source_ids;
  int sources;
  const Interventions* interventions;
  // One entry per sequence: the tokens its KV cache holds (its rows continue them), each a cache of its own; or
  // empty: no caches, every sequence from position 0.
  std::vector<const std::vector<int>*> cached_tokens;
  std::span<const int> output_rows;  // rising, within the rows
  Record record = Record::Output;
  int first_layer = -1;              // > 0: the pass starts at that layer (the trace holds it up to there)
  std::span<const int> source_of;    // sequence s reads source sequence source_of[s]; empty: every one source 0
};

struct DecoderPlan {
  struct Sequence {
    int begin = 0, count = 0;        // its rows
    int first_position = 0;          // of its first row: its cache's length (0 without one)
    int source = 0;                  // the encoder pass's sequence it reads
    Interventions fitted;            // the interventions, painted decoder masks fitted to first_position + count
    std::vector<int> self_key_ids;   // (first_position + count) the tokens its self-attention keys belong to
    std::vector<int> source_ids;     // (S) the tokens of the source it reads
    std::vector<int> query_rows;     // fewer_queries: its output rows, as offsets from begin; else empty
  };
  std::vector<Sequence> sequences;
  int layers = 0;                    // the decoder's
  int source_length = 0;             // S: rows of each source sequence of the encoder pass
  std::vector<int> output_rows;      // as asked
  // An unrecorded pass that wants fewer outputs than rows runs only those rows through the last layer after its
  // self-attention keys and values (never with ReshapeHeads, where every row of a head mixes several tokens).
  bool fewer_queries = false;

  // Whether layer l runs only the output rows after its self-attention's keys and values: the last layer of a
  // fewer_queries pass.
  bool fewer_queries_in(int layer) const { return fewer_queries && layer + 1 == layers; }
  // Where sequence s's queries sit among layer l's query rows, and how many: all its rows, or where
  // fewer_queries_in(l) its output rows (which are then the layer's rows, output_rows' order).
  struct Queries {
    int begin = 0, count = 0;
  };
  Queries queries(size_t s, int layer) const;
  // The masks of sequence s's queries in layer l (their rows, as queries() counts them): self-attention over the
  // keys of its cache and rows (padding, the causal mask, painted masks), cross-attention over its source.
  AttentionMask self_mask(const Config& config, size_t s, int layer) const;
  AttentionMask cross_mask(const Config& config, size_t s, int layer) const;
};

// Plans the pass `request` asks. ErrorKind::Input when: there are no rows, rows are out of order (a sequence's
// rows together, sequences numbered from 0, positions rising by one), a sequence does not start where its cache
// ends, there are caches for some sequences only or one cache twice, a source does not exist, output
// rows do not rise within the rows, a ReshapeHeads model continues a cache, or a pass from a later layer would
// fill a cache. ErrorKind::Shape when tokens, positions and sequences differ in length.
DecoderPlan plan_decoder_pass(const Config& config, const DecoderPlanRequest& request);

}  // namespace sf
