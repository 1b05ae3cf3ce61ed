#include "train/batching.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "util/error.h"

namespace sf {

std::vector<std::vector<int>> plan_batches(const std::vector<Example>& examples, int max_tokens, uint64_t seed,
                                           int epoch) {
  std::mt19937_64 rng(seed * 1000003ULL + static_cast<uint64_t>(epoch));
  std::vector<int> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  auto length = [&](int i) {
    return std::max(examples[i].source.size(), examples[i].target.size()) + 2;  // + <bos>/<eos>
  };
  // Sort within pools so batches are length-homogeneous but still differ from epoch to epoch.
  size_t average = 0;
  for (const auto& e : examples) average += e.target.size() + 2;
  average = examples.empty() ? 1 : std::max<size_t>(1, average / examples.size());
  const size_t pool = std::max<size_t>(1, 100 * static_cast<size_t>(max_tokens) / average);
  std::vector<std::vector<int>> batches;
  for (size_t start = 0; start < order.size(); start += pool) {
    const auto begin = order.begin() + static_cast<long>(start);
    const auto end = order.begin() + static_cast<long>(std::min(order.size(), start + pool));
    std::stable_sort(begin, end, [&](int a, int b) { return length(a) < length(b); });
    std::vector<int> current;
    size_t longest = 0;
    for (auto it = begin; it != end; ++it) {
      const size_t l = std::max(longest, length(*it));
      if (!current.empty() && l * (current.size() + 1) > static_cast<size_t>(max_tokens)) {
        batches.push_back(std::move(current));
        current.clear();
        longest = 0;
      }
      current.push_back(*it);
      longest = std::max(longest, length(*it));
    }
    if (!current.empty()) batches.push_back(std::move(current));
  }
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

Batch make_batch(const std::vector<Example>& examples, const std::vector<int>& indices, const SpecialIds& ids,
                 int max_length, ModelStacks stacks) {
  if (stacks == ModelStacks::EncoderOnly)
    fail(ErrorKind::Unsupported, "make_batch", "an encoder_only model's batches (a target per source token) are "
                                               "masked sentences, made by make_masked_batch (train/masking.h)");
  const bool with_source = stacks == ModelStacks::EncoderDecoder;
  Batch b;
  b.size = static_cast<int>(indices.size());
  // Marian (bos == pad: the decoder starts with <pad>): the source is the tokens and </s>, no start token.
  const int source_start = ids.bos == ids.pad ? 0 : 1;
  for (int i : indices) {
    if (with_source)
      b.source_length = std::max(b.source_length, std::min<int>(static_cast<int>(examples[i].source.size()) + 1 + source_start, max_length));
    b.target_length = std::max(b.target_length, std::min<int>(static_cast<int>(examples[i].target.size()) + 1, max_length));
  }
  b.source.assign(static_cast<size_t>(b.size) * b.source_length, ids.pad);
  b.target_in.assign(static_cast<size_t>(b.size) * b.target_length, ids.pad);
  b.target_out.assign(static_cast<size_t>(b.size) * b.target_length, ids.pad);
  for (int row = 0; row < b.size; ++row) {
    const Example& e = examples[indices[row]];
    if (with_source) {
      int* src = &b.source[static_cast<size_t>(row) * b.source_length];
      const int n_src = std::min<int>(static_cast<int>(e.source.size()), b.source_length - 1 - source_start);
      if (source_start) src[0] = ids.bos;
      std::copy_n(e.source.begin(), n_src, src + source_start);
      src[n_src + source_start] = ids.eos;
    }
    int* in = &b.target_in[static_cast<size_t>(row) * b.target_length];
    int* out = &b.target_out[static_cast<size_t>(row) * b.target_length];
    const int n_tgt = std::min<int>(static_cast<int>(e.target.size()), b.target_length - 1);
    in[0] = ids.bos;
    std::copy_n(e.target.begin(), n_tgt, in + 1);
    std::copy_n(e.target.begin(), n_tgt, out);
    out[n_tgt] = ids.eos;
    b.target_tokens += n_tgt + 1;
  }
  return b;
}

}  // namespace sf
