// Hugging Face Marian models (opus-mt: Helsinki-NLP/opus-mt-de-en and a thousand more pairs), opened from the
// folder a user downloads:
//
//   config.json             MarianConfig: sizes, activation, ids          (required)
//   model.safetensors       the weights under MarianMTModel's names       (required; pytorch_model.bin alone:
//                                                                          convert it with `stepformer-cli import-hf`)
//   source.spm, target.spm  SentencePiece models of each side             (required)
//   vocab.json              piece -> id, the vocabulary of both sides     (required)
//   target_vocab.json       the target's, when tokenizer_config.json says "separate_vocabs": true
//   tokenizer_config.json   source_lang, target_lang, separate_vocabs    (optional)
//   generation_config.json  num_beams, max_length, bad_words_ids ...     (optional; config.json's keys otherwise)
//
// What Marian differs in from the paper's model, and where Stepformer handles each (docs/model-files.md lists
// them with Hugging Face's code):
//   sinusoidal positions with all sines first, then all cosines     config.sinusoid_layout = Halves
//   positions computed, or stored (embed_positions.weight)         computed; stored ones must equal them
//   embedding scale sqrt(d_model) when scale_embedding            config.embedding_scale
//   SiLU ("swish") feed-forward activation                         config.activation = SiLU
//   post-norm layers, no final norms                               config.norm_placement, *_final_norm
//   final_logits_bias added to the logits                          the output layer's bias (generator.bias)
//   one embedding for both sides (model.shared), output tied       config.share_embeddings, tie_output_embedding
//   decoder start token = <pad>                                    config.bos_id = pad_id (no decoder pad mask)
//   </s> ends the source, no start token on it                     tokenizer kind "sentencepiece"
//   <unk>, </s>, <pad> ids from the config and vocab.json          config.*_id
//   bad_words_ids ([[pad]]) never generated; num_beams, max_length model.generation (decode/decoder.h)
#pragma once
#include <string>
#include <vector>

#include "model/model.h"

namespace sf {

// True when `path` is a folder holding a config.json (a Hugging Face model folder, of whatever architecture).
bool is_hf_model_folder(const std::string& path);

// Loads a Marian folder into a Model of family "marian" (model/name_tables.h) with SentencePiece tokenization.
// Throws sf::Error naming the file and what is wrong: Missing (a required file), Format (a file that does not
// parse, a config of another architecture (BART, T5, a decoder-only model), a SentencePiece model that does not
// match vocab.json, stored positions that are not Marian's), Unsupported (a Marian variant Stepformer cannot
// compute: different head counts or feed-forward sizes in encoder and decoder, an unknown activation), and what
// load_model throws for the weights. Warnings (unknown tensors, filled vocabulary gaps) go to `warnings`.
// read_weights false: every tensor is checked, none kept (as load_model).
// `weights_file`, when given, is read in place of the folder's model.safetensors (import-hf's conversion of a
// pytorch_model.bin).
Model load_hf_marian(const std::string& folder, std::vector<std::string>* warnings = nullptr,
                     bool read_weights = true, const std::string& weights_file = "");

// Opens what `path` names: a Hugging Face Marian folder or a Stepformer model file.
Model open_model(const std::string& path, std::vector<std::string>* warnings = nullptr, bool read_weights = true);

// The hub name of a folder ("Helsinki-NLP/opus-mt-de-en"): config.json's _name_or_path when it is one, else
// the Hugging Face cache's models--ORG--NAME folder above it, else the folder's own name.
std::string hf_hub_name(const std::string& folder, const std::string& name_or_path);

}  // namespace sf
