// The one walk of a pass's record, block by block, in the order of the pass, under the trace's names
// (docs/trace.md). Written once as a template over the records it walks side by side: the host's Trace alone
// (for_each_trace_tensor, transformer/trace.h, which every reader of a trace goes through: trace_tensors, the CLI's
// trace file, the tests' comparisons), or the GPU's pass record (DevicePass, backend/cuda/device_model.h, whose
// members mirror the Trace's) beside the Trace it is copied into (CudaModel::forward). A tensor recorded in one
// more place is a member of the record and a line here.
//
// The visitor `v` is called with the block's name and the block of each record (records... in order):
//   v.begin(stage, layer)                        a stage of the pass starts (layer: -1 outside the layers)
//   v.embedding(name, input_name, embeddings...) "src" / "tgt": the token and position embeddings (BERT's: the
//                                                token types, their sum and its norm), and the first stack's input
//                                                ("enc.in" / "dec.in")
//   v.attention(name, attentions...)             "enc.0.self_attn", "dec.1.cross_attn" (a layer without
//                                                cross-attention holds an empty one)
//   v.norm(name, norms...)                       "enc.0.norm1": a layer norm's output, mean and std
//   v.ffn(prefix, feed_forwards...)              "enc.0": its .ffn_hidden_pre, .ffn_hidden, .ffn_out
//   v.mat(name, matrices...)                     a residual sum, a layer's output, a stack's output, logits, probs
//   v.final_norm(name, norms...)                 "enc.final_norm": a stack's optional final norm (its output is the
//                                                stack's output, visited next)
#pragma once
#include <cstddef>
#include <string>

#include "transformer/trace.h"

namespace sf {

// A record that holds the masked-LM head's transform (Trace::head). The GPU's pass record has none (the GPU does
// not compute BERT's head: backend/device.h), so its walk skips it.
template <class R>
concept RecordsOutputHead = requires(R& r) { r.head.dense; };

// What a record holds: the stacks it ran and whether the output head did.
struct RecordParts {
  bool encoder = false, decoder = false, output = false;
  size_t encoder_layers = 0, decoder_layers = 0;
};

inline RecordParts record_parts(const Trace& t) {
  return {t.has_encoder(), t.has_decoder(), t.has_output(), t.encoder.size(), t.decoder.size()};
}

template <class Visitor, class... Records>
void walk_trace_blocks(const RecordParts& parts, Visitor& v, Records&... r) {
  if (parts.encoder) {
    v.begin(TraceStage::SourceEmbedding, -1);
    v.embedding("src", "enc.in", r.src...);
    for (size_t l = 0; l < parts.encoder_layers; ++l) {
      v.begin(TraceStage::EncoderLayer, static_cast<int>(l));
      const std::string p = "enc." + std::to_string(l);
      v.attention(p + ".self_attn", r.encoder[l].self_attn...);
      v.mat(p + ".residual1", r.encoder[l].residual1...);
      v.norm(p + ".norm1", r.encoder[l].norm1...);
      v.ffn(p, r.encoder[l].ffn...);
      v.mat(p + ".residual2", r.encoder[l].residual2...);
      v.norm(p + ".norm2", r.encoder[l].norm2...);
      v.mat(p + ".out", r.encoder[l].out...);
    }
    v.begin(TraceStage::EncoderOutput, -1);
    v.final_norm("enc.final_norm", r.encoder_norm...);
    v.mat("enc.out", r.enc_out...);
  }
  if (parts.decoder) {
    v.begin(TraceStage::TargetEmbedding, -1);
    v.embedding("tgt", "dec.in", r.tgt...);
    for (size_t l = 0; l < parts.decoder_layers; ++l) {
      v.begin(TraceStage::DecoderLayer, static_cast<int>(l));
      const std::string p = "dec." + std::to_string(l);
      v.attention(p + ".self_attn", r.decoder[l].self_attn...);
      v.mat(p + ".residual1", r.decoder[l].residual1...);
      v.norm(p + ".norm1", r.decoder[l].norm1...);
      v.attention(p + ".cross_attn", r.decoder[l].cross_attn...);
      v.mat(p + ".residual2", r.decoder[l].residual2...);
      v.norm(p + ".norm2", r.decoder[l].norm2...);
      v.ffn(p, r.decoder[l].ffn...);
      v.mat(p + ".residual3", r.decoder[l].residual3...);
      v.norm(p + ".norm3", r.decoder[l].norm3...);
      v.mat(p + ".out", r.decoder[l].out...);
    }
    v.begin(TraceStage::DecoderOutput, -1);
    v.final_norm("dec.final_norm", r.decoder_norm...);
    v.mat("dec.out", r.dec_out...);
  }
  if (parts.output) {  // the output head, over the last stack's output
    v.begin(TraceStage::Output, -1);
    if constexpr ((RecordsOutputHead<Records> && ...)) {  // masked_lm: t = LN(act(h W_d^T + b_d))
      v.mat("head.dense", r.head.dense...);
      v.mat("head.act", r.head.act...);
      v.norm("head.norm", r.head.norm...);
    }
    v.mat("logits", r.logits...);
    v.mat("probs", r.probs...);
  }
}

}  // namespace sf
