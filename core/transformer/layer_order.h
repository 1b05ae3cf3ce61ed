// The order of the operations inside the Transformer's layers, forward and backward, written once for every compute
// backend. The CPU's passes (transformer/layers.cpp) and the CUDA backend (backend/cuda/device_model.h for its
// recorded passes, cuda_decoding.cpp for its cached steps, cuda_training.cpp for the backward) call these templates
// with their own tensors and operations, so a change to the layers' structure is made here and nowhere else.
//
//   post-norm (the paper):  r1 = x + drop(SelfAttn(x));   n1 = LN(r1)
//                           r2 = n1 + drop(FFN(n1));       n2 = LN(r2);       out = n2
//   pre-norm (norm_first):  n1 = LN(x);                    r1 = x + drop(SelfAttn(n1))
//                           n2 = LN(r1);                   r2 = r1 + drop(FFN(n2));          out = r2
//   decoder layer: a cross-attention block between the two (its queries from the block before, its keys and values
//   from the encoder), so three blocks: r1..r3, n1..n3. A decoder without an encoder (config.stacks DecoderOnly,
//   `cross` false) has no cross-attention block: its feed-forward block is still block 3 (r3, n3), reading what
//   block 1 gave, and r2, n2 and the cross-attention record are left as they are (empty in a fresh record).
// A layer's record has the trace's member names (transformer/trace.h): residual1, norm1, self_attn, ffn, keeps...
//
// The seam: what a backend's `Ops` gives the layers.
//   Tensor                                               (rows, C) floats in the backend's memory
//   layer_norm(x, norm_w, NormRecord& t) -> const Tensor&       t = LN(x) with its means and stds; returns t.out
//   residual(x, f, Tensor& keep, Tensor& sum)                   sum = x + drop(f), the dropout mask into keep
//   feed_forward(x, layer_w, FfnRecord& t)                      t.out = FFN(x), its hidden layer kept in t
//   layer_norm_backward(x, t, norm_w, norm_g, dy) -> Tensor     dL/dx; the norm's gradients accumulate in norm_g
//   feed_forward_backward(x, t, layer_w, layer_g, dy) -> Tensor dL/dx; fc1's and fc2's gradients accumulate
//   times_keep(d, keep) -> Tensor                               d * keep: through dropout (d itself without)
//   add(a, b) -> Tensor                                         a + b (a may be moved from)
// Attention is the pass's part, a callback: the pass knows where keys and values come from (the same rows, a KV
// cache, the encoder), which masks apply and what to record.
//   self_attn(x, in, AttnRecord& t) -> const Tensor&   attends from `in` (x, or LN(x) in pre-norm), fills t.attn_out;
//                                                      returns the rows of x that go on: x itself, or the rows still
//                                                      queried by a decoder pass that wants fewer outputs
//   cross_attn(h, AttnRecord& t)                       queries from h, keys and values from the encoder
//   backward: attn(in, const AttnRecord& t, d) -> Tensor   dL/d(in) from dL/d(attn_out); weight gradients
//                                                          accumulate (cross-attention adds its dL/d(encoder) too)
#pragma once
#include <utility>

