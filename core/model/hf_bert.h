// Hugging Face BERT models (BertForMaskedLM: the hub's bert-base-uncased, bert-base-cased, and every model trained
// with that code; BertForPreTraining's and BertModel's files too, their extra or missing parts named below), opened
// from the folder a user downloads:
//
//   config.json            BertConfig: hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
//                          vocab_size (required); max_position_embeddings, type_vocab_size, layer_norm_eps,
//                          hidden_act, position_embedding_type, pad_token_id (BertConfig's defaults when absent)
//   model.safetensors      the weights, with or without the "bert." prefix; cls.predictions.decoder.weight absent
//                          or a copy of the word embedding (tied); bert.pooler.* and cls.seq_relationship.*
//                          (BertForPreTraining) known and not read          (required; pytorch_model.bin alone:
//                                                                            convert it with `stepformer-cli import-hf`)
//   vocab.txt              one WordPiece piece a line, id = line number     (required)
//   tokenizer_config.json  do_lower_case, strip_accents, tokenize_chinese_chars, the special tokens' names
//                                                                            (optional; BertTokenizer's defaults)
//
// BERT's computation and where Stepformer has each (modeling_bert.py):
//   word + learned position + token-type embeddings, no scale   positional_encoding Learned, embedding_scale One,
//                                                                type_vocab_size (every token of type 0: one text)
//   LayerNorm over that sum (embeddings.LayerNorm)               embedding_norm
//   post-norm blocks, scores / sqrt(d_head), padding mask        norm_placement Post, split heads, the encoder
//   hidden_act "gelu" (erf); "gelu_new" (tanh), relu, silu       activation GELU (GELUTanh, ReLU, SiLU)
//   cls.predictions: LN(act(h W_d^T + b_d)) E^T + b              output_head MaskedLM, tied, output_bias
//   [PAD] [UNK] [CLS] [SEP] [MASK] from vocab.txt                pad_id, unk_id, bos_id = [CLS], eos_id = [SEP],
//                                                                mask_id
// Old TensorFlow-converted checkpoints name LayerNorm's weight and bias gamma and beta: read as aliases.
#pragma once
#include <string>
#include <vector>

#include "model/model.h"

namespace sf {

// BertTokenizer's settings, from tokenizer_config.json (its defaults where the file or a key is absent): what
// the WordPiece tokenizer (model/wordpiece.h) takes. Also stored in the model's TokenizerSettings (kind
// "wordpiece": wordpiece_lower_case, wordpiece_strip_accents, wordpiece_chinese_chars).
struct BertTokenizerConfig {
  bool do_lower_case = true;
  int strip_accents = -1;               // -1: Hugging Face's null, accents stripped exactly when lower-casing; 0, 1
  bool tokenize_chinese_chars = true;   // spaces around CJK ideographs, each one a word
  // The special tokens' pieces (tokenizer_config.json's unk_token, ... when strings).
  std::string unk_token = "[UNK]", sep_token = "[SEP]", pad_token = "[PAD]", cls_token = "[CLS]",
              mask_token = "[MASK]";
};

// tokenizer_config.json of `folder` (absent: the defaults). ErrorKind::Format for a file that is not a JSON
// object or a key of the wrong type.
BertTokenizerConfig read_bert_tokenizer_config(const std::string& folder);

// Loads a BERT folder into a Model of family "bert" (encoder_only, output head masked_lm, tokenizer kind
// "wordpiece" over the source vocabulary, vocab.txt's pieces).
// Throws sf::Error naming the file and what is wrong: Missing (a required file or config key, a special token
// vocab.txt lacks), Format (a file that does not parse, a config of another architecture, a vocab.txt longer than
// vocab_size or with an empty or repeated line), Unsupported (a BERT variant Stepformer does not compute: relative
// position embeddings, a decoder, an activation other than gelu/gelu_new/relu/silu, a decoder weight that is not
// the word embedding, no masked-LM head), and what load_model throws for the weights (shapes, NaN, memory).
// A vocab.txt shorter than vocab_size is taken with a warning (the other ids shown as <unused N>). Warnings go to
// `warnings`. read_weights false: every tensor is checked, none kept. `weights_file`: read in place of
// model.safetensors (import-hf's conversion of a pytorch_model.bin).
Model load_hf_bert(const std::string& folder, std::vector<std::string>* warnings = nullptr, bool read_weights = true,
                   const std::string& weights_file = "");

}  // namespace sf
