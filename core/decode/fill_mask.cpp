#include "decode/fill_mask.h"

#include <algorithm>
#include <numeric>

#include "transformer/forward.h"
#include "util/error.h"

namespace sf {

FillMaskResult fill_mask(const Model& model, std::string_view text, int top_k) {
  const Config& c = model.config;
  if (c.stacks != ModelStacks::EncoderOnly || !c.has_mask_token())
    fail(ErrorKind::Unsupported, "fill_mask",
         std::string("this model is ") + to_string(c.stacks) +
             (c.stacks == ModelStacks::EncoderOnly ? " without a mask token (its config has no mask_id)" : "") +
             ": filling in [MASK] needs an encoder-only masked language model");
  const int vocabulary = c.src_vocab_size;
  if (top_k < 1 || top_k > vocabulary)
    fail(ErrorKind::Input, "fill_mask", "top_k must lie in [1, " + std::to_string(vocabulary) +
                                            "] (the vocabulary), got " + std::to_string(top_k));
  FillMaskResult r;
  r.tokens = encode_text(model, text, Side::Source);
  for (size_t i = 0; i < r.tokens.size(); ++i)
    if (r.tokens[i].id == c.mask_id) {  // (WordPiece marks a [MASK] written in the text special too)
      if (r.mask_position < 0) r.mask_position = static_cast<int>(i);
      ++r.masks;
    }
  if (r.mask_position < 0)
    fail(ErrorKind::Input, "fill_mask", "the text holds no [MASK]: write [MASK] where the word to fill in goes");
  if (static_cast<int>(r.tokens.size()) > c.max_positions)
    fail(ErrorKind::Input, "fill_mask", "the text is " + std::to_string(r.tokens.size()) +
                                            " tokens as the model reads it; the model has " +
                                            std::to_string(c.max_positions) + " positions");
  const Trace trace = forward(c, model.weights, token_ids(r.tokens), {});
  // probs (S, V): the row of the mask's position
  const auto row = trace.probs.row(r.mask_position);
  std::vector<int> order(static_cast<size_t>(vocabulary));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                    [&](int a, int b) { return row(a) != row(b) ? row(a) > row(b) : a < b; });
  for (int k = 0; k < top_k; ++k) {
    const int id = order[static_cast<size_t>(k)];
    r.candidates.push_back({id, model.src_vocab.token(id), static_cast<double>(row(id))});
  }
  return r;
}

}  // namespace sf
