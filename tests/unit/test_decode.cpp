// Decoding: KV cache equals full recomputation, greedy, sampling (seeded, top-k, top-p), beam search and its
// tree, step forward and back, forced prefixes.
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "decode/decoder.h"
#include "decode/guided.h"
#include "decode/kv_cache.h"
#include "decode/sampling.h"
#include "forward_fixture.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

using testing::random_weights;
using testing::small_config;

struct Model {
  Config config;
  ModelWeights weights;
  explicit Model(NormPlacement placement = NormPlacement::Post, uint32_t seed = 11) {
    config = small_config();
    config.norm_placement = placement;
    weights = random_weights(config, seed, 0.6f);
  }
};
const std::vector<int> kSrc = {5, 9, 12, 7, 20, 1};

// Incremental and full passes sum in different orders (GEMV vs GEMM): equal within 1e-5 absolute + 1e-5 relative.
float mixed_error(const RowVec& got, const RowVec& want) {
  return ((got - want).array().abs() / (1.0f + want.array().abs())).maxCoeff();
}

TEST(KvCache, IncrementalEqualsFullRecompute) {
  for (NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
    for (bool learned : {false, true}) {
      Model m(placement);
      if (learned) m.config.positional_encoding = PositionalEncoding::Learned;
      m.weights = random_weights(m.config, 3, 0.3f);  // the scale of the PyTorch fixtures
      Interventions iv;
      iv.heads_off = {{AttentionKind::Decoder, 0, 1}, {AttentionKind::Cross, 1, 2}};
      const std::vector<int> tgt = {2, 6, 11, 4, 8, 1, 9, 13};  // a pad among them, masked as a key
      Trace encoded;
      encode(m.config, m.weights, kSrc, iv, encoded);
      KvCache cache = start_kv_cache(m.config, m.weights, encoded);
      const Trace full = forward(m.config, m.weights, kSrc, tgt, iv);
      for (size_t t = 0; t < tgt.size(); ++t) {
        const RowVec logits = decode_step(m.config, m.weights, encoded, tgt[t], cache);
        EXPECT_LT(mixed_error(logits, full.logits.row(static_cast<Eigen::Index>(t))), 1e-5f)
            << "position " << t;
      }
      // Truncate and feed another continuation: equals the forward of that sequence.
      truncate_kv_cache(cache, 3);
      const std::vector<int> other = {2, 6, 11, 17, 5};
      const Trace full_other = forward(m.config, m.weights, kSrc, other, iv);
      for (size_t t = 3; t < other.size(); ++t) {
        const RowVec logits = decode_step(m.config, m.weights, encoded, other[t], cache);
        EXPECT_LT(mixed_error(logits, full_other.logits.row(static_cast<Eigen::Index>(t))), 1e-5f) << "placement " << int(placement) << " learned " << learned << " t " << t << " max logit " << full_other.logits.cwiseAbs().maxCoeff();
      }
    }
  }
  Interventions no_causal;
  no_causal.causal_mask = false;
  EXPECT_FALSE(kv_cache_exact(no_causal));
  EXPECT_TRUE(kv_cache_exact(Interventions{}));
  // Painted masks: a decoder mask that blocks every later key keeps the cache exact, one that lets a query see a
  // later key does not; cross-attention masks concern one query row each.
  Interventions painted;
  Mat causal_plus = Mat::Zero(4, 4);
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) causal_plus(i, j) = 1.0f;
  causal_plus(3, 1) = 1.0f;
  painted.custom_masks = {{{AttentionKind::Decoder, 0, 1}, causal_plus},
                          {{AttentionKind::Cross, 1, 0}, Mat::Ones(4, 6)}};
  EXPECT_TRUE(kv_cache_exact(painted));
  painted.custom_masks[0].blocked(1, 2) = 0.0f;
  EXPECT_FALSE(kv_cache_exact(painted));
}

TEST(KvCache, ChunkEqualsTheFullPassRows) {
  for (NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
    Model m(placement);
    m.weights = random_weights(m.config, 5, 0.3f);
    Interventions iv;
    iv.heads_off = {{AttentionKind::Decoder, 1, 3}};
    Mat blocked = Mat::Zero(8, 8);  // causal, and query 5 may not see key 2
    for (int i = 0; i < 8; ++i)
      for (int j = i + 1; j < 8; ++j) blocked(i, j) = 1.0f;
    blocked(5, 2) = 1.0f;
    iv.custom_masks = {{{AttentionKind::Decoder, 0, 2}, blocked}};
    ASSERT_TRUE(kv_cache_exact(iv));
    const std::vector<int> tgt = {2, 6, 11, 4, 8, 1, 9, 13};
    Trace encoded;
    encode(m.config, m.weights, kSrc, iv, encoded);
    const Trace full = forward(m.config, m.weights, kSrc, tgt, iv);
    // Three tokens one at a time, then five in one chunk: every row of the chunk is the full pass's row.
    KvCache cache = start_kv_cache(m.config, m.weights, encoded);
    for (int t = 0; t < 3; ++t) decode_step(m.config, m.weights, encoded, tgt[static_cast<size_t>(t)], cache);
    const std::vector<int> chunk(tgt.begin() + 3, tgt.end());
    KvCache again = cache;
    const Mat logits = decode_chunk(m.config, m.weights, encoded, chunk, cache, 5);
    ASSERT_EQ(logits.rows(), 5);
    for (int i = 0; i < 5; ++i) EXPECT_LT(mixed_error(logits.row(i), full.logits.row(3 + i)), 1e-5f) << i;
    EXPECT_EQ(cache.tokens, tgt);
    // Only the last two rows asked for: the same two rows, and the same keys and values cached.
    const Mat last = decode_chunk(m.config, m.weights, encoded, chunk, again, 2);
    ASSERT_EQ(last.rows(), 2);
    EXPECT_LT(mixed_error(last.row(1), full.logits.row(7)), 1e-5f);
    EXPECT_LT(mixed_error(last.row(0), full.logits.row(6)), 1e-5f);
    ASSERT_EQ(again.length(), cache.length());
    for (size_t l = 0; l < cache.keys.size(); ++l)
      EXPECT_LT((again.keys[l].topRows(cache.length()) - cache.keys[l].topRows(cache.length())).cwiseAbs().maxCoeff(),
                1e-5f);
    // Without the causal mask, a whole prefix from an empty cache gives the full pass's last row.
    Interventions open = iv;
    open.causal_mask = false;
    open.custom_masks.clear();
    Trace encoded_open;
    encode(m.config, m.weights, kSrc, open, encoded_open);
    KvCache empty = start_kv_cache(m.config, m.weights, encoded_open);
    const Mat row = decode_chunk(m.config, m.weights, encoded_open, tgt, empty, 1);
    EXPECT_LT(mixed_error(row.row(0), forward(m.config, m.weights, kSrc, tgt, open).logits.row(7)), 1e-5f);
    EXPECT_THROW(decode_chunk(m.config, m.weights, encoded, {}, cache, 1), Error);
    EXPECT_THROW(decode_chunk(m.config, m.weights, encoded, {3, 4}, cache, 3), Error);
  }
}

