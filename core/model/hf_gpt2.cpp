#include "model/hf_gpt2.h"

#include <set>

#include "io/user_files.h"
#include "model/hf_files.h"
#include "model/hf_marian.h"  // hf_hub_name
#include "model/name_tables.h"
#include "util/error.h"

namespace sf {

using namespace hf;

namespace {

constexpr uint64_t kMaxMergesBytes = 64ull << 20;  // GPT-2's merges.txt: 456 KB
constexpr const char* kPrefix = "transformer.";
constexpr const char* kRequired = "config.json, model.safetensors, vocab.json and merges.txt";

std::string required_file(const std::string& folder, const std::string& name) {
  return hf::required_file(folder, name, "GPT-2", kRequired, kWhere);
}

// ACT2FN's names for the MLP's activation.
Activation gpt2_activation(const std::string& name, const std::string& path) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::GELUTanh;
  if (name == "gelu") return Activation::GELU;
  if (name == "relu") return Activation::ReLU;
  if (name == "silu" || name == "swish") return Activation::SiLU;
  fail(ErrorKind::Unsupported, kWhere,
       "'" + path + "': activation_function \"" + name +
           "\" is not one Stepformer computes (gelu_new, gelu_pytorch_tanh, gelu, relu, silu)");
}

}  // namespace