namespace sf::layer_order {

// [SECTION] forward

template <class Ops, class Tensor, class Weights, class SelfAttn, class Record>
void encoder_layer(Ops& ops, bool post, const Weights& w, const Tensor& x, const SelfAttn& self_attn, Record& t) {
  const Tensor& in = post ? x : ops.layer_norm(x, w.self_attn_norm, t.norm1);  // pre: n1 = LN(x)
  const Tensor& x_rows = self_attn(x, in, t.self_attn);
  ops.residual(x_rows, t.self_attn.attn_out, t.self_attn_keep, t.residual1);  // r1 = x + drop(SelfAttn(.))
  if (post) {
    const Tensor& h = ops.layer_norm(t.residual1, w.self_attn_norm, t.norm1);  // n1 = LN(r1)
    ops.feed_forward(h, w, t.ffn);
    ops.residual(h, t.ffn.out, t.ffn_keep, t.residual2);                       // r2 = n1 + drop(FFN(n1))
    t.out = ops.layer_norm(t.residual2, w.ffn_norm, t.norm2);                  // out = LN(r2)
  } else {
    ops.feed_forward(ops.layer_norm(t.residual1, w.ffn_norm, t.norm2), w, t.ffn);  // FFN(n2), n2 = LN(r1)
    ops.residual(t.residual1, t.ffn.out, t.ffn_keep, t.residual2);                 // r2 = r1 + drop(FFN(n2))
    t.out = t.residual2;
  }
}

template <class Ops, class Tensor, class Weights, class SelfAttn, class CrossAttn, class Record>
void decoder_layer(Ops& ops, bool post, bool cross, const Weights& w, const Tensor& x, const SelfAttn& self_attn,
                   const CrossAttn& cross_attn, Record& t) {
  const Tensor& in = post ? x : ops.layer_norm(x, w.self_attn_norm, t.norm1);  // pre: n1 = LN(x), every row
  const Tensor& x_rows = self_attn(x, in, t.self_attn);
  ops.residual(x_rows, t.self_attn.attn_out, t.self_attn_keep, t.residual1);  // r1 = x + drop(SelfAttn(.))
  if (!cross && post) {  // no encoder: the feed-forward block follows the self-attention block
    const Tensor& h1 = ops.layer_norm(t.residual1, w.self_attn_norm, t.norm1);  // n1 = LN(r1)
    ops.feed_forward(h1, w, t.ffn);
    ops.residual(h1, t.ffn.out, t.ffn_keep, t.residual3);                       // r3 = n1 + drop(FFN(n1))
    t.out = ops.layer_norm(t.residual3, w.ffn_norm, t.norm3);                   // out = LN(r3)
  } else if (!cross) {
    ops.feed_forward(ops.layer_norm(t.residual1, w.ffn_norm, t.norm3), w, t.ffn);  // FFN(n3), n3 = LN(r1)
    ops.residual(t.residual1, t.ffn.out, t.ffn_keep, t.residual3);                 // r3 = r1 + drop(FFN(n3))
    t.out = t.residual3;
  } else if (post) {
    const Tensor& h1 = ops.layer_norm(t.residual1, w.self_attn_norm, t.norm1);  // n1 = LN(r1)
    cross_attn(h1, t.cross_attn);
    ops.residual(h1, t.cross_attn.attn_out, t.cross_attn_keep, t.residual2);    // r2 = n1 + drop(CrossAttn(n1))
    const Tensor& h2 = ops.layer_norm(t.residual2, w.cross_attn_norm, t.norm2);  // n2 = LN(r2)
    ops.feed_forward(h2, w, t.ffn);
    ops.residual(h2, t.ffn.out, t.ffn_keep, t.residual3);                       // r3 = n2 + drop(FFN(n2))
    t.out = ops.layer_norm(t.residual3, w.ffn_norm, t.norm3);                   // out = LN(r3)
  } else {
    cross_attn(ops.layer_norm(t.residual1, w.cross_attn_norm, t.norm2), t.cross_attn);  // CrossAttn(n2), n2 = LN(r1)
    ops.residual(t.residual1, t.cross_attn.attn_out, t.cross_attn_keep, t.residual2);   // r2 = r1 + drop(.)
    ops.feed_forward(ops.layer_norm(t.residual2, w.ffn_norm, t.norm3), w, t.ffn);        // FFN(n3), n3 = LN(r2)
    ops.residual(t.residual2, t.ffn.out, t.ffn_keep, t.residual3);                      // r3 = r2 + drop(FFN(n3))
    t.out = t.residual3;
  }
}

// [SECTION] backward

// The backward of one block around a sublayer f, whose input is the block's input x in post-norm and LN(x) in pre:
//   post-norm: out = LN(r),  r = x + drop(f(x))      dr = LN'(d_out);  dx = dr + f'(dr * keep)
//   pre-norm:  out = x + drop(f(LN(x)))              dx = d_out + LN'(f'(d_out * keep))
// f_backward(f_input, d_f) accumulates f's weight gradients and returns dL/d(f's input).
template <class Ops, class Tensor, class NormRecord, class NormWeights, class NormGrads, class F>
Tensor block_backward(Ops& ops, bool post, const Tensor& x, const Tensor& residual, const NormRecord& norm,
                      const NormWeights& norm_w, NormGrads& norm_g, const Tensor& keep, const F& f_backward,
                      const Tensor& d_out) {
  if (post) {
    Tensor dr = ops.layer_norm_backward(residual, norm, norm_w, norm_g, d_out);  // dL/dr
    const Tensor d_f_input = f_backward(x, ops.times_keep(dr, keep));
    return ops.add(std::move(dr), d_f_input);
  }
  const Tensor d_f_input = f_backward(norm.out, ops.times_keep(d_out, keep));
  const Tensor d_norm_input = ops.layer_norm_backward(x, norm, norm_w, norm_g, d_f_input);
  return ops.add(d_out, d_norm_input);
}

// A layer's blocks backwards, last first, from dL/d(out) to dL/dx. Post-norm block k reads the previous block's
// norm output and keeps (residual_k, norm_k); pre-norm block k reads the previous residual and normalises it in
// norm_k.
template <class Ops, class Tensor, class Weights, class Grads, class Record, class SelfAttnBackward>
Tensor encoder_layer_backward(Ops& ops, bool post, const Weights& w, Grads& g, const Tensor& x, const Record& t,
                              const SelfAttnBackward& self_attn, const Tensor& d_out) {
  auto ffn = [&](const Tensor& in, const Tensor& d) { return ops.feed_forward_backward(in, t.ffn, w, g, d); };
  auto attn = [&](const Tensor& in, const Tensor& d) { return self_attn(in, t.self_attn, d); };
  const Tensor d = block_backward(ops, post, post ? t.norm1.out : t.residual1, t.residual2, t.norm2, w.ffn_norm,
                                  g.ffn_norm, t.ffn_keep, ffn, d_out);
  return block_backward(ops, post, x, t.residual1, t.norm1, w.self_attn_norm, g.self_attn_norm, t.self_attn_keep,
                        attn, d);
}

template <class Ops, class Tensor, class Weights, class Grads, class Record, class SelfAttnBackward,
          class CrossAttnBackward>
Tensor decoder_layer_backward(Ops& ops, bool post, bool with_cross, const Weights& w, Grads& g, const Tensor& x,
                              const Record& t, const SelfAttnBackward& self_attn, const CrossAttnBackward& cross_attn,
                              const Tensor& d_out) {
  auto ffn = [&](const Tensor& in, const Tensor& d) { return ops.feed_forward_backward(in, t.ffn, w, g, d); };
  auto cross = [&](const Tensor& in, const Tensor& d) { return cross_attn(in, t.cross_attn, d); };
  auto self = [&](const Tensor& in, const Tensor& d) { return self_attn(in, t.self_attn, d); };
  // The feed-forward block's input: block 2's output, or without cross-attention block 1's.
  const Tensor& ffn_x = with_cross ? (post ? t.norm2.out : t.residual2) : (post ? t.norm1.out : t.residual1);
  Tensor d = block_backward(ops, post, ffn_x, t.residual3, t.norm3, w.ffn_norm, g.ffn_norm, t.ffn_keep, ffn, d_out);
  if (with_cross)
    d = block_backward(ops, post, post ? t.norm1.out : t.residual1, t.residual2, t.norm2, w.cross_attn_norm,
                       g.cross_attn_norm, t.cross_attn_keep, cross, d);
  return block_backward(ops, post, x, t.residual1, t.norm1, w.self_attn_norm, g.self_attn_norm, t.self_attn_keep,
                        self, d);
}

}  // namespace sf::layer_order