// Every tensor of two traces within 1e-4 of the value's size (products over other row counts sum in another order).
void expect_traces_close(const Trace& got, const Trace& want) {
  const std::vector<NamedTensor> a = trace_tensors(got), b = trace_tensors(want);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].name, b[i].name);
    ASSERT_EQ(a[i].tensor.shape, b[i].tensor.shape) << a[i].name;
    float worst = 0.0f;
    for (size_t j = 0; j < a[i].tensor.data.size(); ++j) {
      const float x = a[i].tensor.data[j], y = b[i].tensor.data[j];
      worst = std::max(worst, std::abs(x - y) / (1.0f + std::abs(y)));
    }
    EXPECT_LT(worst, 1e-4f) << a[i].name;
  }
}

// Chunks through the KV cache that record their rows (record_chunk), the rows taken of each put together, are
// the traced pass over all of them: every tensor the app shows, the attention maps computed over the whole
// sequence under its masks (a painted one and a head off among them), for post- and pre-norm layers.
TEST(KvCache, RecordedChunksPutTogetherAreTheTracedPass) {
  for (NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
    Model m(placement);
    Interventions iv;
    iv.heads_off = {{AttentionKind::Decoder, 1, 3}, {AttentionKind::Cross, 0, 1}};
    Mat blocked = Mat::Zero(8, 8);  // causal, and query 5 may not see key 2
    for (int i = 0; i < 8; ++i)
      for (int j = i + 1; j < 8; ++j) blocked(i, j) = 1.0f;
    blocked(5, 2) = 1.0f;
    iv.custom_masks = {{{AttentionKind::Decoder, 0, 2}, blocked}};
    const std::vector<int> tgt = {2, 6, 11, 4, 8, 1, 9, 13};
    Trace encoded;
    encode(m.config, m.weights, kSrc, iv, encoded);
    Trace want = encoded;
    decode_pass(m.config, m.weights, tgt, want);
    const CrossKeysValues cross = cross_keys_values(m.config, m.weights, encoded);
    // Chunks of 3, 4 (its last row left out, as a check that stops there leaves it) and 2 tokens.
    KvCache cache = start_kv_cache(m.config, m.weights, encoded);
    std::vector<RecordedRows> pieces;
    for (auto [from, count, taken] : {std::array<int, 3>{0, 3, 3}, {3, 4, 3}, {6, 2, 2}}) {
      auto rows = std::make_shared<Trace>();
      truncate_kv_cache(cache, from);
      record_chunk(m.config, m.weights, encoded, std::vector<int>(tgt.begin() + from, tgt.begin() + from + count),
                   cache, *rows);
      EXPECT_EQ(rows->probs.size(), 0);  // no attention maps, no output layer yet
      EXPECT_TRUE(rows->decoder[0].self_attn.scores.empty());
      output_rows(m.weights, 0, taken, *rows);
      pieces.push_back({rows, from, 0, taken});
    }
    expect_traces_close(join_halves(encoded, assemble_traced_pass(m.config, encoded, cross, pieces)), want);
    // Rows that leave a gap, or start past position 0, are refused.
    std::vector<RecordedRows> gap = {pieces[0], pieces[2]};
    EXPECT_THROW(assemble_traced_pass(m.config, encoded, cross, gap), Error);
    EXPECT_THROW(assemble_traced_pass(m.config, encoded, cross, {pieces[1]}), Error);
    EXPECT_THROW(assemble_traced_pass(m.config, encoded, cross, {}), Error);
  }
}

// One token for each of several caches (a beam's hypotheses, here at different lengths) in one pass: each row is
// what decode_step gives that cache alone, and each cache grows as decode_step grows it.
TEST(KvCache, StepsOfSeveralCachesInOnePassEqualTheirOwnSteps) {
  Model m;
  Trace encoded;
  encode(m.config, m.weights, kSrc, {}, encoded);
  const KvCache start = start_kv_cache(m.config, m.weights, encoded);
  const std::vector<std::vector<int>> prefixes = {{2}, {2, 6, 11}, {2, 8}, {2, 6, 11, 4, 9}};
  const std::vector<int> next = {7, 3, 13, 5};
  std::vector<KvCache> batched, alone;
  for (const auto& prefix : prefixes) {
    KvCache c = start;
    for (int token : prefix) decode_step(m.config, m.weights, encoded, token, c);
    batched.push_back(c);
    alone.push_back(c);
  }
  std::vector<KvCache*> caches;
  for (KvCache& c : batched) caches.push_back(&c);
  const Mat logits = decode_steps(m.config, m.weights, encoded, next, caches);
  ASSERT_EQ(logits.rows(), 4);
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const RowVec want = decode_step(m.config, m.weights, encoded, next[i], alone[i]);
    EXPECT_LT(mixed_error(logits.row(static_cast<Eigen::Index>(i)), want), 1e-5f) << "cache " << i;
    ASSERT_EQ(batched[i].tokens, alone[i].tokens);
    for (size_t l = 0; l < batched[i].keys.size(); ++l) {
      const Eigen::Index n = batched[i].length();
      EXPECT_LT((batched[i].keys[l].topRows(n) - alone[i].keys[l].topRows(n)).cwiseAbs().maxCoeff(), 1e-5f);
      EXPECT_LT((batched[i].values[l].topRows(n) - alone[i].values[l].topRows(n)).cwiseAbs().maxCoeff(), 1e-5f);
    }
  }
  EXPECT_THROW(decode_steps(m.config, m.weights, encoded, {1, 2}, caches), Error);  // 2 tokens, 4 caches
  KvCache other = start_kv_cache(m.config, m.weights, encoded);  // another encoder pass's keys and values
  KvCache first = start;
  decode_step(m.config, m.weights, encoded, 2, first);
  EXPECT_THROW(decode_steps(m.config, m.weights, encoded, {3, 3}, {&first, &other}), Error);
}

std::vector<int> greedy_by_hand(const Model& m, int max_length) {
  std::vector<int> input = {m.config.bos_id}, out;
  while (static_cast<int>(out.size()) < max_length) {
    const Trace t = forward(m.config, m.weights, kSrc, input);
    const int token = argmax(t.logits.bottomRows(1));
    out.push_back(token);
    if (token == m.config.eos_id) break;
    input.push_back(token);
  }
  return out;
}