Model load_hf_gpt2(const std::string& folder, std::vector<std::string>* warnings, bool read_weights,
                   const std::string& weights_file) {
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  require_folder(folder);
  const std::string config_path = required_file(folder, "config.json");
  const nlohmann::json j =
      read_config_of_type(config_path, "gpt2", "GPT-2 (model_type \"gpt2\", GPT2LMHeadModel)", kWhere);
  // The variants modeling_gpt2.py allows that Stepformer does not compute are refused by name.
  if (config_bool(j, "add_cross_attention", false, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': add_cross_attention is true (a GPT-2 used as a "
                                                             "decoder of an encoder-decoder); Stepformer opens GPT-2 alone");
  if (!config_bool(j, "scale_attn_weights", true, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': scale_attn_weights is false (scores not divided by "
                                                             "sqrt(d_head)); Stepformer computes the scaled form");
  if (config_bool(j, "scale_attn_by_inverse_layer_idx", false, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': scale_attn_by_inverse_layer_idx is true; Stepformer "
                                                             "computes GPT-2's scores / sqrt(d_head) only");
  Config c;
  c.stacks = ModelStacks::DecoderOnly;
  c.d_model = config_int(j, "n_embd", config_path);
  c.n_heads = config_int(j, "n_head", config_path);
  c.n_encoder_layers = 0;
  c.n_decoder_layers = config_int(j, "n_layer", config_path);
  c.d_ff = config_int(j, "n_inner", config_path, 4 * c.d_model);  // null: 4 * n_embd
  c.src_vocab_size = 0;
  c.tgt_vocab_size = config_int(j, "vocab_size", config_path);
  c.max_positions = config_int(j, "n_positions", config_path, config_int(j, "n_ctx", config_path, 1024));
  c.positional_encoding = PositionalEncoding::Learned;
  c.embedding_scale = EmbeddingScale::One;
  c.norm_placement = NormPlacement::Pre;
  c.decoder_final_norm = true;
  c.activation = gpt2_activation(config_string(j, "activation_function", "gelu_new"), config_path);
  c.attention = AttentionStyle::SplitHeads;
  c.layer_norm_eps = static_cast<float>(config_number(j, "layer_norm_epsilon", 1e-5, config_path));
  c.bias = true;
  c.output_bias = false;
  if (!config_bool(j, "tie_word_embeddings", true, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': tie_word_embeddings is false; Stepformer computes "
                                                             "GPT-2 with its output tied to the token embedding");
  c.tie_output_embedding = true;
  c.starts_with_bos = false;
  // <|endoftext|> is every special token GPT-2 has: the start of an empty prompt, the end, padding, unknown.
  c.eos_id = config_int(j, "eos_token_id", config_path, 50256);
  c.bos_id = config_int(j, "bos_token_id", config_path, c.eos_id);
  c.pad_id = c.unk_id = c.eos_id;

  // The tokenizer: vocab.json and merges.txt, checked against each other (model/byte_bpe.h) and the embedding.
  const std::string vocab_path = required_file(folder, "vocab.json"), merges_path = required_file(folder, "merges.txt");
  const std::string vocab_text = read_user_file(vocab_path, kMaxVocabBytes, "a vocab.json", kWhere);
  const std::string merges_text = read_user_file(merges_path, kMaxMergesBytes, "a merges.txt", kWhere);
  ByteBpe bpe = [&] {
    try {
      return ByteBpe::from_text(vocab_text, merges_text, kWhere);
    } catch (const Error& e) {  // (the message names vocab.json or merges.txt; the folder says whose)
      throw Error(e, std::string(e.what()) + " (in '" + folder + "')");
    }
  }();
  if (bpe.size() > c.tgt_vocab_size)
    fail(ErrorKind::Format, kWhere,
         "'" + vocab_path + "' holds " + std::to_string(bpe.size()) + " pieces but the model's embedding has " +
             std::to_string(c.tgt_vocab_size) + " rows (config.json's vocab_size): the files do not belong together");
  std::vector<std::string> pieces;
  for (int id = 0; id < bpe.size(); ++id) pieces.push_back(bpe.piece(id).text);
  if (bpe.size() < c.tgt_vocab_size) {  // an embedding padded past the vocabulary (to a multiple of 64, say)
    warn("'" + vocab_path + "' names " + std::to_string(bpe.size()) + " of the model's " +
         std::to_string(c.tgt_vocab_size) + " ids; the others are shown as <unused N> and never produced from text");
    for (int id = bpe.size(); id < c.tgt_vocab_size; ++id) pieces.push_back("<unused " + std::to_string(id) + ">");
    bpe = ByteBpe::from_pieces(pieces, merges_text, vocab_path);
  }
  if (bpe.end_of_text_id() >= 0 && bpe.end_of_text_id() != c.eos_id)
    warn("'" + config_path + "': eos_token_id " + std::to_string(c.eos_id) + " is not <|endoftext|> (" +
         std::to_string(bpe.end_of_text_id()) + " in vocab.json)");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + config_path + "': " + e.what());
  }

  Model m;
  m.family = kFamilyGpt2;
  m.config = c;
  m.tgt_vocab = Vocabulary(pieces, SpecialIds{c.pad_id, c.bos_id, c.eos_id, c.unk_id}, vocab_path);
  m.tokenizer.kind = "byte_bpe";
  m.tokenizer.lowercase = m.tokenizer.split_punctuation = m.tokenizer.moses_escape = false;
  m.tokenizer.normalize_punctuation = false;
  m.tokenizer.add_bos_eos = false;
  m.tokenizer.target_language = "en";
  m.byte_bpe = std::make_shared<const ByteBpe>(std::move(bpe));
  // Decoded as transformers' generate() decodes it (beam search scored by its rule: decode/decoder.h BeamScoring),
  // one beam unless generation_config.json says more. Its max_length counts the prompt, ours the new tokens: not
  // taken (the app and the CLI give the number of new tokens).
  m.generation.present = true;
  m.generation.beam_width = 1;
  m.generation.length_penalty = 1.0f;
  if (const std::string g = in_folder(folder, "generation_config.json"); path_exists(g)) {
    const nlohmann::json gj = read_json_file(g, kMaxJsonBytes, "a generation_config.json");
    if (!gj.is_object()) fail(ErrorKind::Format, kWhere, "'" + g + "' is not a JSON object");
    m.generation.beam_width = config_int(gj, "num_beams", g, 1);
    m.generation.length_penalty = static_cast<float>(config_number(gj, "length_penalty", 1.0, g));
  }
  m.provenance = folder_provenance(j, folder, "Hugging Face GPT-2 folder");

  // The weights: GPT2LMHeadModel's names, or GPT2Model's (the hub's own gpt2 files) without "transformer.".
  const std::string weights = weights_path(folder, weights_file, "GPT-2", kRequired);
  SafetensorsFile file = SafetensorsFile::open(weights);
  const std::string prefix = kPrefix;
  std::set<std::string> also_known = {"lm_head.weight"};
  for (const TensorSpec& spec : weight_layout(kFamilyGpt2, c)) {
    const std::string bare = spec.name.substr(prefix.size());
    if (!file.find(spec.name) && file.find(bare)) file.add_alias(spec.name, bare);
    also_known.insert(bare);
  }
  // The causal mask buffers older transformers versions saved (h.L.attn.bias (1, 1, P, P), h.L.attn.masked_bias):
  // constants, not weights.
  for (int l = 0; l < c.n_decoder_layers; ++l)
    for (const char* buffer : {".attn.bias", ".attn.masked_bias"}) {
      also_known.insert("h." + std::to_string(l) + buffer);
      also_known.insert(prefix + "h." + std::to_string(l) + buffer);
    }
  try {
    require_tied_copy(file, "lm_head.weight", "transformer.wte.weight", "wte", "output layer", "GPT-2", kWhere);
    read_family_weights(file, m, warnings, read_weights, also_known);
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + weights + "': " + e.what());
  }
  return m;
}

}  // namespace sf
