#include "transformer/trace.h"

#include "util/parallel.h"

namespace sf {

namespace {

struct Emitter {
  std::vector<NamedTensor>& out;
  void mat(const std::string& name, const Mat& m) {
    if (m.size() > 0) out.push_back({name, Tensor::from_mat(m)});
  }
  void vec(const std::string& name, const Vec& v) {
    if (v.size() > 0) out.push_back({name, Tensor::from_vec(v)});
  }
  void heads(const std::string& name, const std::vector<Mat>& h) {
    if (!h.empty()) out.push_back({name, Tensor::from_heads(h)});
  }
  void embedding(const std::string& p, const EmbeddingTrace& e) {
    mat(p + ".tok_embed", e.tok_embed);
    mat(p + ".pos", e.pos);
  }
  void attention(const std::string& p, const AttentionTrace& a) {
    heads(p + ".q", a.q);
    heads(p + ".k", a.k);
    heads(p + ".v", a.v);
    heads(p + ".scores", a.scores);
    std::vector<Mat> masks(a.masks.empty() ? 0 : a.probs.size());
    for (size_t i = 0; i < masks.size(); ++i) masks[i] = a.mask_matrix(i);
    heads(p + ".mask", masks);
    heads(p + ".probs", a.probs);
    heads(p + ".head_out", a.head_out);
    mat(p + ".heads_out", a.heads_out);
    mat(p + ".attn_out", a.attn_out);
  }
  void norm(const std::string& p, const LayerNormTrace& n) {
    mat(p, n.out);
    vec(p + "_mean", n.mean);
    vec(p + "_std", n.std);
  }
  void ffn(const std::string& p, const FeedForwardTrace& f) {
    mat(p + ".ffn_hidden_pre", f.hidden_pre);
    mat(p + ".ffn_hidden", f.hidden);
    mat(p + ".ffn_out", f.out);
  }
};

}  // namespace

Trace join_halves(const Trace& encoder_half, Trace decoder_half) {
  // The encoder half is copied (its owner keeps it for the traces to come): a long sentence's is tens of megabytes,
  // so its layers are copied side by side on the pool, the embedding and output as one more piece.
  Trace t;
  t.sequences = encoder_half.sequences;
  const int layers = static_cast<int>(encoder_half.encoder.size());
  t.encoder.resize(encoder_half.encoder.size());
  parallel_for(layers + 1, 1, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      if (i < layers) {
        t.encoder[static_cast<size_t>(i)] = encoder_half.encoder[static_cast<size_t>(i)];
        continue;
      }
      t.src = encoder_half.src;
      t.encoder_norm = encoder_half.encoder_norm;
      t.enc_out = encoder_half.enc_out;
    }
  });
  t.interventions = std::move(decoder_half.interventions);
  t.tgt = std::move(decoder_half.tgt);
  t.decoder = std::move(decoder_half.decoder);
  t.decoder_norm = std::move(decoder_half.decoder_norm);
  t.dec_out = std::move(decoder_half.dec_out);
  t.logits = std::move(decoder_half.logits);
  t.probs = std::move(decoder_half.probs);
  return t;
}

std::vector<NamedTensor> trace_tensors(const Trace& t) {
  std::vector<NamedTensor> out;
  Emitter e{out};
  if (t.has_encoder()) {
    e.embedding("src", t.src);
    e.mat("enc.in", t.src.sum);
    for (size_t l = 0; l < t.encoder.size(); ++l) {
      const std::string p = "enc." + std::to_string(l);
      const EncoderLayerTrace& layer = t.encoder[l];
      e.attention(p + ".self_attn", layer.self_attn);
      e.mat(p + ".residual1", layer.residual1);
      e.norm(p + ".norm1", layer.norm1);
      e.ffn(p, layer.ffn);
      e.mat(p + ".residual2", layer.residual2);
      e.norm(p + ".norm2", layer.norm2);
      e.mat(p + ".out", layer.out);
    }
    e.vec("enc.final_norm_mean", t.encoder_norm.mean);
    e.vec("enc.final_norm_std", t.encoder_norm.std);
    e.mat("enc.out", t.enc_out);
  }
  if (t.has_decoder()) {
    e.embedding("tgt", t.tgt);
    e.mat("dec.in", t.tgt.sum);
    for (size_t l = 0; l < t.decoder.size(); ++l) {
      const std::string p = "dec." + std::to_string(l);
      const DecoderLayerTrace& layer = t.decoder[l];
      e.attention(p + ".self_attn", layer.self_attn);
      e.mat(p + ".residual1", layer.residual1);
      e.norm(p + ".norm1", layer.norm1);
      e.attention(p + ".cross_attn", layer.cross_attn);
      e.mat(p + ".residual2", layer.residual2);
      e.norm(p + ".norm2", layer.norm2);
      e.ffn(p, layer.ffn);
      e.mat(p + ".residual3", layer.residual3);
      e.norm(p + ".norm3", layer.norm3);
      e.mat(p + ".out", layer.out);
    }
    e.vec("dec.final_norm_mean", t.decoder_norm.mean);
    e.vec("dec.final_norm_std", t.decoder_norm.std);
    e.mat("dec.out", t.dec_out);
  }
  if (t.has_output()) {  // the output head, over the last stack's output
    e.mat("logits", t.logits);
    e.mat("probs", t.probs);
  }
  return out;
}

}  // namespace sf