// The output layer in pieces (a pass with OutputLayer::Deferred, rows read as a check reaches them, the rest
// filled when the pass is kept) gives the full output layer's logits and probabilities.
TEST(Forward, DeferredOutputRowsEqualTheFullOutputLayer) {
  Model m;
  const std::vector<int> tgt = {2, 6, 11, 4, 8, 1, 9, 13};
  Trace encoded;
  encode(m.config, m.weights, kSrc, {}, encoded);
  Trace full = encoded, deferred = encoded;
  decode_pass(m.config, m.weights, tgt, full);
  decode_pass(m.config, m.weights, tgt, deferred, OutputLayer::Deferred);
  EXPECT_EQ(deferred.dec_out, full.dec_out);
  EXPECT_EQ(deferred.probs.size(), 0);
  ASSERT_EQ(deferred.logits.rows(), 8);
  output_rows(m.weights, 3, 4, deferred);  // one row, then a block after it
  output_rows(m.weights, 4, 7, deferred);
  for (int r = 3; r < 7; ++r)
    EXPECT_LT((deferred.logits.row(r) - full.logits.row(r)).cwiseAbs().maxCoeff(), 1e-5f) << r;
  complete_output(m.weights, 3, 7, deferred);
  EXPECT_LT((deferred.logits - full.logits).cwiseAbs().maxCoeff(), 1e-5f);
  EXPECT_LT((deferred.probs - full.probs).cwiseAbs().maxCoeff(), 1e-6f);
  EXPECT_THROW(output_rows(m.weights, 5, 9, deferred), Error);
}

TEST(Decoder, GreedyMatchesArgmaxOfFullPasses) {
  Model m;
  DecodeOptions o;
  o.max_length = 9;
  Decoder d(m.config, m.weights, kSrc, {}, o);
  EXPECT_TRUE(d.uses_kv_cache());
  d.run();
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.generated(), greedy_by_hand(m, 9));
  EXPECT_FALSE(d.step());
  o.use_kv_cache = false;
  Decoder slow(m.config, m.weights, kSrc, {}, o);
  slow.run();
  EXPECT_EQ(slow.generated(), d.generated());
  // The trace of the final pass predicts the last token.
  const Trace t = d.trace();
  EXPECT_EQ(static_cast<int>(t.tgt.ids.size()), static_cast<int>(d.generated().size()));
  EXPECT_EQ(argmax(t.logits.bottomRows(1)), d.generated().back());
}

// With the KV cache, and without one (causal mask off: a beam's hypotheses are rebuilt by one pass each).
TEST(Decoder, StepBackAndForwardAgain) {
  Model m;
  Interventions no_causal;
  no_causal.causal_mask = false;
  for (const Interventions& iv : {Interventions{}, no_causal})
  for (DecodeStrategy s : {DecodeStrategy::Greedy, DecodeStrategy::Sample, DecodeStrategy::Beam}) {
    DecodeOptions o;
    o.strategy = s;
    o.max_length = 7;
    o.seed = 42;
    o.beam_width = 3;
    Decoder d(m.config, m.weights, kSrc, iv, o);
    EXPECT_EQ(d.uses_kv_cache(), iv.causal_mask);
    EXPECT_FALSE(d.step_back());
    // The distribution the last token was drawn from: once finished, the softmax of the logits of the final
    // traced pass's last row (greedy), what sampling drew from (sample); none for beam search and before the first
    // step. Stepping back gives the one of the step before again.
    EXPECT_EQ(d.last_distribution().size(), 0);
    std::vector<RowVec> distributions;
    while (d.step()) distributions.push_back(d.last_distribution());
    if (s == DecodeStrategy::Beam) {
      EXPECT_EQ(d.last_distribution().size(), 0);
    } else {
      const RowVec logits = d.trace().logits.bottomRows(1);
      const RowVec want = s == DecodeStrategy::Greedy ? softmax(logits) : sampling_distribution(logits, o.sampling);
      ASSERT_EQ(d.last_distribution().size(), want.size());
      EXPECT_LT((d.last_distribution() - want).cwiseAbs().maxCoeff(), 1e-6f);
      EXPECT_GT(d.last_distribution()(d.generated().back()), 0.0f);
    }
    const std::vector<int> all = d.generated();
    const size_t tree_size = d.tree().size();
    const int steps = d.steps();
    ASSERT_GE(steps, 2);
    EXPECT_TRUE(d.step_back());
    EXPECT_TRUE(d.step_back());
    EXPECT_EQ(d.last_distribution(), distributions[static_cast<size_t>(steps - 3)]) << "two steps back";
    EXPECT_FALSE(d.finished());
    EXPECT_EQ(d.steps(), steps - 2);
    d.run();
    EXPECT_EQ(d.generated(), all);
    EXPECT_EQ(d.tree().size(), tree_size);
    EXPECT_EQ(d.step_back(1000), steps) << "back to the start at once";
    EXPECT_EQ(d.steps(), 0);
    EXPECT_EQ(d.pass_input(), std::vector<int>{m.config.bos_id});
    d.run();
    EXPECT_EQ(d.generated(), all);
  }
}

TEST(Decoder, SamplingIsSeeded) {
  Model m;
  DecodeOptions o;
  o.strategy = DecodeStrategy::Sample;
  o.max_length = 12;
  o.sampling.temperature = 1.5f;
  auto run = [&](uint64_t seed) {
    o.seed = seed;
    Decoder d(m.config, m.weights, kSrc, {}, o);
    d.run();
    return d.generated();
  };
  EXPECT_EQ(run(1), run(1));
  std::set<std::vector<int>> outputs;
  for (uint64_t seed = 0; seed < 8; ++seed) outputs.insert(run(seed));
  EXPECT_GT(outputs.size(), 1u);
}

