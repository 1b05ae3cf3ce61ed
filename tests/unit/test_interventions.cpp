// Interventions (heads off, masks, positions), recomputing only what they affect, trace names, typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "forward_fixture.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

using testing::random_weights;
using testing::small_config;

struct Fixture {
  Config config = small_config();
  ModelWeights weights = random_weights(config, 7);
  std::vector<int> src = {5, 9, 12, 7, 1, 1};  // two pads at the end (pad_id 1)
  std::vector<int> tgt = {2, 6, 11, 4, 8};
};

float max_abs_diff(const Mat& a, const Mat& b) { return (a - b).cwiseAbs().maxCoeff(); }

void expect_traces_equal(const Trace& a, const Trace& b) {
  auto ta = trace_tensors(a), tb = trace_tensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i].name, tb[i].name);
    ASSERT_EQ(ta[i].tensor.shape, tb[i].tensor.shape) << ta[i].name;
    EXPECT_EQ(ta[i].tensor.data, tb[i].tensor.data) << ta[i].name;  // same computation: bit-identical
  }
}

TEST(Interventions, HeadOffZeroesItsContribution) {
  Fixture f;
  Interventions iv;
  const int keep = 2, H = f.config.n_heads, D = f.config.head_dim();
  for (int h = 0; h < H; ++h)
    if (h != keep) iv.heads_off.push_back({AttentionKind::Encoder, 1, h});
  const Trace t = forward(f.config, f.weights, f.src, f.tgt, iv);
  const AttentionTrace& a = t.encoder[1].self_attn;
  for (int h = 0; h < H; ++h)
    if (h != keep) {
      EXPECT_EQ(a.head_out[static_cast<size_t>(h)].cwiseAbs().maxCoeff(), 0.0f);
    }
  // With one head left, attn_out = head_keep W_o[:, keep*D : keep*D+D]^T + b_o.
  const LinearWeights& wo = f.weights.encoder_layers[1].self_attn.out;
  Mat expected = a.head_out[keep] * wo.weight.middleCols(keep * D, D).transpose();
  expected.rowwise() += wo.bias;
  EXPECT_LT(max_abs_diff(a.attn_out, expected), 1e-5f);
  // Its probabilities are still traced (the head computes, its output is dropped).
  EXPECT_NEAR(a.probs[0].row(0).sum(), 1.0f, 1e-5f);
  // Other layers are untouched.
  const Trace base = forward(f.config, f.weights, f.src, f.tgt);
  EXPECT_EQ(max_abs_diff(base.encoder[0].out, t.encoder[0].out), 0.0f);
  EXPECT_GT(max_abs_diff(base.enc_out, t.enc_out), 1e-4f);
}

