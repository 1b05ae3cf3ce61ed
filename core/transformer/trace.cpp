#include "transformer/trace.h"

#include "transformer/trace_walk.h"

#include "util/parallel.h"

namespace sf {

const char* to_string(TraceStage stage) {
  switch (stage) {
    case TraceStage::SourceEmbedding: return "source embedding";
    case TraceStage::EncoderLayer: return "encoder layer";
    case TraceStage::EncoderOutput: return "encoder output";
    case TraceStage::TargetEmbedding: return "target embedding";
    case TraceStage::DecoderLayer: return "decoder layer";
    case TraceStage::DecoderOutput: return "decoder output";
    case TraceStage::Output: return "output";
  }
  return "?";
}

std::vector<int64_t> TraceTensorRef::shape() const {
  if (mat) return {mat->rows(), mat->cols()};
  if (vec) return {vec->size()};
  const std::vector<Mat>& h = heads ? *heads : masks_of->probs;  // a mask per head, the shape of its probabilities
  return {static_cast<int64_t>(h.size()), h.front().rows(), h.front().cols()};
}

Tensor TraceTensorRef::tensor() const {
  if (mat) return Tensor::from_mat(*mat);
  if (vec) return Tensor::from_vec(*vec);
  if (heads) return Tensor::from_heads(*heads);
  std::vector<Mat> masks(masks_of->probs.size());
  for (size_t i = 0; i < masks.size(); ++i) masks[i] = masks_of->mask_matrix(i);
  return Tensor::from_heads(masks);
}

namespace {

// The walk's leaves: each block (transformer/trace_walk.h) as the tensors it holds, each visited under its name
// when it holds something.
struct Walker {
  const std::function<void(const TraceTensorRef&)>& f;
  TraceStage stage_ = TraceStage::SourceEmbedding;
  int layer_ = -1;
  void visit(const std::string& name, const Mat* m, const Vec* v, const std::vector<Mat>* h,
             const AttentionTrace* masks) {
    TraceTensorRef r{name, stage_, layer_, m, v, h, masks};
    f(r);
  }
  void vec(const std::string& name, const Vec& v) {
    if (v.size() > 0) visit(name, nullptr, &v, nullptr, nullptr);
  }
  void heads(const std::string& name, const std::vector<Mat>& h) {
    if (!h.empty()) visit(name, nullptr, nullptr, &h, nullptr);
  }
  // The block walk's calls.
  void begin(TraceStage stage, int layer) {
    stage_ = stage;
    layer_ = layer;
  }
  void mat(const std::string& name, const Mat& m) {
    if (m.size() > 0) visit(name, &m, nullptr, nullptr, nullptr);
  }
  void embedding(const std::string& p, const std::string& input, const EmbeddingTrace& e) {
    mat(p + ".tok_embed", e.tok_embed);
    mat(p + ".pos", e.pos);
    mat(p + ".type_embed", e.type_embed);
    mat(p + ".embed_sum", e.embed_sum);
    final_norm(p + ".embed_norm", e.embed_norm);  // (its output, undropped, is the stack's input, visited next)
    mat(input, e.sum);
  }
  void attention(const std::string& p, const AttentionTrace& a) {
    heads(p + ".q", a.q);
    heads(p + ".k", a.k);
    heads(p + ".v", a.v);
    heads(p + ".scores", a.scores);
    if (!a.masks.empty() && !a.probs.empty()) visit(p + ".mask", nullptr, nullptr, nullptr, &a);
    heads(p + ".probs", a.probs);
    heads(p + ".head_out", a.head_out);
    mat(p + ".heads_out", a.heads_out);
    mat(p + ".attn_out", a.attn_out);
  }
  void norm(const std::string& p, const LayerNormTrace& n) {
    mat(p, n.out);
    final_norm(p, n);
  }
  void final_norm(const std::string& p, const LayerNormTrace& n) {  // (its output is the stack's, visited next)
    vec(p + "_mean", n.mean);
    vec(p + "_std", n.std);
  }
  void ffn(const std::string& p, const FeedForwardTrace& ff) {
    mat(p + ".ffn_hidden_pre", ff.hidden_pre);
    mat(p + ".ffn_hidden", ff.hidden);
    mat(p + ".ffn_out", ff.out);
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
  t.head = std::move(decoder_half.head);
  t.logits = std::move(decoder_half.logits);
  t.probs = std::move(decoder_half.probs);
  return t;
}

void for_each_trace_tensor(const Trace& t, const std::function<void(const TraceTensorRef&)>& f) {
  Walker walker{f};
  walk_trace_blocks(record_parts(t), walker, t);
}

std::vector<NamedTensor> trace_tensors(const Trace& t) {
  std::vector<NamedTensor> out;
  for_each_trace_tensor(t, [&](const TraceTensorRef& r) { out.push_back({r.name, r.tensor()}); });
  return out;
}

}  // namespace sf
