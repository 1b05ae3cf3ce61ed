// transformer/layer_order.h on a backend of formulas: each tensor is the expression that made it, so the layers'
// order, forward and backward, is checked against the tables of the paper (post-norm) and of norm_first
// (pre-norm) as written, apart from any kernel. The numbers of the CPU's instantiation are checked against
// PyTorch in test_forward_pytorch.cpp and test_training_gradients.cpp; the CUDA backend runs the same templates.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transformer/layer_order.h"

namespace {

using Formula = std::string;

struct Norm {
  std::string name;          // "LN1", ...
  mutable int backward = 0;  // its gradient's accumulations (the grads' copy counts them)
};
struct NormRecord {
  Formula out;
};
struct FfnRecord {
  Formula out;
};
struct AttnRecord {
  Formula attn_out;
};
struct LayerWeights {
  Norm self_attn_norm{"LN1"}, cross_attn_norm{"LNc"}, ffn_norm{"LN2"};
};
struct EncoderRecord {
  AttnRecord self_attn;
  Formula residual1, residual2, out, self_attn_keep, ffn_keep;
  NormRecord norm1, norm2;
  FfnRecord ffn;
};
struct DecoderRecord {
  AttnRecord self_attn, cross_attn;
  Formula residual1, residual2, residual3, out, self_attn_keep, cross_attn_keep, ffn_keep;
  NormRecord norm1, norm2, norm3;
  FfnRecord ffn;
};

// The operations of the seam, writing formulas. drop(f) marks the residual's dropout; K the mask it made.
struct FormulaOps {
  const Formula& layer_norm(const Formula& x, const Norm& w, NormRecord& t) {
    t.out = w.name + "(" + x + ")";
    return t.out;
  }
  void residual(const Formula& x, const Formula& f, Formula& keep, Formula& sum) {
    keep = Formula("K");  // (moved in: assigning the literal, GCC 12 warns falsely of overlapping copies)
    sum = x + " + drop(" + f + ")";
  }
  void feed_forward(const Formula& x, const LayerWeights&, FfnRecord& t) { t.out = "FFN(" + x + ")"; }