TEST(Sampling, TopKTopPTemperature) {
  RowVec logits(6);
  logits << 1.0f, 3.0f, 2.0f, 0.5f, 2.5f, -1.0f;
  SamplingOptions o;
  RowVec p = sampling_distribution(logits, o);
  EXPECT_NEAR(p.sum(), 1.0f, 1e-6f);
  EXPECT_EQ((p.array() > 0).count(), 6);
  o.top_k = 2;
  p = sampling_distribution(logits, o);
  EXPECT_EQ((p.array() > 0).count(), 2);
  EXPECT_GT(p(1), 0.0f);
  EXPECT_GT(p(4), 0.0f);
  EXPECT_NEAR(p(1), 1.0f / (1.0f + std::exp(-0.5f)), 1e-6f);
  // top-p: the smallest prefix of the sorted distribution reaching p.
  o.top_k = 0;
  const RowVec full = sampling_distribution(logits, SamplingOptions{});
  o.top_p = full(1) + 0.01f;  // needs the top two
  p = sampling_distribution(logits, o);
  EXPECT_EQ((p.array() > 0).count(), 2);
  o.top_p = full(1) * 0.5f;   // the top one alone
  p = sampling_distribution(logits, o);
  EXPECT_EQ((p.array() > 0).count(), 1);
  EXPECT_EQ(p(1), 1.0f);
  // The temperature divides the logits: p = softmax(logits / T), computed here by hand (T = 0.25 sharpens).
  for (float t : {0.25f, 2.0f}) {
    SamplingOptions tempered;
    tempered.temperature = t;
    const RowVec got = sampling_distribution(logits, tempered);
    double sum = 0;
    for (Eigen::Index i = 0; i < logits.size(); ++i) sum += std::exp(static_cast<double>(logits(i)) / t);
    for (Eigen::Index i = 0; i < logits.size(); ++i)
      EXPECT_NEAR(got(i), std::exp(static_cast<double>(logits(i)) / t) / sum, 1e-6) << "T " << t << ", id " << i;
  }
  // Draws follow the distribution.
  Rng rng(5);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 20000; ++i) ++counts[static_cast<size_t>(draw(full, rng))];
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(counts[static_cast<size_t>(i)] / 20000.0, full(i), 0.015);
  // Bad options are typed errors.
  SamplingOptions bad;
  bad.temperature = 0.0f;
  EXPECT_THROW(sampling_distribution(logits, bad), Error);
  bad = {};
  bad.top_p = 1.5f;
  EXPECT_THROW(sampling_distribution(logits, bad), Error);
}

// argmax against a plain scan for the first maximum: rows of 1 to 70 cells (vectors of 16 and the rest), few
// distinct values so that the maximum repeats, -inf cells; a NaN cell is passed over as the scan passes it.
TEST(Sampling, ArgmaxIsTheFirstMaximum) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-3, 3);
  for (int n = 1; n <= 70; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      RowVec row(n);
      for (int j = 0; j < n; ++j) row(j) = value(rng) == -3 ? -std::numeric_limits<float>::infinity() : value(rng) * 0.5f;
      int want = 0;
      for (int j = 1; j < n; ++j)
        if (row(j) > row(want)) want = j;
      ASSERT_EQ(argmax(row), want) << "n " << n << " trial " << trial;
    }
  RowVec with_nan(40);
  for (int j = 0; j < 40; ++j) with_nan(j) = static_cast<float>(j % 7);
  with_nan(3) = std::nanf("");
  EXPECT_EQ(argmax(with_nan), 6);
  EXPECT_EQ(argmax(RowVec::Constant(33, -std::numeric_limits<float>::infinity())), 0);
}

TEST(Sampling, TopKIdsBestFirstTiesTowardsTheLowerId) {
  RowVec scores(6);
  scores << 0.1f, 0.7f, 0.3f, 0.7f, -2.0f, 0.3f;
  EXPECT_EQ(top_k_ids(scores, 4), (std::vector<int>{1, 3, 2, 5}));
  EXPECT_EQ(top_k_ids(scores, 99).size(), 6u);
  EXPECT_TRUE(top_k_ids(scores, 0).empty());
}

TEST(Decoder, BeamWidthOneIsGreedy) {
  for (uint32_t seed : {11u, 12u, 13u}) {
    Model m(NormPlacement::Post, seed);
    DecodeOptions o;
    o.max_length = 10;
    Decoder greedy(m.config, m.weights, kSrc, {}, o);
    greedy.run();
    o.strategy = DecodeStrategy::Beam;
    o.beam_width = 1;
    Decoder beam(m.config, m.weights, kSrc, {}, o);
    beam.run();
    EXPECT_EQ(beam.generated(), greedy.generated());
  }
}

TEST(Decoder, BeamTree) {
  Model m;
  m.config.max_positions = 12;
  DecodeOptions o;
  o.strategy = DecodeStrategy::Beam;
  o.beam_width = 4;
  o.max_length = 8;
  Decoder d(m.config, m.weights, kSrc, {}, o);
  d.step();
  EXPECT_EQ(d.live_beams().size() + d.finished_beams().size(), 4u);
  d.run();
  const auto& tree = d.tree();
  ASSERT_GT(tree.size(), 4u);
  EXPECT_EQ(tree[0].parent, -1);
  for (size_t n = 1; n < tree.size(); ++n) {
    const BeamNode& node = tree[n];
    ASSERT_GE(node.parent, 0);
    ASSERT_LT(node.parent, static_cast<int>(n));
    const BeamNode& parent = tree[static_cast<size_t>(node.parent)];
    EXPECT_EQ(node.length, parent.length + 1);
    EXPECT_NEAR(node.sum_logprob, parent.sum_logprob + node.logprob, 1e-4f);
    EXPECT_LE(node.logprob, 0.0f);
    EXPECT_FALSE(parent.finished);
  }
  // Every node's log-probability is what a full pass over its parent's path gives its token: the hypotheses of a
  // step, fed together in one pass (decode_steps), each got its own row and its own cache.
  for (size_t n = 1; n < tree.size(); ++n) {
    std::vector<int> input = {m.config.bos_id};
    const std::vector<int> before = d.path(tree[n].parent);
    input.insert(input.end(), before.begin(), before.end());
    const Trace full = forward(m.config, m.weights, kSrc, input);
    EXPECT_NEAR(tree[n].logprob, log_softmax(full.logits.bottomRows(1))(tree[n].token), 1e-4f) << "node " << n;
  }
  // Beam hypotheses are distinct, and the best one scores at least as well as the greedy output.
  std::set<std::vector<int>> paths;
  for (int n : d.finished_beams()) EXPECT_TRUE(paths.insert(d.path(n)).second);
  EXPECT_EQ(d.generated(), d.path(d.best_node()));
  for (int n : d.finished_beams()) EXPECT_LE(tree[static_cast<size_t>(n)].score, tree[static_cast<size_t>(d.best_node())].score);
  // Scores carry GNMT's length penalty: sum_logprob / ((5 + length) / 6)^alpha, alpha 0.6 by default; with
  // alpha 0 the score is the sum itself.
  for (size_t n = 1; n < tree.size(); ++n)
    EXPECT_NEAR(tree[n].score, tree[n].sum_logprob / std::pow((5.0 + tree[n].length) / 6.0, 0.6), 1e-5) << "node " << n;
  o.length_penalty = 0.0f;
  Decoder plain(m.config, m.weights, kSrc, {}, o);
  plain.run();
  for (size_t n = 1; n < plain.tree().size(); ++n)
    EXPECT_NEAR(plain.tree()[n].score, plain.tree()[n].sum_logprob, 1e-6) << "node " << n;
}

