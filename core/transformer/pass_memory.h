// The working memory of a pass, estimated before it runs, so that a sentence too long for the model and the
// machine is refused with the numbers instead of ending in std::bad_alloc (or the kernel's OOM killer).
//
// What grows with the length (floats; S source, T decoder tokens, C d_model, H heads, F d_ff, V target vocabulary,
// trace.h keeps all of it for the views):
//   each attention block   2 H Tq Tk   (scores, probabilities: the square of the length, H times over)
//                          + 9 rows of C (q, k, v, the heads' outputs, the projections)
//   each encoder layer     + 6 S C + 2 S F      each decoder layer   + 9 T C + 2 T F
//   the output             2 T V (logits, probabilities)
// and decoding adds, per hypothesis of a beam, the key/value cache (2 T C a decoder layer) and the logits it
// chose from (T V). A model within every documented limit (d_model 1024 with 1024 heads) needs 0.7 GB for a
// 200-token sentence and 66 GB for 2,000: the check says so before anything is allocated.
#pragma once
#include "model/config.h"

namespace sf {

// Bytes of a traced pass (forward(): the encoder over S tokens, the decoder over T) as trace.h holds it.
double traced_pass_bytes(const Config& config, int source_tokens, int target_tokens);

// Bytes a Decoder holds at most: the traced encoder pass, the traced decoder pass over the longest prefix
// (max_tokens), and per hypothesis the key/value cache and the chosen logits.
double decoding_bytes(const Config& config, int source_tokens, int max_tokens, int hypotheses);

// Throws ErrorKind::Input when `bytes` (for a pass over `source_tokens`) exceed the memory this process may take
// (util/memory.h: available_memory_bytes), naming both and how many source tokens would fit, as `estimate`
// gives the bytes for another length:
//   "[Decoder] a pass over 2000 source tokens needs about 66.2 GB with this model (1024 heads, 1+1 layers: the
//    attention maps grow with the square of the length); 3.1 GB is free: at most 430 tokens fit"
// Small passes (under 256 MB) are never refused and do not read the system's figures.
template <typename Estimate>
void check_pass_memory(const Config& config, int source_tokens, Estimate estimate, const char* where);
void check_pass_memory_bytes(const Config& config, int source_tokens, double bytes, int fitting_tokens,
                             double available, const char* where);
double pass_memory_available();  // available_memory_bytes(), for check_pass_memory

template <typename Estimate>
void check_pass_memory(const Config& config, int source_tokens, Estimate estimate, const char* where) {
  const double bytes = estimate(source_tokens);
  if (bytes < 256.0 * (1 << 20)) return;
  const double available = pass_memory_available();
  if (bytes <= available) return;
  int lo = 0, hi = source_tokens;  // the longest source that fits: estimate(lo) <= available < estimate(hi)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (estimate(mid) <= available ? lo : hi) = mid;
  }
  check_pass_memory_bytes(config, source_tokens, bytes, lo, available, where);
}

}  // namespace sf