  Formula layer_norm_backward(const Formula& x, const NormRecord& t, const Norm& w, const Norm& g, const Formula& dy) {
    EXPECT_EQ(t.out, w.name + "(" + x + ")") << "the backward of " << w.name << " reads its own input";
    ++g.backward;
    return w.name + "'[" + dy + "]";
  }
  Formula feed_forward_backward(const Formula& x, const FfnRecord& t, const LayerWeights&, const LayerWeights&,
                                const Formula& dy) {
    EXPECT_EQ(t.out, "FFN(" + x + ")") << "the feed-forward's backward reads its own input";
    return "FFN'[" + dy + "]";
  }
  Formula times_keep(const Formula& d, const Formula& keep) { return d + "*" + keep; }
  Formula add(const Formula& a, const Formula& b) { return "(" + a + " + " + b + ")"; }
};

auto self_attention() {
  return [](const Formula& x, const Formula& in, AttnRecord& a) -> const Formula& {
    a.attn_out = "SA(" + in + ")";
    return x;
  };
}
auto cross_attention() {
  return [](const Formula& h, AttnRecord& a) { a.attn_out = "CA(" + h + ")"; };
}
// Backward of an attention: the formula of dL/d(in), checking that it is handed its own record.
auto attention_backward(const char* name) {
  return [name](const Formula& in, const AttnRecord& a, const Formula& d) {
    EXPECT_EQ(a.attn_out, std::string(name) + "(" + in + ")") << name << "'s backward reads its own input";
    return std::string(name) + "'[" + d + "]";
  };
}

TEST(LayerOrder, EncoderLayerFollowsThePostAndPreNormTables) {
  for (bool post : {true, false}) {
    SCOPED_TRACE(post ? "post-norm" : "pre-norm");
    FormulaOps ops;
    LayerWeights w;
    EncoderRecord t;
    sf::layer_order::encoder_layer(ops, post, w, Formula("x"), self_attention(), t);
    if (post) {  // the paper's: h = LN(x + drop(SelfAttn(x)));  out = LN(h + drop(FFN(h)))
      const Formula h = "LN1(x + drop(SA(x)))";
      EXPECT_EQ(t.residual1, "x + drop(SA(x))");
      EXPECT_EQ(t.norm1.out, h);
      EXPECT_EQ(t.out, "LN2(" + h + " + drop(FFN(" + h + ")))");
    } else {  // norm_first: h = x + drop(SelfAttn(LN(x)));  out = h + drop(FFN(LN(h)))
      const Formula h = "x + drop(SA(LN1(x)))";
      EXPECT_EQ(t.residual1, h);
      EXPECT_EQ(t.norm2.out, "LN2(" + h + ")");
      EXPECT_EQ(t.out, h + " + drop(FFN(LN2(" + h + ")))");
    }
    EXPECT_EQ(t.self_attn_keep, "K");
    EXPECT_EQ(t.ffn_keep, "K");
  }
}

TEST(LayerOrder, DecoderLayerHasCrossAttentionBetween) {
  FormulaOps ops;
  LayerWeights w;
  DecoderRecord post, pre;
  sf::layer_order::decoder_layer(ops, true, true, w, Formula("y"), self_attention(), cross_attention(), post);
  const Formula h1 = "LN1(y + drop(SA(y)))", h2 = "LNc(" + h1 + " + drop(CA(" + h1 + ")))";
  EXPECT_EQ(post.norm2.out, h2);
  EXPECT_EQ(post.out, "LN2(" + h2 + " + drop(FFN(" + h2 + ")))");

  sf::layer_order::decoder_layer(ops, false, true, w, Formula("y"), self_attention(), cross_attention(), pre);
  const Formula r1 = "y + drop(SA(LN1(y)))", r2 = r1 + " + drop(CA(LNc(" + r1 + ")))";
  EXPECT_EQ(pre.residual2, r2);
  EXPECT_EQ(pre.out, r2 + " + drop(FFN(LN2(" + r2 + ")))");
}

TEST(LayerOrder, DecoderQueryRowsGoOnThroughTheResidual) {
  // A pass that wants fewer outputs: the self-attention reads every row (keys, values) and hands back the rows
  // of x that go on; the residual adds them, not x.
  FormulaOps ops;
  LayerWeights w;
  DecoderRecord t;
  const Formula rows = "y[last]";
  auto self = [&](const Formula&, const Formula& in, AttnRecord& a) -> const Formula& {
    a.attn_out = "SA(" + in + ")[last]";
    return rows;
  };
  sf::layer_order::decoder_layer(ops, false, true, w, Formula("y"), self, cross_attention(), t);
  EXPECT_EQ(t.norm1.out, "LN1(y)");  // every row normalised: they all give keys and values
  EXPECT_EQ(t.residual1, "y[last] + drop(SA(LN1(y))[last])");
}

TEST(LayerOrder, EncoderBackwardIsTheAdjointOfItsForward) {
  for (bool post : {true, false}) {
    SCOPED_TRACE(post ? "post-norm" : "pre-norm");
    FormulaOps ops;
    LayerWeights w, g;
    EncoderRecord t;
    sf::layer_order::encoder_layer(ops, post, w, Formula("x"), self_attention(), t);
    const Formula dx = sf::layer_order::encoder_layer_backward(ops, post, w, g, Formula("x"), t,
                                                               attention_backward("SA"), Formula("d"));
    if (post) {
      // out = LN2(r2), r2 = h + drop(FFN(h)), h = LN1(r1), r1 = x + drop(SA(x)):
      //   dr2 = LN2'(d);  dh = dr2 + FFN'(dr2 K);  dr1 = LN1'(dh);  dx = dr1 + SA'(dr1 K)
      const Formula dr2 = "LN2'[d]", dh = "(" + dr2 + " + FFN'[" + dr2 + "*K])", dr1 = "LN1'[" + dh + "]";
      EXPECT_EQ(dx, "(" + dr1 + " + SA'[" + dr1 + "*K])");
    } else {
      // out = r1 + drop(FFN(LN2(r1))), r1 = x + drop(SA(LN1(x))):
      //   dr1 = d + LN2'(FFN'(d K));  dx = dr1 + LN1'(SA'(dr1 K))
      const Formula dr1 = "(d + LN2'[FFN'[d*K]])";
      EXPECT_EQ(dx, "(" + dr1 + " + LN1'[SA'[" + dr1 + "*K]])");
    }
    EXPECT_EQ(g.self_attn_norm.backward, 1);
    EXPECT_EQ(g.ffn_norm.backward, 1);
    EXPECT_EQ(g.cross_attn_norm.backward, 0);
    EXPECT_EQ(w.self_attn_norm.backward + w.ffn_norm.backward, 0) << "gradients go to the grads, not the weights";
  }
}

TEST(LayerOrder, DecoderBackwardRunsItsThreeBlocksLastFirst) {
  for (bool post : {true, false}) {
    SCOPED_TRACE(post ? "post-norm" : "pre-norm");
    FormulaOps ops;
    LayerWeights w, g;
    DecoderRecord t;
    sf::layer_order::decoder_layer(ops, post, true, w, Formula("y"), self_attention(), cross_attention(), t);
    const Formula dy = sf::layer_order::decoder_layer_backward(ops, post, true, w, g, Formula("y"), t,
                                                               attention_backward("SA"), attention_backward("CA"),
                                                               Formula("d"));
    if (post) {
      const Formula dr3 = "LN2'[d]", dh2 = "(" + dr3 + " + FFN'[" + dr3 + "*K])";
      const Formula dr2 = "LNc'[" + dh2 + "]", dh1 = "(" + dr2 + " + CA'[" + dr2 + "*K])";
      const Formula dr1 = "LN1'[" + dh1 + "]";
      EXPECT_EQ(dy, "(" + dr1 + " + SA'[" + dr1 + "*K])");
    } else {
      const Formula dr2 = "(d + LN2'[FFN'[d*K]])", dr1 = "(" + dr2 + " + LNc'[CA'[" + dr2 + "*K]])";
      EXPECT_EQ(dy, "(" + dr1 + " + LN1'[SA'[" + dr1 + "*K]])");
    }
    EXPECT_EQ(g.self_attn_norm.backward, 1);
    EXPECT_EQ(g.cross_attn_norm.backward, 1);
    EXPECT_EQ(g.ffn_norm.backward, 1);
  }
}

TEST(LayerOrder, DecoderWithoutAnEncoderIsTheEncoderLayerUnderACausalMask) {
  // A decoder-only model's layer (config.stacks DecoderOnly): self-attention then the feed-forward, no cross-
  // attention; the same formulas as an encoder layer, forward and backward, its feed-forward block in r3, n3.
  for (bool post : {true, false}) {
    SCOPED_TRACE(post ? "post-norm" : "pre-norm");
    FormulaOps ops;
    LayerWeights w, g, ge;
    DecoderRecord t;
    EncoderRecord e;
    int cross_calls = 0;
    auto cross = [&](const Formula&, AttnRecord&) { ++cross_calls; };
    sf::layer_order::decoder_layer(ops, post, false, w, Formula("x"), self_attention(), cross, t);
    sf::layer_order::encoder_layer(ops, post, w, Formula("x"), self_attention(), e);
    EXPECT_EQ(cross_calls, 0);
    EXPECT_EQ(t.out, e.out);
    EXPECT_EQ(t.residual1, e.residual1);
    EXPECT_EQ(t.residual3, e.residual2);
    EXPECT_EQ(t.norm3.out, e.norm2.out);
    EXPECT_EQ(t.residual2, Formula()) << "no cross-attention block";
    const Formula dy = sf::layer_order::decoder_layer_backward(ops, post, false, w, g, Formula("x"), t,
                                                               attention_backward("SA"), attention_backward("CA"),
                                                               Formula("d"));
    const Formula dx = sf::layer_order::encoder_layer_backward(ops, post, w, ge, Formula("x"), e,
                                                               attention_backward("SA"), Formula("d"));
    EXPECT_EQ(dy, dx);
    EXPECT_EQ(dy.find("CA"), std::string::npos);
    EXPECT_EQ(g.cross_attn_norm.backward, 0);
    EXPECT_EQ(g.self_attn_norm.backward, 1);
    EXPECT_EQ(g.ffn_norm.backward, 1);
  }
}

}  // namespace