TEST(Decoder, ForcedPrefix) {
  Model m;
  Interventions iv;
  iv.forced_prefix = {17, 4, 9};
  for (DecodeStrategy s : {DecodeStrategy::Greedy, DecodeStrategy::Beam}) {
    DecodeOptions o;
    o.strategy = s;
    o.max_length = 6;
    Decoder d(m.config, m.weights, kSrc, iv, o);
    d.run();
    const std::vector<int> out = d.generated();
    ASSERT_GE(out.size(), 3u);
    EXPECT_EQ(std::vector<int>(out.begin(), out.begin() + 3), iv.forced_prefix);
  }
  iv.forced_prefix = {99};
  EXPECT_THROW(Decoder(m.config, m.weights, kSrc, iv), Error);
}

TEST(Decoder, InterventionsWithoutCacheFallBack) {
  Model m;
  Interventions iv;
  iv.causal_mask = false;
  DecodeOptions o;
  o.max_length = 5;
  Decoder d(m.config, m.weights, kSrc, iv, o);
  EXPECT_FALSE(d.uses_kv_cache());
  d.run();
  // Each token is the argmax of the last row of a full pass without the causal mask.
  std::vector<int> input = {m.config.bos_id};
  for (int token : d.generated()) {
    EXPECT_EQ(argmax(forward(m.config, m.weights, kSrc, input, iv).logits.bottomRows(1)), token);
    input.push_back(token);
  }
}

// What keeps a decoding off the GPU (Decoder::compute_on refuses it), said in words: the cache switched off, the
// causal mask off, a painted mask (even one that keeps the cache exact: the GPU's caches take none); nothing for
// a plain decoding, heads off or positions off.
TEST(Decoder, WhyDecodingStaysOnTheCpuNamesTheReason) {
  Model m;
  const DecodeOptions plain;
  Interventions heads;
  heads.heads_off = {{AttentionKind::Cross, 0, 1}};
  heads.positional_encoding = false;
  EXPECT_EQ(why_decoding_stays_on_the_cpu(m.config, {}, plain), "");
  EXPECT_EQ(why_decoding_stays_on_the_cpu(m.config, heads, plain), "");
  DecodeOptions no_cache;
  no_cache.use_kv_cache = false;
  EXPECT_EQ(why_decoding_stays_on_the_cpu(m.config, {}, no_cache), "the KV cache is switched off");
  Interventions causal_off;
  causal_off.causal_mask = false;
  EXPECT_EQ(why_decoding_stays_on_the_cpu(m.config, causal_off, plain),
            "the causal mask is off: every step recomputes the whole prefix");
  Interventions painted;
  painted.custom_masks = {{{AttentionKind::Cross, 0, 3}, Mat::Zero(5, 6)}};
  ASSERT_TRUE(kv_cache_exact(m.config, painted));
  EXPECT_EQ(why_decoding_stays_on_the_cpu(m.config, painted, plain), "painted masks compute on the CPU");
  Config reshaped = m.config;
  reshaped.attention = AttentionStyle::ReshapeHeads;
  EXPECT_EQ(why_decoding_stays_on_the_cpu(reshaped, {}, plain), "this model's reshaped heads have no KV cache");
}

// Without the cache a beam recomputes every hypothesis' prefix at every step: wider than
// kMaxBeamWidthWithoutCache is refused with a message that says why; with the cache the full width is taken.
TEST(Decoder, BeamWithoutCacheIsNarrower) {
  Model m;
  Interventions no_causal;
  no_causal.causal_mask = false;
  DecodeOptions o;
  o.strategy = DecodeStrategy::Beam;
  o.max_length = 3;
  o.beam_width = kMaxBeamWidthWithoutCache + 1;
  EXPECT_NO_THROW(Decoder(m.config, m.weights, kSrc, Interventions{}, o));
  try {
    Decoder d(m.config, m.weights, kSrc, no_causal, o);
    ADD_FAILURE() << "a beam of " << o.beam_width << " without the cache was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("causal mask is off"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxBeamWidthWithoutCache)), std::string::npos) << e.what();
  }
  DecodeOptions no_cache = o;
  no_cache.use_kv_cache = false;
  EXPECT_THROW(validate_decode_options(Config{}, no_cache, Interventions{}), Error);
  EXPECT_NO_THROW(validate_decode_options(Config{}, o, Interventions{}));
  o.beam_width = kMaxBeamWidthWithoutCache;
  Decoder narrow(m.config, m.weights, kSrc, no_causal, o);
  EXPECT_FALSE(narrow.uses_kv_cache());
  EXPECT_GT(narrow.run(), 0);
}

// What decoding did, node by node: the same tokens, parents and steps (and log-probabilities within rounding).
void expect_same_decoding(const Decoder& got, const Decoder& want) {
  EXPECT_EQ(got.generated(), want.generated());
  EXPECT_EQ(got.finished(), want.finished());
  EXPECT_EQ(got.steps(), want.steps());
  ASSERT_EQ(got.tree().size(), want.tree().size());
  for (size_t i = 0; i < got.tree().size(); ++i) {
    EXPECT_EQ(got.tree()[i].token, want.tree()[i].token);
    EXPECT_EQ(got.tree()[i].parent, want.tree()[i].parent);
    EXPECT_EQ(got.tree()[i].step, want.tree()[i].step);
    EXPECT_NEAR(got.tree()[i].sum_logprob, want.tree()[i].sum_logprob, 1e-4f);
  }
  const Trace got_trace = got.trace(), want_trace = want.trace();
  EXPECT_LT((got_trace.logits - want_trace.logits).cwiseAbs().maxCoeff(), 1e-4f);
  ASSERT_EQ(got.last_distribution().size(), want.last_distribution().size());
  if (want.last_distribution().size() > 0) {
    EXPECT_LT((got.last_distribution() - want.last_distribution()).cwiseAbs().maxCoeff(), 1e-5f);
  }
  // The trace is complete: a pass whose output layer ran row by row has every row's probabilities too.
  ASSERT_EQ(got_trace.probs.rows(), want_trace.probs.rows());
  ASSERT_EQ(got_trace.probs.cols(), want_trace.probs.cols());
  EXPECT_LT((got_trace.probs - want_trace.probs).cwiseAbs().maxCoeff(), 1e-5f);
  // And every other tensor of it, however the pass was made (kept from a check, put together from the rows of
  // the checks, or computed for trace()).
  expect_traces_close(got_trace, want_trace);
}

// A decoder of kSrc that has run to the end.
Decoder decoded(const Model& m, const DecodeOptions& o, const Interventions& iv = {}) {
  Decoder d(m.config, m.weights, kSrc, iv, o);
  d.run();
  return d;
}

// Greedy decoding options stopping at `max_length` tokens.
DecodeOptions greedy_up_to(int max_length) {
  DecodeOptions o;
  o.max_length = max_length;
  return o;
}

