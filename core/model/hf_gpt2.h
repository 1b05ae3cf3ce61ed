// Hugging Face GPT-2 models (GPT2LMHeadModel: the hub's gpt2, gpt2-medium, distilgpt2, and models trained with that
// code), opened from the folder a user downloads:
//
//   config.json        GPT2Config: n_embd, n_layer, n_head, n_inner, n_positions, vocab_size, activation  (required)
//   model.safetensors  the weights, with or without the "transformer." prefix; lm_head.weight absent or a copy
//                      of wte (tied)                                   (required; pytorch_model.bin alone: convert
//                                                                       it with `stepformer-cli import-hf`)
//   vocab.json, merges.txt  the byte-level BPE (model/byte_bpe.h)      (required)
//
// GPT-2's computation and where Stepformer has each (modeling_gpt2.py; docs/model-files.md):
//   token + learned position embeddings, no scale          positional_encoding Learned, embedding_scale One
//   pre-norm blocks: x + attn(ln_1(x)), x + mlp(ln_2(x))    norm_placement Pre; ln_f: decoder_final_norm
//   Conv1D weights stored [in, out]; c_attn = [q | k | v]  the family's transposed, stacked tensors (families/gpt2)
//   scores / sqrt(d_head), causal mask                      the decoder's self-attention (split heads)
//   gelu_new, the tanh form of GELU                         activation GELUTanh
//   the output tied to wte, no bias                         tie_output_embedding, output_bias false
//   nothing added to the prompt; <|endoftext|> the one special token   starts_with_bos false; bos = eos = pad = unk
#pragma once
#include <string>
#include <vector>

#include "model/model.h"

namespace sf {

// Loads a GPT-2 folder into a Model of family "gpt2" with the byte-level BPE tokenizer.
// Throws sf::Error naming the file and what is wrong: Missing (a required file or config key), Format (a file that
// does not parse, a config of another architecture, a vocabulary larger than the embedding, merges that name
// pieces the vocabulary lacks), Unsupported (a GPT-2 variant Stepformer does not compute: cross-attention, scores
// scaled by the layer index, unscaled scores, an activation other than gelu_new/gelu/relu/silu, an lm_head that is
// not wte), and what load_model throws for the weights (shapes, NaN, memory). Warnings go to `warnings`.
// read_weights false: every tensor is checked, none kept. `weights_file`: read in place of model.safetensors.
Model load_hf_gpt2(const std::string& folder, std::vector<std::string>* warnings = nullptr, bool read_weights = true,
                   const std::string& weights_file = "");

}  // namespace sf