TEST(Interventions, CrossAndDecoderHeadsOff) {
  Fixture f;
  Interventions iv;
  iv.heads_off = {{AttentionKind::Cross, 0, 1}, {AttentionKind::Decoder, 1, 3}};
  const Trace t = forward(f.config, f.weights, f.src, f.tgt, iv);
  EXPECT_EQ(t.decoder[0].cross_attn.head_out[1].cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(t.decoder[1].self_attn.head_out[3].cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_GT(t.decoder[0].cross_attn.head_out[0].cwiseAbs().maxCoeff(), 0.0f);
  // Each switch reaches only its own kind, layer and head: the same head index of the other kind in the same
  // layer, and the same kind and head in the other layer, still compute.
  EXPECT_GT(t.decoder[0].self_attn.head_out[1].cwiseAbs().maxCoeff(), 0.0f) << "cross.0.1 switched off dec.0.1";
  EXPECT_GT(t.decoder[1].cross_attn.head_out[3].cwiseAbs().maxCoeff(), 0.0f) << "dec.1.3 switched off cross.1.3";
  EXPECT_GT(t.decoder[1].cross_attn.head_out[1].cwiseAbs().maxCoeff(), 0.0f) << "cross.0.1 switched off cross.1.1";
  EXPECT_GT(t.encoder[0].self_attn.head_out[1].cwiseAbs().maxCoeff(), 0.0f) << "cross.0.1 switched off enc.0.1";
  // The first decoder layer's self-attention runs before any switched-off head: it is exactly as without them.
  const Trace base = forward(f.config, f.weights, f.src, f.tgt);
  EXPECT_EQ(max_abs_diff(base.decoder[0].self_attn.attn_out, t.decoder[0].self_attn.attn_out), 0.0f);
}

TEST(Interventions, CausalMask) {
  Fixture f;
  const Trace on = forward(f.config, f.weights, f.src, f.tgt);
  Interventions iv;
  iv.causal_mask = false;
  const Trace off = forward(f.config, f.weights, f.src, f.tgt, iv);
  const Eigen::Index T = static_cast<Eigen::Index>(f.tgt.size());
  for (const Mat& p : on.decoder[0].self_attn.probs)
    for (Eigen::Index i = 0; i < T; ++i)
      for (Eigen::Index j = i + 1; j < T; ++j) EXPECT_EQ(p(i, j), 0.0f);
  EXPECT_GT(off.decoder[0].self_attn.probs[0](0, T - 1), 0.0f);  // position 0 sees the last one
  EXPECT_EQ(on.decoder[0].self_attn.mask_matrix(0)(0, 1), 1.0f);
  EXPECT_EQ(off.decoder[0].self_attn.mask_matrix(0)(0, 1), 0.0f);
  // Causal mask on: the first row of the decoder does not depend on later tokens.
  std::vector<int> other = f.tgt;
  other.back() = 13;
  const Trace changed = forward(f.config, f.weights, f.src, other);
  EXPECT_EQ(max_abs_diff(changed.logits.row(0), on.logits.row(0)), 0.0f);
}

TEST(Interventions, PaddingMask) {
  Fixture f;
  const Trace on = forward(f.config, f.weights, f.src, f.tgt);
  for (int h = 0; h < f.config.n_heads; ++h) {
    EXPECT_EQ(on.encoder[0].self_attn.probs[h].rightCols(2).cwiseAbs().maxCoeff(), 0.0f);
    EXPECT_EQ(on.decoder[1].cross_attn.probs[h].rightCols(2).cwiseAbs().maxCoeff(), 0.0f);
    EXPECT_EQ(on.encoder[0].self_attn.mask_matrix(h)(0, 5), 1.0f);
  }
  Interventions iv;
  iv.padding_mask = false;
  const Trace off = forward(f.config, f.weights, f.src, f.tgt, iv);
  EXPECT_GT(off.encoder[0].self_attn.probs[0](0, 5), 0.0f);
  EXPECT_GT(off.decoder[0].cross_attn.probs[0](0, 5), 0.0f);
  // Without pads the padding mask changes nothing.
  const std::vector<int> no_pads = {5, 9, 12, 7};
  expect_traces_equal(forward(f.config, f.weights, no_pads, f.tgt),
                      [&] { Trace t = forward(f.config, f.weights, no_pads, f.tgt, iv); t.interventions = {}; return t; }());
  // Pads in the decoder input are masked as keys of decoder self-attention.
  const std::vector<int> tgt_pad = {2, 6, 1, 4};
  const Trace t = forward(f.config, f.weights, f.src, tgt_pad);
  EXPECT_EQ(t.decoder[0].self_attn.probs[0](3, 2), 0.0f);
}

TEST(Interventions, CustomMask) {
  Fixture f;
  const Eigen::Index T = static_cast<Eigen::Index>(f.tgt.size());
  Interventions iv;
  CustomMask m;
  m.where = {AttentionKind::Decoder, 0, 1};
  m.blocked = Mat::Zero(T, T);  // everything allowed: head 1 of dec layer 0 sees the future
  m.blocked(2, 0) = 1.0f;       // ... except cell (2, 0)
  iv.custom_masks.push_back(m);
  const Trace t = forward(f.config, f.weights, f.src, f.tgt, iv);
  const AttentionTrace& a = t.decoder[0].self_attn;
  EXPECT_EQ(a.probs[1](2, 0), 0.0f);
  EXPECT_GT(a.probs[1](0, 4), 0.0f);
  EXPECT_EQ(a.probs[0](0, 4), 0.0f);  // the other heads keep the causal mask
  EXPECT_EQ(a.mask_matrix(1), m.blocked);
  // The trace keeps each attention's mask, not a matrix per head: one cell (blocked) says what the matrix says, for
  // the painted head, the causal ones, and the padded keys of the encoder and the cross-attention; no cell outside.
  Mat causal = Mat::Zero(T, T);
  for (Eigen::Index i = 0; i < T; ++i) causal.row(i).tail(T - 1 - i).setOnes();
  EXPECT_EQ(a.mask_matrix(0), causal);
  for (const AttentionTrace* each : {&a, &t.encoder[0].self_attn, &t.decoder[1].cross_attn})
    for (size_t h = 0; h < each->probs.size(); ++h) {
      const Mat matrix = each->mask_matrix(h);
      ASSERT_EQ(matrix.rows(), each->probs[h].rows());
      ASSERT_EQ(matrix.cols(), each->probs[h].cols());
      for (Eigen::Index i = 0; i < matrix.rows(); ++i)
        for (Eigen::Index j = 0; j < matrix.cols(); ++j)
          EXPECT_EQ(each->blocked(h, i, j), matrix(i, j) > 0.5f) << h << " (" << i << ", " << j << ")";
      EXPECT_FALSE(each->blocked(h, matrix.rows(), 0));
      EXPECT_FALSE(each->blocked(h, 0, -1));
    }
  EXPECT_TRUE(t.decoder[1].cross_attn.blocked(0, 0, static_cast<Eigen::Index>(f.src.size()) - 1));  // a pad
  EXPECT_EQ(a.mask_matrix(a.probs.size()).size(), 0) << "no such head";
  // A fully blocked row attends to nothing: zeros, not NaN.
  iv.custom_masks[0].blocked.row(3).setOnes();
  const Trace z = forward(f.config, f.weights, f.src, f.tgt, iv);
  EXPECT_EQ(z.decoder[0].self_attn.probs[1].row(3).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_TRUE(z.logits.allFinite());
  // Wrong size: a typed error.
  iv.custom_masks[0].blocked = Mat::Zero(T, T + 1);
  try {
    forward(f.config, f.weights, f.src, f.tgt, iv);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("dec.1.2"), std::string::npos) << e.what();  // numbered from 1
  }
}

TEST(Interventions, PositionalEncodingOff) {
  Fixture f;
  Interventions iv;
  iv.positional_encoding = false;
  const Trace t = forward(f.config, f.weights, f.src, f.tgt, iv);
  EXPECT_EQ(t.src.pos.cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(t.src.sum, t.src.tok_embed);
  EXPECT_EQ(t.tgt.sum, t.tgt.tok_embed);
  // Without positions the encoder is permutation-equivariant: swapping two source tokens swaps their rows.
  const std::vector<int> a = {5, 9, 12, 7}, b = {9, 5, 12, 7};
  const Trace ta = forward(f.config, f.weights, a, f.tgt, iv), tb = forward(f.config, f.weights, b, f.tgt, iv);
  EXPECT_LT(max_abs_diff(ta.enc_out.row(0), tb.enc_out.row(1)), 1e-5f);
  EXPECT_LT(max_abs_diff(ta.enc_out.row(2), tb.enc_out.row(2)), 1e-5f);
  const Trace with = forward(f.config, f.weights, a, f.tgt), with_b = forward(f.config, f.weights, b, f.tgt);
  EXPECT_GT(max_abs_diff(with.enc_out.row(0), with_b.enc_out.row(1)), 1e-3f);
}

TEST(Recompute, OnlyAffectedStagesAndEqualToFullForward) {
  for (NormPlacement placement : {NormPlacement::Post, NormPlacement::Pre}) {
    Fixture f;
    f.config.norm_placement = placement;
    const Trace base = forward(f.config, f.weights, f.src, f.tgt);
    auto check = [&](const Interventions& iv, int enc_from, int dec_from) {
      Trace t = base;
      const RecomputePlan plan = recompute(f.config, f.weights, iv, t);
      EXPECT_EQ(plan.encoder_from, enc_from);
      EXPECT_EQ(plan.decoder_from, dec_from);
      expect_traces_equal(t, forward(f.config, f.weights, f.src, f.tgt, iv));
      // ... and back again.
      recompute(f.config, f.weights, Interventions{}, t);
      expect_traces_equal(t, base);
    };
    const int Le = f.config.n_encoder_layers, Ld = f.config.n_decoder_layers;
    Interventions iv;
    check(iv, Le, Ld);                                   // nothing changed, nothing rerun
    iv.heads_off = {{AttentionKind::Decoder, 1, 0}};
    check(iv, Le, 1);                                    // decoder-only: the encoder is not rerun
    iv.heads_off = {{AttentionKind::Cross, 0, 2}};
    check(iv, Le, 0);
    iv.heads_off = {{AttentionKind::Encoder, 1, 3}};
    check(iv, 1, 0);                                     // encoder layer 1 on, then every decoder layer
    iv = {};
    iv.causal_mask = false;
    check(iv, Le, 0);
    iv = {};
    iv.padding_mask = false;
    check(iv, 0, 0);
    iv = {};
    iv.positional_encoding = false;
    check(iv, -1, -1);
    iv = {};
    iv.custom_masks.push_back({{AttentionKind::Encoder, 1, 0}, Mat::Zero(6, 6)});
    check(iv, 1, 0);
    iv = {};
    iv.forced_prefix = {4, 5};                           // a decoding intervention: no pass changes
    check(iv, Le, Ld);
  }
}

TEST(Recompute, BadInterventionLeavesTheTraceUnchanged) {
  Fixture f;
  Trace t = forward(f.config, f.weights, f.src, f.tgt);
  const Trace before = t;
  Interventions bad;
  bad.heads_off = {{AttentionKind::Encoder, 0, 1}};
  bad.custom_masks.push_back({{AttentionKind::Cross, 1, 0}, Mat::Zero(5, 5)});  // needs (5, 6)
  EXPECT_THROW(recompute(f.config, f.weights, bad, t), Error);
  expect_traces_equal(t, before);
  EXPECT_EQ(t.interventions, before.interventions);
  EXPECT_THROW(forward(f.config, f.weights, f.src, {2, 99}, {}, t), Error);  // bad target id
  expect_traces_equal(t, before);
  EXPECT_THROW(forward(f.config, f.weights, f.src, f.tgt, bad, t), Error);
  expect_traces_equal(t, before);
}

TEST(Trace, NamesAndShapes) {
  Fixture f;
  const Trace t = forward(f.config, f.weights, f.src, f.tgt);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& nt : trace_tensors(t)) {
    EXPECT_TRUE(shapes.emplace(nt.name, nt.tensor.shape).second) << "duplicate " << nt.name;
    EXPECT_EQ(static_cast<int64_t>(nt.tensor.data.size()), nt.tensor.numel()) << nt.name;
  }
  const int64_t S = 6, T = 5, C = 16, H = 4, D = 4, V = 25, F = 32;
  const std::map<std::string, std::vector<int64_t>> required = {
      {"src.tok_embed", {S, C}}, {"src.pos", {S, C}}, {"enc.in", {S, C}},
      {"enc.1.self_attn.q", {H, S, D}}, {"enc.1.self_attn.k", {H, S, D}}, {"enc.1.self_attn.v", {H, S, D}},
      {"enc.1.self_attn.scores", {H, S, S}}, {"enc.1.self_attn.probs", {H, S, S}},
      {"enc.1.self_attn.mask", {H, S, S}}, {"enc.1.self_attn.heads_out", {S, C}},
      {"enc.1.self_attn.attn_out", {S, C}}, {"enc.1.norm1_mean", {S}}, {"enc.1.ffn_hidden", {S, F}},
      {"enc.1.out", {S, C}}, {"enc.out", {S, C}}, {"tgt.tok_embed", {T, C}}, {"tgt.pos", {T, C}},
      {"dec.in", {T, C}}, {"dec.0.self_attn.q", {H, T, D}}, {"dec.0.self_attn.scores", {H, T, T}},
      {"dec.0.self_attn.probs", {H, T, T}}, {"dec.0.cross_attn.q", {H, T, D}},
      {"dec.0.cross_attn.k", {H, S, D}}, {"dec.0.cross_attn.v", {H, S, D}},
      {"dec.0.cross_attn.scores", {H, T, S}}, {"dec.0.cross_attn.probs", {H, T, S}}, {"dec.0.norm3", {T, C}},
      {"dec.1.out", {T, C}}, {"dec.out", {T, C}}, {"logits", {T, V}}, {"probs", {T, V}}};
  for (const auto& [name, shape] : required) {
    ASSERT_TRUE(shapes.count(name)) << name;
    EXPECT_EQ(shapes[name], shape) << name;
  }
  // Each name holds its own tensor (not only its shape): a few checked value for value against the trace.
  std::map<std::string, const Tensor*> by_name;
  const std::vector<NamedTensor> named = trace_tensors(t);
  for (const auto& nt : named) by_name[nt.name] = &nt.tensor;
  const auto expect_holds = [&](const std::string& name, const Tensor& want) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_EQ(by_name[name]->data, want.data) << name;
  };
  const AttentionTrace& a = t.encoder[1].self_attn;
  expect_holds("enc.1.self_attn.q", Tensor::from_heads(a.q));
  expect_holds("enc.1.self_attn.k", Tensor::from_heads(a.k));
  expect_holds("enc.1.self_attn.v", Tensor::from_heads(a.v));
  expect_holds("enc.1.self_attn.scores", Tensor::from_heads(a.scores));
  expect_holds("enc.1.self_attn.probs", Tensor::from_heads(a.probs));
  // The encoder's mask blocks the source's two pads as keys, in every head and row.
  Mat pads = Mat::Zero(static_cast<Eigen::Index>(f.src.size()), static_cast<Eigen::Index>(f.src.size()));
  pads.rightCols(2).setOnes();
  expect_holds("enc.1.self_attn.mask",
               Tensor::from_heads(std::vector<Mat>(static_cast<size_t>(f.config.n_heads), pads)));
  expect_holds("dec.0.cross_attn.probs", Tensor::from_heads(t.decoder[0].cross_attn.probs));
  expect_holds("dec.1.norm2", Tensor::from_mat(t.decoder[1].norm2.out));
  expect_holds("enc.0.ffn_hidden", Tensor::from_mat(t.encoder[0].ffn.hidden));
  expect_holds("logits", Tensor::from_mat(t.logits));
  expect_holds("probs", Tensor::from_mat(t.probs));
  // Probabilities are distributions, and scores are recorded before the mask.
  EXPECT_LT((t.probs.rowwise().sum().array() - 1.0f).abs().maxCoeff(), 1e-5f);
  EXPECT_TRUE(t.decoder[0].self_attn.scores[0].allFinite());
}

void expect_input_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    FAIL() << "no error (expected one mentioning '" << needle << "')";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ForwardErrors, Typed) {
  Fixture f;
  auto run = [&](std::vector<int> src, std::vector<int> tgt, Interventions iv = {}) {
    return [=, &f] { forward(f.config, f.weights, src, tgt, iv); };
  };
  expect_input_error(run({5, 30}, f.tgt), "outside the source vocabulary");
  expect_input_error(run(f.src, {2, -1}), "outside the target vocabulary");
  expect_input_error(run({}, f.tgt), "source sequence is empty");
  expect_input_error(run(f.src, {}), "target sequence is empty");
  expect_input_error(run(std::vector<int>(41, 5), f.tgt), "at most 40");
  Interventions iv;
  iv.heads_off = {{AttentionKind::Encoder, 2, 0}};
  expect_input_error(run(f.src, f.tgt, iv), "enc layer 3, but the model has 2 (numbered from 1)");
  iv.heads_off = {{AttentionKind::Cross, 0, 4}};
  expect_input_error(run(f.src, f.tgt, iv), "head 5, but the model has 4 heads");
  iv.heads_off = {};
  iv.custom_masks = {{{AttentionKind::Decoder, 5, 0}, Mat::Zero(5, 5)}};
  expect_input_error(run(f.src, f.tgt, iv), "dec layer 6");
  expect_input_error([] { parse_head_ref("enc.1"); }, "KIND.LAYER.HEAD");
  expect_input_error([] { parse_head_ref("att.1.2"); }, "KIND.LAYER.HEAD");
  expect_input_error([] { parse_head_ref("dec.x.2"); }, "KIND.LAYER.HEAD");
  // Numbered from 1 where people type them, from 0 in files (the tensor names' indices).
  EXPECT_EQ(parse_head_ref("cross.2.4"), (HeadRef{AttentionKind::Cross, 1, 3}));
  EXPECT_EQ(head_ref_text({AttentionKind::Cross, 1, 3}), "cross.2.4");
  EXPECT_EQ(parse_head_index("cross.1.3"), (HeadRef{AttentionKind::Cross, 1, 3}));
  EXPECT_EQ(head_index_text({AttentionKind::Cross, 1, 3}), "cross.1.3");
  expect_input_error([] { parse_head_ref("enc.0.3"); }, "numbered from 1, as in the paper");
  expect_input_error([] { parse_head_ref("enc.1.0"); }, "Stepformer 0.1 counted them from 0");
  EXPECT_EQ(parse_head_ref("dec.1.1"), (HeadRef{AttentionKind::Decoder, 0, 0}));
}

