#include "decode/kv_cache.h"

#include <memory>
#include <numeric>

#include "util/error.h"

namespace sf {

KvCache start_kv_cache(const Config& config, const ModelWeights& weights, const Trace& encoded) {
  KvCache cache = empty_kv_cache(config);
  cache.cross = std::make_shared<const CrossKeysValues>(cross_keys_values(config, weights, encoded));
  return cache;
}

Mat decode_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, KvCache& cache, int out_rows) {
  const int k = static_cast<int>(tokens.size());
  if (k == 0 || out_rows < 1 || out_rows > k)
    fail(ErrorKind::Input, "decode_chunk",
         "asked for " + std::to_string(out_rows) + " rows of logits from " + std::to_string(k) + " tokens");
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence(tokens, cache.length());
  pass.caches = {&cache};
  pass.output_rows.resize(static_cast<size_t>(out_rows));
  std::iota(pass.output_rows.begin(), pass.output_rows.end(), k - out_rows);
  return decoder_pass(config, weights, encoded, cache.cross.get(), pass);
}

void record_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                  const std::vector<int>& tokens, KvCache& cache, Trace& rows) {
  if (tokens.empty()) fail(ErrorKind::Input, "record_chunk", "no tokens to feed");
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence(tokens, cache.length());
  pass.caches = {&cache};
  pass.record = Record::Rows;  // no output rows: logits computed as they are read
  pass.trace = &rows;
  decoder_pass(config, weights, encoded, cache.cross.get(), pass);
}

Mat decode_prefixes(const Config& config, const ModelWeights& weights, const Trace& encoded,
                    const std::vector<int>& tokens, const std::vector<int>& lengths, const CrossKeysValues& cross) {
  for (size_t j = 0; j < lengths.size(); ++j)
    if (lengths[j] < 1 || lengths[j] > static_cast<int>(tokens.size()) || (j > 0 && lengths[j] <= lengths[j - 1]))
      fail(ErrorKind::Input, "decode_prefixes",
           "prefix lengths must rise from 1 to the " + std::to_string(tokens.size()) + " tokens given");
  if (lengths.empty()) return Mat(0, config.tgt_vocab_size);
  DecoderPass pass;
  for (int n : lengths) {
    pass.rows.add_sequence(std::vector<int>(tokens.begin(), tokens.begin() + n));
    pass.output_rows.push_back(pass.rows.size() - 1);
  }
  return decoder_pass(config, weights, encoded, &cross, pass);
}

RowVec decode_step(const Config& config, const ModelWeights& weights, const Trace& encoded, int token,
                   KvCache& cache) {
  return decode_chunk(config, weights, encoded, {token}, cache, 1).row(0);
}

Mat decode_steps(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, const std::vector<KvCache*>& caches) {
  if (tokens.size() != caches.size())
    fail(ErrorKind::Input, "decode_steps",
         std::to_string(tokens.size()) + " tokens for " + std::to_string(caches.size()) + " caches");
  if (tokens.empty()) return Mat(0, config.tgt_vocab_size);
  const CrossKeysValues* cross = caches.front()->cross.get();
  DecoderPass pass;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!caches[i] || caches[i]->cross.get() != cross)
      fail(ErrorKind::Input, "decode_steps", "every cache must continue the same encoder pass");
    pass.rows.add_sequence({tokens[i]}, caches[i]->length());
    pass.output_rows.push_back(static_cast<int>(i));
  }
  pass.caches = caches;
  return decoder_pass(config, weights, encoded, cross, pass);
}

}  // namespace sf
