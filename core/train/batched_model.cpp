#include "train/batched_model.h"

#include <numeric>

#include "transformer/passes.h"
#include "util/error.h"

namespace sf {

void check_batch(const Config& c, const Batch& b, const char* where) {
  auto bad = [&](const std::string& what) { fail(ErrorKind::Input, where, what); };
  // What each shape reads (batching.h): a source with an encoder, a decoder input with a decoder, and targets for
  // each position of the last stack's input.
  const bool encoder = c.has_encoder(), decoder = c.has_decoder();
  if (b.size <= 0 || (encoder && b.source_length <= 0) || b.target_length <= 0) bad("empty batch");
  if (!encoder && (b.source_length != 0 || !b.source.empty())) bad("a decoder_only model reads no source");
  if (!decoder && (b.target_length != b.source_length || !b.target_in.empty()))
    bad("an encoder_only model's batch has a target for each source token and no decoder input");
  if (b.source_length > c.max_positions || b.target_length > c.max_positions)
    bad("a sequence is longer than max_positions (" + std::to_string(c.max_positions) + ")");
  const size_t targets = static_cast<size_t>(b.size) * b.target_length;
  if (b.source.size() != static_cast<size_t>(b.size) * b.source_length || b.target_out.size() != targets ||
      (decoder && b.target_in.size() != targets))
    bad("batch arrays do not match its sizes");
  for (int id : b.source)
    if (id < 0 || id >= c.src_vocab_size) bad("source id " + std::to_string(id) + " outside the vocabulary");
  for (const auto* ids : {&b.target_in, &b.target_out})
    for (int id : *ids)
      if (id < 0 || id >= c.output_vocab_size()) bad("target id " + std::to_string(id) + " outside the vocabulary");
}

LossResult batch_forward(const Config& c, const ModelWeights& w, const Batch& batch, const DropoutSettings& settings,
                         float smoothing, BatchTrace& t, Mat* dlogits) {
  check_batch(c, batch, "batch_forward");
  Dropout dropout(settings);
  t.batch = batch.size;
  t.source_length = batch.source_length;
  t.target_length = batch.target_length;
  t.sequences = batch.size;
  t.interventions = Interventions{};  // padding and causal masks, every head on
  t.src.ids = batch.source;
  if (c.has_encoder()) encoder_pass(c, w, batch.size, -1, Record::Backward, &dropout, t);  // encoder-only: + logits
  else t.enc_out.resize(0, 0);
  if (!c.has_decoder()) {
    t.tgt.ids.clear();
    return label_smoothed_cross_entropy(t.logits, batch.target_out, c.pad_id, smoothing, dlogits);
  }

  DecoderPass pass;
  for (int b = 0; b < batch.size; ++b) {
    const auto first = batch.target_in.begin() + static_cast<std::ptrdiff_t>(b) * batch.target_length;
    pass.rows.add_sequence(std::vector<int>(first, first + batch.target_length));
    if (c.has_cross_attention()) pass.source_of.push_back(b);
  }
  pass.output_rows.resize(static_cast<size_t>(pass.rows.size()));
  std::iota(pass.output_rows.begin(), pass.output_rows.end(), 0);
  pass.record = Record::Backward;
  pass.trace = &t;
  pass.dropout = &dropout;
  decoder_pass(c, w, t, nullptr, pass);  // the cross-attention keys from enc.out here: their gradient flows
  return label_smoothed_cross_entropy(t.logits, batch.target_out, c.pad_id, smoothing, dlogits);
}

void batch_backward(const Config& c, const ModelWeights& w, const Batch& batch, const BatchTrace& t,
                    const Mat& dlogits, ModelWeights& g) {
  if (t.batch != batch.size) fail(ErrorKind::Input, "batch_backward", "the trace is of another batch");
  model_backward(c, w, t.batch, t, dlogits, g);
}

}  // namespace sf
