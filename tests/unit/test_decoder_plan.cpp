// The decoder pass's plan (transformer/decoder_plan.h): what a pass of several sequences with KV caches is made of,
// and every input it refuses, each named, before the pass writes anything.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "decode/kv_cache.h"
#include "forward_fixture.h"
#include "transformer/decoder_plan.h"
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/error.h"

namespace sf {
namespace {

using testing::random_weights;
using testing::small_config;

const std::vector<int> kSrc = {5, 9, 12, 7, 20, 1};  // the last one padding (pad_id 1)

struct CachedModel {
  Config config = small_config();
  ModelWeights weights;
  Trace encoded;
  KvCache three, one;  // caches holding 3 and 1 tokens
  CachedModel() {
    weights = random_weights(config, 5, 0.6f);
    encode(config, weights, kSrc, {}, encoded);
    three = start_kv_cache(config, weights, encoded);
    one = three;
    for (int token : {2, 6, 11}) decode_step(config, weights, encoded, token, three);
    decode_step(config, weights, encoded, 2, one);
  }
  // The request reads output_rows where they are: a temporary serves a plan_decoder_pass call in the same
  // expression.
  DecoderPlanRequest request(const DecoderRows& rows, std::vector<const std::vector<int>*> cached,
                             const std::vector<int>& output_rows, Record record) const {
    DecoderPlanRequest r(rows, encoded.src.ids, encoded.sequences, encoded.interventions);
    r.cached_tokens = std::move(cached);
    r.output_rows = output_rows;
    r.record = record;
    return r;
  }
};

// Two sequences continuing caches of 3 and 1 tokens (2 rows, then 1), the logits of rows 1 and 2 only.
TEST(DecoderPlan, ABatchOfSequencesContinuingTheirCaches) {
  CachedModel s;
  const int L = s.config.n_decoder_layers;
  DecoderRows rows = DecoderRows::one_sequence({7, 8}, 3);
  rows.add_sequence({9}, 1);
  EXPECT_EQ(rows.positions, (std::vector<int>{3, 4, 1}));
  EXPECT_EQ(rows.sequences, (std::vector<int>{0, 0, 1}));
  const DecoderPlan plan =
      plan_decoder_pass(s.config, s.request(rows, {&s.three.tokens, &s.one.tokens}, {1, 2}, Record::Output));
  ASSERT_EQ(plan.sequences.size(), 2u);
  const DecoderPlan::Sequence& a = plan.sequences[0];
  const DecoderPlan::Sequence& b = plan.sequences[1];
  EXPECT_EQ(a.begin, 0);
  EXPECT_EQ(a.count, 2);
  EXPECT_EQ(a.first_position, 3);
  EXPECT_EQ(a.self_key_ids, (std::vector<int>{2, 6, 11, 7, 8}));  // the cache's tokens, then its rows'
  EXPECT_EQ(b.begin, 2);
  EXPECT_EQ(b.count, 1);
  EXPECT_EQ(b.first_position, 1);
  EXPECT_EQ(b.self_key_ids, (std::vector<int>{2, 9}));
  EXPECT_EQ(a.source_ids, kSrc);
  EXPECT_EQ(plan.source_length, 6);
  // Fewer outputs than rows: the last layer queries row 1 of the first sequence and row 0 of the second.
  ASSERT_TRUE(plan.fewer_queries);
  EXPECT_EQ(a.query_rows, std::vector<int>{1});
  EXPECT_EQ(b.query_rows, std::vector<int>{0});
  EXPECT_EQ(plan.queries(0, 0).begin, 0);
  EXPECT_EQ(plan.queries(0, 0).count, 2);
  EXPECT_EQ(plan.queries(1, 0).begin, 2);
  EXPECT_EQ(plan.queries(1, 0).count, 1);
  EXPECT_EQ(plan.queries(0, L - 1).begin, 0);
  EXPECT_EQ(plan.queries(0, L - 1).count, 1);
  EXPECT_EQ(plan.queries(1, L - 1).begin, 1);
  EXPECT_EQ(plan.queries(1, L - 1).count, 1);
  // Masks: the first sequence's self-attention over its 5 keys, query rows at positions 3 and 4 (causal: the
  // row at 3 does not see key 4); in the last layer only the row at 4 is left, and it sees every key.
  const AttentionMask first = plan.self_mask(s.config, 0, 0);
  EXPECT_EQ(first.query_positions, (std::vector<int>{3, 4}));
  EXPECT_TRUE(first.blocks(0, 0, 4));
  EXPECT_FALSE(first.blocks(0, 0, 3));
  EXPECT_FALSE(first.blocks(0, 1, 4));
  const AttentionMask last = plan.self_mask(s.config, 0, L - 1);
  EXPECT_EQ(last.query_positions, std::vector<int>{4});
  for (int key = 0; key < 5; ++key) EXPECT_FALSE(last.blocks(0, 0, key)) << key;
  // Cross-attention: the source's padding key is blocked for every query row.
  const AttentionMask cross = plan.cross_mask(s.config, 1, 0);
  EXPECT_TRUE(cross.blocks(2, 0, 5));
  EXPECT_FALSE(cross.blocks(2, 0, 4));
  // A recorded pass runs every row through every layer.
  const DecoderPlan traced =
      plan_decoder_pass(s.config, s.request(rows, {&s.three.tokens, &s.one.tokens}, {1, 2}, Record::Rows));
  EXPECT_FALSE(traced.fewer_queries);
  EXPECT_EQ(traced.queries(1, L - 1).begin, 2);
  EXPECT_EQ(traced.self_mask(s.config, 0, L - 1).query_positions, (std::vector<int>{3, 4}));
}

// Painted decoder masks are fitted to each sequence's own length (cache and rows), and replace the computed mask
// of their head inside the painted square.
TEST(DecoderPlan, PaintedMasksFittedToEachSequence) {
  CachedModel s;
  CustomMask painted;
  painted.where = {AttentionKind::Decoder, 0, 1};
  painted.blocked = Mat::Zero(3, 3);  // every cell allowed (later keys too) but one:
  painted.blocked(2, 0) = 1.0f;       // the query at position 2 does not see key 0
  s.encoded.interventions.custom_masks = {painted};
  DecoderRows rows = DecoderRows::one_sequence({7, 8}, 1);  // positions 1, 2 after the cache of one token
  rows.add_sequence({9}, 3);                                 // position 3 after the cache of three
  const DecoderPlan plan =
      plan_decoder_pass(s.config, s.request(rows, {&s.one.tokens, &s.three.tokens}, {0, 1, 2}, Record::Output));
  ASSERT_EQ(plan.sequences[0].fitted.custom_masks.size(), 1u);
  EXPECT_EQ(plan.sequences[0].fitted.custom_masks[0].blocked.rows(), 3);
  EXPECT_EQ(plan.sequences[1].fitted.custom_masks[0].blocked.rows(), 4);
  const AttentionMask mask = plan.self_mask(s.config, 0, 0);  // query rows at positions 1 and 2, keys 0..2
  EXPECT_TRUE(mask.blocks(1, 1, 0));   // painted
  EXPECT_FALSE(mask.blocks(0, 1, 0));  // head 0: the causal mask
  EXPECT_FALSE(mask.blocks(1, 0, 2));  // painted: allowed, though a later key
  EXPECT_TRUE(mask.blocks(0, 0, 2));   // head 0: causal
  EXPECT_FALSE(plan.self_mask(s.config, 0, 1).blocks(1, 1, 0));  // layer 1 has no painted mask
  // Past the painted square the computed mask: the query at position 3 sees every key up to its own.
  const AttentionMask later = plan.self_mask(s.config, 1, 0);
  for (int key = 0; key < 4; ++key) EXPECT_FALSE(later.blocks(1, 0, key)) << key;
}

// The encoder's pass keeping only its output (Record::Output: every layer in one scratch record) gives the very
// floats of the traced pass, from the embeddings and from a later layer, and leaves no layer records behind.
TEST(EncoderPass, OutputOnlyIsTheTracedPassesOutput) {
  CachedModel s;
  ASSERT_EQ(s.encoded.encoder.size(), static_cast<size_t>(s.config.n_encoder_layers));
  Trace output;
  output.src.ids = kSrc;
  encoder_pass(s.config, s.weights, 1, -1, Record::Output, nullptr, output);
  EXPECT_TRUE(output.encoder.empty());
  ASSERT_EQ(output.enc_out.rows(), static_cast<Eigen::Index>(kSrc.size()));
  EXPECT_TRUE(output.enc_out.cwiseEqual(s.encoded.enc_out).all());
  EXPECT_TRUE(output.src.sum.cwiseEqual(s.encoded.src.sum).all());
  // From layer 1 of the traced pass: its layer 0 output read before the records go.
  Trace later = s.encoded;
  later.enc_out.setZero();
  encoder_pass(s.config, s.weights, 1, 1, Record::Output, nullptr, later);
  EXPECT_TRUE(later.encoder.empty());
  EXPECT_TRUE(later.enc_out.cwiseEqual(s.encoded.enc_out).all());
}

// Every input decoder_pass refuses: ErrorKind::Input (Shape for rows of unequal length) naming the problem, and the
// caches as they were (their tokens, and keys and values that the next step still reads).
TEST(DecoderPass, RefusesEachBadInputBeforeWritingAnything) {
  CachedModel s;
  const CrossKeysValues cross = cross_keys_values(s.config, s.weights, s.encoded);
  const KvCache three_before = s.three, one_before = s.one;
  struct Case {
    std::string name;
    std::function<void(DecoderPass&, Trace&)> make;  // from one row continuing `three`
    std::string words;
    ErrorKind kind = ErrorKind::Input;
  };
  Trace other_source;
  encode(s.config, s.weights, {5, 9, 12}, {}, other_source);
  const CrossKeysValues other_cross = cross_keys_values(s.config, s.weights, other_source);
  KvCache tokens_only = empty_kv_cache(s.config);  // every layer's keys and values, but none of their rows
  tokens_only.tokens = s.three.tokens;
  KvCache other_model = s.three;
  other_model.keys.pop_back();
  const std::vector<Case> cases = {
      {"rows out of order",
       [&](DecoderPass& p, Trace&) {
         p.rows = DecoderRows::one_sequence({7, 8}, 3);
         p.rows.positions[1] = 5;
       },
       "row 1 is out of order"},
      {"sequences out of order",
       [&](DecoderPass& p, Trace&) {
         p.rows = DecoderRows::one_sequence({7}, 3);
         p.rows.add_sequence({9}, 1);
         p.rows.add_sequence({4}, 0);
         p.rows.sequences = {0, 1, 0};
         p.caches = {&s.three, &s.one, &s.three};
       },
       "row 2 is out of order"},
      {"tokens, positions and sequences of unequal length",
       [&](DecoderPass& p, Trace&) { p.rows.positions.push_back(4); }, "differ in length", ErrorKind::Shape},
      {"a start that is not the cache's end", [&](DecoderPass& p, Trace&) { p.rows = DecoderRows::one_sequence({7}, 2); },
       "sequence 0 starts at position 2, its cache holds 3 tokens"},
      {"caches for some sequences only",
       [&](DecoderPass& p, Trace&) { p.rows.add_sequence({9}, 1); }, "1 caches for 2 sequences"},
      {"one cache twice",
       [&](DecoderPass& p, Trace&) {
         p.rows.add_sequence({9}, 3);
         p.caches = {&s.three, &s.three};
       },
       "a KV cache of its own"},
      {"no cache", [&](DecoderPass& p, Trace&) { p.caches = {nullptr}; }, "a KV cache of its own"},
      {"a cache of tokens only", [&](DecoderPass& p, Trace&) { p.caches = {&tokens_only}; },
       "a cache of tokens only is no KV cache"},
      {"a cache of another model", [&](DecoderPass& p, Trace&) { p.caches = {&other_model}; },
       "the KV cache is not this model's"},
      {"output rows falling",
       [&](DecoderPass& p, Trace&) {
         p.rows = DecoderRows::one_sequence({7, 8}, 3);
         p.output_rows = {1, 0};
       },
       "output rows must rise within the 2 rows"},
      {"an output row past the rows", [&](DecoderPass& p, Trace&) { p.output_rows = {1}; },
       "output rows must rise within the 1 rows"},
      {"a source that does not exist", [&](DecoderPass& p, Trace&) { p.source_of = {1}; }, "source 1 of 1"},
      {"sources for some sequences only", [&](DecoderPass& p, Trace&) { p.source_of = {0, 0}; },
       "a source for each sequence, or none"},
      {"a trace with an unrecorded pass", [&](DecoderPass& p, Trace& t) { p.trace = &t; },
       "a trace is given exactly when the pass records one"},
      {"a pass from a later layer filling a cache",
       [&](DecoderPass& p, Trace& t) {
         p.record = Record::Trace;
         p.trace = &t;
         p.first_layer = 1;
       },
       "a pass from a later layer cannot fill a KV cache"},
      {"cross-attention keys of another source", [&](DecoderPass&, Trace&) {}, "the cross-attention keys are not"},
      {"a token outside the vocabulary", [&](DecoderPass& p, Trace&) { p.rows.tokens = {s.config.tgt_vocab_size}; },
       "target"},
      {"no rows", [&](DecoderPass& p, Trace&) { p.rows = {}; }, "the target sequence is empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DecoderPass pass;
    pass.rows = DecoderRows::one_sequence({7}, 3);
    pass.caches = {&s.three};
    pass.output_rows = {0};
    Trace record;
    c.make(pass, record);
    const CrossKeysValues* keys = c.name == "cross-attention keys of another source" ? &other_cross : &cross;
    try {
      decoder_pass(s.config, s.weights, s.encoded, keys, pass);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), c.kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
    }
    for (const auto& [got, want] : {std::pair<const KvCache*, const KvCache*>{&s.three, &three_before},
                                    std::pair<const KvCache*, const KvCache*>{&s.one, &one_before}}) {
      ASSERT_EQ(got->tokens, want->tokens);
      for (size_t l = 0; l < want->keys.size(); ++l) {
        const Eigen::Index n = want->length();
        EXPECT_EQ(got->keys[l].topRows(n), want->keys[l].topRows(n));
        EXPECT_EQ(got->values[l].topRows(n), want->values[l].topRows(n));
      }
    }
  }
  // A pass without the encoder's half.
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence({2});
  pass.output_rows = {0};
  EXPECT_THROW(decoder_pass(s.config, s.weights, Trace{}, nullptr, pass), Error);
  // The caches go on as they were: the next step equals a step on a copy made before.
  KvCache copy = three_before;
  const RowVec want = decode_step(s.config, s.weights, s.encoded, 7, copy);
  const RowVec got = decode_step(s.config, s.weights, s.encoded, 7, s.three);
  EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 1e-6f);
}

}  // namespace
}  // namespace sf