// `tokens` with the one at `at` replaced by another word: a guess that is wrong there.
std::vector<int> with_word_replaced(std::vector<int> tokens, size_t at) {
  tokens[at] = tokens[at] == 7 ? 8 : 7;
  return tokens;
}

TEST(Decoder, PrefillTakesWhatGreedyWouldChooseInOnePass) {
  Model m;
  const DecodeOptions o = greedy_up_to(9);
  const Decoder plain = decoded(m, o);
  const std::vector<int> tokens = plain.generated();
  ASSERT_GE(tokens.size(), 4u);
  // The whole translation: every token taken, finished, the same tree, the same trace.
  Decoder fast(m.config, m.weights, kSrc, {}, o);
  EXPECT_EQ(GuidedRedecoder(fast).prefill(tokens), static_cast<int>(tokens.size()));
  expect_same_decoding(fast, plain);
  // Steps back and forward again as if stepped: the cache filled from the batched pass is the incremental one.
  ASSERT_TRUE(fast.step_back());
  ASSERT_TRUE(fast.step_back());
  ASSERT_TRUE(fast.step_back());
  fast.run();
  EXPECT_EQ(fast.generated(), tokens);
  // A candidate that differs at position 2: two tokens taken, the rest decoded step by step as before.
  Decoder partial(m.config, m.weights, kSrc, {}, o);
  EXPECT_EQ(GuidedRedecoder(partial).prefill(with_word_replaced(tokens, 2)), 2);
  EXPECT_FALSE(partial.finished());
  partial.run();
  EXPECT_EQ(partial.generated(), tokens);
  // Not for sampling, nor after the first step.
  DecodeOptions sample = o;
  sample.strategy = DecodeStrategy::Sample;
  Decoder s(m.config, m.weights, kSrc, {}, sample);
  EXPECT_EQ(GuidedRedecoder(s).prefill(tokens), 0);
  Decoder stepped(m.config, m.weights, kSrc, {}, o);
  stepped.step();
  EXPECT_EQ(GuidedRedecoder(stepped).prefill(tokens), 0);
}

TEST(Decoder, RunGuidedDecodesWhatRunDoesWhateverTheGuess) {
  Model m;
  DecodeOptions o = greedy_up_to(12);
  const Decoder plain = decoded(m, o);
  const std::vector<int> tokens = plain.generated();
  ASSERT_GE(tokens.size(), 5u);
  const std::vector<int> one_word = with_word_replaced(tokens, 2);
  std::vector<int> shifted = tokens;  // a word inserted
  shifted.insert(shifted.begin() + 1, 14);
  const std::vector<std::vector<int>> guesses = {tokens, one_word, shifted, {}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
                                                 std::vector<int>(tokens.begin(), tokens.begin() + 3)};
  for (const std::vector<int>& guess : guesses) {
    Decoder guided(m.config, m.weights, kSrc, {}, o);
    GuidedRedecoder(guided).run(guess);
    expect_same_decoding(guided, plain);
    // No pass is run again for the trace: it is a check's, or put together from the checks' rows.
    EXPECT_TRUE(guided.trace_kept() || guided.trace_assembled());
    // Its steps undo one by one, and stepping again gives the same tokens: the cache is the incremental one.
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(guided.step_back());
    guided.run();
    EXPECT_EQ(guided.generated(), tokens);
  }
  // With an intervention, a forced prefix, and a limit that stops decoding before <eos>.
  Interventions iv;
  iv.heads_off = {{AttentionKind::Decoder, 0, 2}, {AttentionKind::Cross, 1, 1}};
  iv.forced_prefix = {tokens[0], 17};
  for (int limit : {12, 4}) {
    o.max_length = limit;
    Decoder guided(m.config, m.weights, kSrc, iv, o);
    GuidedRedecoder(guided).run(tokens);
    expect_same_decoding(guided, decoded(m, o, iv));
  }
  // Other strategies, and decoders without an exact cache, decode as run() does.
  DecodeOptions beam = o;
  beam.strategy = DecodeStrategy::Beam;
  Decoder b2(m.config, m.weights, kSrc, {}, beam);
  GuidedRedecoder(b2).run(tokens);
  expect_same_decoding(b2, decoded(m, beam));
  Interventions open;
  open.causal_mask = false;
  const Decoder n1 = decoded(m, o, open);
  Decoder n2(m.config, m.weights, kSrc, open, o);
  GuidedRedecoder(n2).run(tokens);
  expect_same_decoding(n2, n1);
  Decoder n3(m.config, m.weights, kSrc, open, o);
  GuidedRedecoder(n3).run(n1.generated());
  expect_same_decoding(n3, n1);
  ASSERT_TRUE(n3.step_back());
  n3.run();
  expect_same_decoding(n3, n1);

  // Guesses that run to <eos> are checked in a full pass that becomes the trace, its output layer completed
  // (the random model never picks <eos> itself: a forced prefix ends the translation).
  const DecodeOptions twelve = greedy_up_to(12);
  Interventions to_eos;
  to_eos.forced_prefix = {6, 6, 6, 6, 6, m.config.eos_id};
  const std::vector<int> wrong_start = {7, 6, 6, 6, 6, m.config.eos_id};
  // With the cache: the first guessed token is wrong, then the rest of the guess is checked from position 2
  // (the rows before it are filled only because the pass is kept).
  const Decoder c1 = decoded(m, twelve, to_eos);
  ASSERT_TRUE(c1.finished());
  Decoder c2(m.config, m.weights, kSrc, to_eos, twelve);
  GuidedRedecoder(c2).run(wrong_start);
  expect_same_decoding(c2, c1);
  EXPECT_TRUE(c2.trace_kept());
  EXPECT_FALSE(c1.trace_kept());
  // Without a cache: the batch's last pass runs traced, its last row first, and is kept.
  Interventions open_to_eos = to_eos;
  open_to_eos.causal_mask = false;
  const Decoder u1 = decoded(m, twelve, open_to_eos);
  Decoder u2(m.config, m.weights, kSrc, open_to_eos, twelve);
  GuidedRedecoder(u2).run(u1.generated());
  expect_same_decoding(u2, u1);
  EXPECT_TRUE(u2.trace_kept());
}