TEST(NnOps, MaskedSoftmaxAndLayerNorm) {
  Mat scores(2, 3);
  scores << 1, 2, 3, 4, 5, 6;
  Mat blocked = Mat::Zero(2, 3);
  blocked(0, 2) = 1;
  blocked.row(1).setOnes();
  Mat probs;
  masked_softmax(scores, blocked, probs);
  EXPECT_NEAR(probs(0, 0), 1.0f / (1.0f + std::exp(1.0f)), 1e-6f);
  EXPECT_EQ(probs(0, 2), 0.0f);
  EXPECT_EQ(probs.row(1).cwiseAbs().maxCoeff(), 0.0f);
  LayerNormWeights w{RowVec::Ones(3), RowVec::Zero(3)};
  LayerNormTrace t;
  layer_norm_forward(scores, w, 0.0f, t);
  EXPECT_NEAR(t.mean(1), 5.0f, 1e-6f);
  EXPECT_NEAR(t.std(1), std::sqrt(2.0f / 3.0f), 1e-6f);
  EXPECT_NEAR(t.out(1, 2), 1.0f / std::sqrt(2.0f / 3.0f), 1e-5f);
  // eps inside the root, gamma and beta applied: y = gamma (x - mean) / sqrt(var + eps) + beta.
  const LayerNormWeights affine{RowVec::Constant(3, 2.0f), RowVec::Constant(3, 0.5f)};
  layer_norm_forward(scores, affine, 0.25f, t);
  EXPECT_NEAR(t.std(0), std::sqrt(2.0f / 3.0f + 0.25f), 1e-6f);
  EXPECT_NEAR(t.out(0, 0), 2.0f * -1.0f / std::sqrt(2.0f / 3.0f + 0.25f) + 0.5f, 1e-5f);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// Found by the monkey test: `mask enc.-1.0 0 0` read the trace at layer -1 (a use after free under ASan).
TEST(HeadRefs, ANegativeLayerOrHeadIsRefusedWhenParsed) {
  for (const char* text : {"enc.-1.1", "dec.1.-2", "cross.-0.-0", "enc.0.1"}) {
    try {
      parse_head_ref(text);
      FAIL() << text << " parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      EXPECT_NE(std::string(e.what()).find("numbered from 1"), std::string::npos) << e.what();
    }
  }
  for (const char* text : {"enc.-1.0", "dec.0.-2"}) {  // indices in files
    try {
      parse_head_index(text);
      FAIL() << text << " parsed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sf
