#include "transformer/decoder_plan.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace sf {

DecoderRows DecoderRows::one_sequence(const std::vector<int>& tokens, int first_position) {
  DecoderRows rows;
  rows.add_sequence(tokens, first_position);
  return rows;
}

void DecoderRows::add_sequence(const std::vector<int>& add, int first_position) {
  const int s = sequences.empty() ? 0 : sequences.back() + 1;
  for (size_t i = 0; i < add.size(); ++i) {
    tokens.push_back(add[i]);
    positions.push_back(first_position + static_cast<int>(i));
    sequences.push_back(s);
  }
}

DecoderPlan plan_decoder_pass(const Config& config, const DecoderPlanRequest& request) {
  const char* where = "decoder_pass";
  const DecoderRows& rows = *request.rows;
  const std::vector<int>& source_ids = *request.source_ids;
  const int R = rows.size();
  if (R == 0) fail(ErrorKind::Input, "forward", "the target sequence is empty");
  if (rows.positions.size() != rows.tokens.size() || rows.sequences.size() != rows.tokens.size())
    fail(ErrorKind::Shape, where, "tokens, positions and sequences differ in length");
  DecoderPlan plan;
  plan.layers = config.n_decoder_layers;
  plan.output_rows.assign(request.output_rows.begin(), request.output_rows.end());
  // The sequences: consecutive ids from 0, each one's positions rising by one.
  std::vector<DecoderPlan::Sequence>& seqs = plan.sequences;
  for (int r = 0; r < R; ++r) {
    const size_t i = static_cast<size_t>(r);
    const int s = rows.sequences[i];
    if (s == static_cast<int>(seqs.size())) {
      DecoderPlan::Sequence q;
      q.begin = r;
      q.first_position = rows.positions[i];
      seqs.push_back(std::move(q));
    } else if (s != static_cast<int>(seqs.size()) - 1 || rows.positions[i] != rows.positions[i - 1] + 1) {
      fail(ErrorKind::Input, where, "row " + std::to_string(r) + " is out of order (sequence " + std::to_string(s) +
                                        ", position " + std::to_string(rows.positions[i]) + ")");
    }
    ++seqs.back().count;
  }
  const std::vector<const std::vector<int>*>& cached = request.cached_tokens;
  if (!cached.empty() && cached.size() != seqs.size())
    fail(ErrorKind::Input, where, std::to_string(cached.size()) + " caches for " + std::to_string(seqs.size()) +
                                      " sequences");
  if (!cached.empty() && request.first_layer >= 0)
    fail(ErrorKind::Input, where, "a pass from a later layer cannot fill a KV cache (its first layers do not run)");
  for (const std::vector<int>* c : cached)
    if (!c || std::count(cached.begin(), cached.end(), c) > 1)
      fail(ErrorKind::Input, where, "each sequence needs a KV cache of its own");
  const int sources = request.sources;
  // A decoder without an encoder (config.stacks DecoderOnly) reads no source: S = 0, no cross-attention masks.
  const bool cross = config.has_cross_attention();
  if (!cross && (!source_ids.empty() || !request.source_of.empty()))
    fail(ErrorKind::Input, where, "a decoder_only model reads no source sentence");
  if (cross && (sources < 1 || source_ids.empty() || source_ids.size() % static_cast<size_t>(sources) != 0))
    fail(ErrorKind::Input, where, "the encoder pass holds " + std::to_string(source_ids.size()) +
                                      " source rows for " + std::to_string(sources) + " sequences");
  const int S = cross ? static_cast<int>(source_ids.size()) / sources : 0;
  plan.source_length = S;
  if (!request.source_of.empty() && request.source_of.size() != seqs.size())
    fail(ErrorKind::Input, where, "a source for each sequence, or none");
  const bool reshape = config.attention == AttentionStyle::ReshapeHeads;
  for (size_t s = 0; s < seqs.size(); ++s) {
    DecoderPlan::Sequence& q = seqs[s];
    const int held = cached.empty() ? 0 : static_cast<int>(cached[s]->size());
    if (q.first_position != held)
      fail(ErrorKind::Input, where, "sequence " + std::to_string(s) + " starts at position " +
                                        std::to_string(q.first_position) + ", its cache holds " +
                                        std::to_string(held) + " tokens");
    if (reshape && held > 0)
      fail(ErrorKind::Input, where, "this model's attention (reshape_heads) mixes every row of a sequence: a pass "
                                    "cannot continue a KV cache, it runs over the whole sequence");
    q.source = request.source_of.empty() ? 0 : request.source_of[s];
    if (cross && (q.source < 0 || q.source >= sources))
      fail(ErrorKind::Input, where, "source " + std::to_string(q.source) + " of " + std::to_string(sources));
    q.fitted = fit_decoder_masks(*request.interventions, S, q.first_position + q.count);
    if (!cached.empty()) q.self_key_ids = *cached[s];
    q.self_key_ids.insert(q.self_key_ids.end(), rows.tokens.begin() + q.begin, rows.tokens.begin() + q.begin + q.count);
    if (cross)
      q.source_ids.assign(source_ids.begin() + static_cast<long>(q.source) * S,
                          source_ids.begin() + static_cast<long>(q.source + 1) * S);
  }
  const std::vector<int>& out = plan.output_rows;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0 || out[i] >= R || (i > 0 && out[i] <= out[i - 1]))
      fail(ErrorKind::Input, where, "output rows must rise within the " + std::to_string(R) + " rows");
  plan.fewer_queries = request.record == Record::Output && static_cast<int>(out.size()) < R && !reshape;
  if (plan.fewer_queries)
    for (int r : out) {
      DecoderPlan::Sequence& q = seqs[static_cast<size_t>(rows.sequences[static_cast<size_t>(r)])];
      q.query_rows.push_back(r - q.begin);
    }
  return plan;
}

DecoderPlan::Queries DecoderPlan::queries(size_t s, int layer) const {
  const Sequence& q = sequences[s];
  if (!fewer_queries_in(layer)) return {q.begin, q.count};
  // Its output rows among all the output rows (they rise, a sequence's rows together).
  const int before = static_cast<int>(std::lower_bound(output_rows.begin(), output_rows.end(), q.begin) - output_rows.begin());
  return {before, static_cast<int>(q.query_rows.size())};
}

AttentionMask DecoderPlan::self_mask(const Config& config, size_t s, int layer) const {
  const Sequence& q = sequences[s];
  AttentionMask mask = build_mask(config, q.fitted, AttentionKind::Decoder, layer, q.first_position, q.count,
                                  q.self_key_ids, q.fitted.causal_mask);
  return fewer_queries_in(layer) ? mask.rows(q.query_rows) : mask;
}

AttentionMask DecoderPlan::cross_mask(const Config& config, size_t s, int layer) const {
  const Sequence& q = sequences[s];
  const std::vector<int> query_ids(q.self_key_ids.end() - q.count, q.self_key_ids.end());  // its rows' tokens
  AttentionMask mask = build_mask(config, q.fitted, AttentionKind::Cross, layer, q.first_position, q.count,
                                  q.source_ids, false, &query_ids);
  return fewer_queries_in(layer) ? mask.rows(q.query_rows) : mask;
}

}  // namespace sf