// A translation that loops (as the shipped model's does with positions off: "while a woman , while a woman , ...")
// is guessed from its own earlier tokens: most of it is taken from checked guesses even with nothing to guess
// from, and it is still exactly what step-by-step decoding gives (the loop broken twice, and the free tokens
// after it, are where the guesses go wrong).
TEST(Decoder, RunGuidedGuessesATranslationThatRepeatsItselfFromItself) {
  Model m;
  const DecodeOptions o = greedy_up_to(36);
  Interventions loop;
  for (int i = 0; i < 9; ++i) loop.forced_prefix.insert(loop.forced_prefix.end(), {6, 7, 8});
  loop.forced_prefix[13] = 9;  // "... 6 7 8 6 9 8 6 7 8 ..."
  loop.forced_prefix.insert(loop.forced_prefix.end(), {11, 11, 11, 11, 11});  // a period of one
  ASSERT_EQ(loop.forced_prefix.size(), 32u);
  for (bool causal : {true, false}) {  // with the KV cache (chunks), and without (batches of prefix passes)
    Interventions iv = loop;
    iv.causal_mask = causal;
    const Decoder plain = decoded(m, o, iv);
    ASSERT_EQ(plain.generated().size(), 36u);
    for (const std::vector<int>& guess : {std::vector<int>(), std::vector<int>{3, 4, 5}}) {
      Decoder guided(m.config, m.weights, kSrc, iv, o);
      GuidedRedecoder redecoder(guided);
      redecoder.run(guess);
      expect_same_decoding(guided, plain);
      EXPECT_GE(redecoder.guessed(), 16) << (causal ? "with" : "without") << " the cache";
      // With the cache the traced pass is put together from the checks' rows (none is run for trace()), also
      // after stepping back: the rows of the shorter translation.
      EXPECT_EQ(guided.trace_assembled(), causal);
      ASSERT_EQ(guided.step_back(5), 5);
      EXPECT_EQ(guided.trace_assembled(), causal);
      Decoder stepped(m.config, m.weights, kSrc, iv, o);
      while (stepped.steps() < guided.steps()) stepped.step();
      expect_same_decoding(guided, stepped);
    }
  }
}

// A loop that varies its turn ("6 7 8" three times, then "6 7 9", again and again) is guessed by the commonest
// turn after the last tokens, not by a copy of the latest stretch: after "6 7 9 6 7" a copy would guess "9"
// where the loop goes on with "8". Found by counting what the checks fed: at most 4 rows a check, and almost
// every row fed is a token taken (a copy of the latest period feeds 52 rows for these 35 tokens, 17 of them
// wrong; the commonest turn 38, 3 of them wrong).
TEST(Decoder, RunGuidedGuessesAVaryingLoopByItsCommonestTurn) {
  Model m;
  const DecodeOptions o = greedy_up_to(36);
  const std::vector<int> turn = {6, 7, 8, 6, 7, 8, 6, 7, 8, 6, 7, 9};
  Interventions loop;
  for (int i = 0; i < 36; ++i) loop.forced_prefix.push_back(turn[static_cast<size_t>(i) % turn.size()]);
  const Decoder plain = decoded(m, o, loop);
  Decoder guided(m.config, m.weights, kSrc, loop, o);
  GuidedRedecoder redecoder(guided);
  redecoder.run({});
  expect_same_decoding(guided, plain);
  // 35 tokens after the first fed, one check per pass (the first, over <bos> alone, feeds nothing).
  EXPECT_LE(redecoder.rows_fed() - 35, 4);
  EXPECT_LE(redecoder.checks(), 14);
}

