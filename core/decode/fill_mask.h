// Filling in a masked word: what an encoder-only masked language model (config.mask_id set) puts where its input
// holds [MASK]. The text is read as training reads a caption, <bos> w1 .. wn <eos>, with each literal "[MASK]"
// (any case) kept whole as the mask token (encode_text, model/model.h); one forward pass (transformer/forward.h),
// and the output head's softmax at the first mask's position ranks the vocabulary:
//   p(v | text) = softmax(enc_out[mask] W^T + b)_v      over every token of the vocabulary (specials included)
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace sf {

struct MaskCandidate {
  int id = -1;
  std::string token;        // as the vocabulary holds it ("&apos;s")
  double probability = 0;   // p(token | text) at the mask
};

struct FillMaskResult {
  std::vector<Token> tokens;              // what the model read, <bos> and <eos> included
  int mask_position = -1;                 // index into tokens of the first mask
  int masks = 0;                          // how many masks the text holds (the first is filled)
  std::vector<MaskCandidate> candidates;  // the top_k most probable, best first (equal probabilities: lower id)
};

// ErrorKind::Unsupported for a model that is not encoder-only or has no mask token; ErrorKind::Input for text
// without "[MASK]", longer than the model's positions, or a top_k outside [1, V].
FillMaskResult fill_mask(const Model& model, std::string_view text, int top_k);

}  // namespace sf