// A Chunk check writes its keys and values past the end of the hypothesis' own cache: only the latest check can
// be taken, and the decoder is unchanged by a check it does not take.
TEST(Decoder, GuidedTakesOnlyTheLatestCheck) {
  Model m;
  const DecodeOptions o = greedy_up_to(12);
  Interventions forced;
  forced.forced_prefix = {6, 7, 8, 9, 10, 11};
  const Decoder plain = decoded(m, o, forced);
  Decoder guided(m.config, m.weights, kSrc, forced, o);
  GuidedRedecoder redecoder(guided);
  ASSERT_EQ(redecoder.prefill({6}), 1);  // <bos> and 6 fed: a prediction in hand
  GuidedRedecoder::Verification first = redecoder.verify({7, 8, 9}, GuidedRedecoder::Check::Chunk);
  GuidedRedecoder::Verification second = redecoder.verify({7, 8, 5, 5}, GuidedRedecoder::Check::Chunk);
  EXPECT_EQ(first.tokens, (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(second.tokens, (std::vector<int>{7, 8}));
  EXPECT_EQ(guided.steps(), 1);
  EXPECT_THROW(redecoder.take(std::move(first)), Error);
  EXPECT_EQ(guided.steps(), 1);
  redecoder.take(std::move(second));
  EXPECT_EQ(guided.steps(), 3);
  guided.run();
  expect_same_decoding(guided, plain);
}

TEST(KvCache, PrefixesInOneBatchEqualTheirOwnPasses) {
  // Without the causal mask, and with a painted mask that lets query 1 see key 4 and one on cross-attention:
  // each prefix's last row equals the last row of a full pass over that prefix alone.
  for (NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
    Model m(placement);
    m.weights = random_weights(m.config, 7, 0.3f);
    for (bool causal : {false, true}) {
      Interventions iv;
      iv.causal_mask = causal;
      iv.heads_off = {{AttentionKind::Decoder, 1, 2}, {AttentionKind::Cross, 0, 1}};
      Mat painted = Mat::Zero(6, 6);
      for (int i = 0; i < 6; ++i)
        for (int j = i + 1; j < 6; ++j) painted(i, j) = causal ? 1.0f : 0.0f;
      painted(1, 4) = 0.0f;
      painted(3, 0) = 1.0f;
      Mat cross = Mat::Zero(6, static_cast<Eigen::Index>(kSrc.size()));
      cross(2, 1) = 1.0f;
      iv.custom_masks = {{{AttentionKind::Decoder, 0, 3}, painted}, {{AttentionKind::Cross, 1, 0}, cross}};
      Trace encoded;
      encode(m.config, m.weights, kSrc, iv, encoded);
      const KvCache keys = start_kv_cache(m.config, m.weights, encoded);
      const std::vector<int> tokens = {2, 6, 11, 4, 8, 1, 9, 13};  // a pad among them, masked as a key
      const std::vector<int> lengths = {2, 3, 5, 6, 8};
      const Mat logits = decode_prefixes(m.config, m.weights, encoded, tokens, lengths, *keys.cross);
      ASSERT_EQ(logits.rows(), 5);
      for (size_t j = 0; j < lengths.size(); ++j) {
        const std::vector<int> prefix(tokens.begin(), tokens.begin() + lengths[j]);
        const Interventions fitted = fit_decoder_masks(iv, static_cast<int>(kSrc.size()), lengths[j]);
        const Trace alone = forward(m.config, m.weights, kSrc, prefix, fitted);
        EXPECT_LT(mixed_error(logits.row(static_cast<Eigen::Index>(j)), alone.logits.bottomRows(1)), 1e-5f)
            << "placement " << int(placement) << " causal " << causal << " length " << lengths[j];
      }
    }
    Trace encoded;
    encode(m.config, m.weights, kSrc, {}, encoded);
    const KvCache keys = start_kv_cache(m.config, m.weights, encoded);
    EXPECT_THROW(decode_prefixes(m.config, m.weights, encoded, {2, 6}, {2, 2}, *keys.cross), Error);
    EXPECT_THROW(decode_prefixes(m.config, m.weights, encoded, {2, 6}, {3}, *keys.cross), Error);
    EXPECT_EQ(decode_prefixes(m.config, m.weights, encoded, {2, 6}, {}, *keys.cross).rows(), 0);
  }
}

TEST(Decoder, ReusesTheEncoderOnlyWhereNothingBeforeTheDecoderChanged) {
  Model m;
  Trace previous;
  encode(m.config, m.weights, kSrc, {}, previous);
  // Decoder-side changes: the encoder half is copied, with the new interventions, and decoding is unchanged.
  Interventions dec;
  dec.heads_off = {{AttentionKind::Decoder, 1, 0}, {AttentionKind::Cross, 0, 2}};
  dec.causal_mask = false;
  Trace reused;
  ASSERT_TRUE(reuse_encoder(m.config, previous, kSrc, dec, reused));
  EXPECT_EQ(reused.interventions, dec);
  EXPECT_EQ(reused.enc_out, previous.enc_out);
  EXPECT_FALSE(reused.has_decoder());
  DecodeOptions o;
  o.max_length = 6;
  Decoder a(m.config, m.weights, kSrc, dec, o), b(m.config, m.weights, kSrc, dec, o, &previous);
  a.run();
  b.run();
  expect_same_decoding(b, a);
  // Encoder-side changes, or another source: computed anew.
  Interventions enc;
  enc.heads_off = {{AttentionKind::Encoder, 1, 0}};
  Interventions positions;
  positions.positional_encoding = false;
  Interventions padding;
  padding.padding_mask = false;
  for (const Interventions& iv : {enc, positions, padding})
    EXPECT_FALSE(reuse_encoder(m.config, previous, kSrc, iv, reused));
  EXPECT_FALSE(reuse_encoder(m.config, previous, {5, 9, 12}, dec, reused));
  Decoder c(m.config, m.weights, kSrc, enc, o, &previous), d(m.config, m.weights, kSrc, enc, o);
  EXPECT_NE(c.encoded().enc_out, previous.enc_out);
  EXPECT_EQ(c.encoded().enc_out, d.encoded().enc_out);
  // Interventions the model cannot take are refused as encode() refuses them.
  Interventions bad;
  bad.heads_off = {{AttentionKind::Decoder, 9, 0}};
  EXPECT_THROW(reuse_encoder(m.config, previous, kSrc, bad, reused), Error);
}

TEST(Decoder, PaintedCausalMaskKeepsTheCache) {
  Model m;
  // Painted, causal, with one more cell blocked (query 3 may not see key 1): the cache stays exact, and the
  // decoder with it gives what the decoder without a cache gives.
  Interventions iv;
  Mat painted = Mat::Zero(5, 5);
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j) painted(i, j) = 1.0f;
  painted(3, 1) = 1.0f;
  iv.custom_masks = {{{AttentionKind::Decoder, 1, 0}, painted}, {{AttentionKind::Cross, 0, 3}, Mat::Zero(5, 6)}};
  iv.custom_masks[1].blocked(2, 4) = 1.0f;
  DecodeOptions o;
  o.max_length = 8;
  Decoder cached(m.config, m.weights, kSrc, iv, o);
  EXPECT_TRUE(cached.uses_kv_cache());
  cached.run();
  DecodeOptions no_cache = o;
  no_cache.use_kv_cache = false;
  Decoder full(m.config, m.weights, kSrc, iv, no_cache);
  EXPECT_FALSE(full.uses_kv_cache());
  full.run();
  expect_same_decoding(cached, full);
  const Trace t = cached.trace();
  EXPECT_EQ(t.decoder[1].self_attn.probs[0](3, 1), 0.0f);
  EXPECT_EQ(t.decoder[0].cross_attn.probs[3](2, 4), 0.0f);
}

TEST(Decoder, PaintedDecoderMaskAppliesToEveryPrefixPass) {
  Model m;
  // A decoder self-attention mask painted on a pass of 5 positions: head 1 of layer 0 may see the future
  // (everything allowed) except query 2 -> key 0.
  Interventions iv;
  Mat painted = Mat::Zero(5, 5);
  painted(2, 0) = 1.0f;
  iv.custom_masks.push_back({{AttentionKind::Decoder, 0, 1}, painted});
  // Fitting: a shorter pass takes the top-left block, a longer one the computed (causal) mask outside it.
  const Interventions short_pass = fit_decoder_masks(iv, static_cast<int>(kSrc.size()), 3);
  EXPECT_EQ(short_pass.custom_masks[0].blocked, painted.topLeftCorner(3, 3));
  const Interventions long_pass = fit_decoder_masks(iv, static_cast<int>(kSrc.size()), 7);
  EXPECT_EQ(long_pass.custom_masks[0].blocked.topLeftCorner(5, 5), painted);
  EXPECT_EQ(long_pass.custom_masks[0].blocked(5, 6), 1.0f);  // causal outside the painted block
  EXPECT_EQ(long_pass.custom_masks[0].blocked(6, 5), 0.0f);
  EXPECT_EQ(long_pass.custom_masks[0].blocked(1, 6), 1.0f);
  // Decoding with it: every step is the argmax of a full pass with the fitted mask, and the trace of the last
  // pass carries the mask (query 0 of head 1 attends to later positions, query 2 not to key 0).
  DecodeOptions o;
  o.max_length = 7;
  Decoder d(m.config, m.weights, kSrc, iv, o);
  EXPECT_FALSE(d.uses_kv_cache());
  d.run();
  std::vector<int> input = {m.config.bos_id};
  for (int token : d.generated()) {
    const Interventions fitted = fit_decoder_masks(iv, static_cast<int>(kSrc.size()), static_cast<int>(input.size()));
    EXPECT_EQ(argmax(forward(m.config, m.weights, kSrc, input, fitted).logits.bottomRows(1)), token);
    input.push_back(token);
  }
  const Trace t = d.trace();
  const Mat& probs = t.decoder[0].self_attn.probs[1];
  ASSERT_GE(probs.rows(), 5);
  EXPECT_GT(probs(0, 4), 0.0f);  // inside the painted block: allowed
  EXPECT_EQ(probs(2, 0), 0.0f);
  EXPECT_EQ(t.decoder[0].self_attn.probs[0](0, 4), 0.0f);  // other heads stay causal
  if (probs.cols() > 5) {
    EXPECT_EQ(probs(0, 5), 0.0f);  // outside it: the computed (causal) mask
  }
}

}  // namespace
}  // namespace sf
