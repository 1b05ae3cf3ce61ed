#include "model/hf_bert.h"

#include <map>
#include <set>

#include "io/user_files.h"
#include "model/hf_files.h"
#include "model/name_tables.h"
#include "util/error.h"

namespace sf {

using namespace hf;

namespace {

constexpr const char* kPrefix = "bert.";
constexpr const char* kRequired = "config.json, model.safetensors and vocab.txt";
constexpr uint64_t kMaxVocabTxtBytes = 16ull << 20;  // bert-base's vocab.txt: 232 KB (30522 pieces)
constexpr const char* kDecoderWeight = "cls.predictions.decoder.weight";
constexpr const char* kWordEmbedding = "bert.embeddings.word_embeddings.weight";

std::string required_file(const std::string& folder, const std::string& name) {
  return hf::required_file(folder, name, "BERT", kRequired, kWhere);
}

// ACT2FN's names for hidden_act (BertIntermediate's activation and the masked-LM head's transform_act_fn).
Activation bert_activation(const std::string& name, const std::string& path) {
  if (name == "gelu") return Activation::GELU;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::GELUTanh;
  if (name == "relu") return Activation::ReLU;
  if (name == "silu" || name == "swish") return Activation::SiLU;
  fail(ErrorKind::Unsupported, kWhere,
       "'" + path + "': hidden_act \"" + name +
           "\" is not one Stepformer computes (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)");
}

// vocab.txt as BertTokenizer's load_vocab reads it: one piece a line (the line's end, \n or \r\n, dropped), the
// id its line number from 0. An empty line or a piece twice is refused with its line (load_vocab would let the
// later line win, leaving an id no text reaches).
std::vector<std::string> read_vocab_txt(const std::string& path) {
  const std::string text = read_user_file(path, kMaxVocabTxtBytes, "a vocab.txt", kWhere);
  std::vector<std::string> pieces;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string piece = text.substr(at, end - at);
    if (!piece.empty() && piece.back() == '\r') piece.pop_back();
    const size_t line = pieces.size() + 1;
    if (piece.empty())
      fail(ErrorKind::Format, kWhere, "'" + path + "' line " + std::to_string(line) + " is empty (every line is a piece)");
    pieces.push_back(std::move(piece));
    at = end + 1;
  }
  std::map<std::string, size_t> first_line;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto [it, added] = first_line.emplace(pieces[i], i + 1);
    if (!added)
      fail(ErrorKind::Format, kWhere, "'" + path + "' holds the piece '" + pieces[i] + "' twice (lines " +
                                          std::to_string(it->second) + " and " + std::to_string(i + 1) + ")");
  }
  if (pieces.empty()) fail(ErrorKind::Format, kWhere, "'" + path + "' is empty");
  return pieces;
}

}  // namespace

BertTokenizerConfig read_bert_tokenizer_config(const std::string& folder) {
  BertTokenizerConfig t;
  const std::string path = in_folder(folder, "tokenizer_config.json");
  if (!path_exists(path)) return t;
  const nlohmann::json j = read_json_file(path, kMaxJsonBytes, "a tokenizer_config.json");
  if (!j.is_object()) fail(ErrorKind::Format, kWhere, "'" + path + "' is not a JSON object");
  t.do_lower_case = config_bool(j, "do_lower_case", t.do_lower_case, path);
  t.tokenize_chinese_chars = config_bool(j, "tokenize_chinese_chars", t.tokenize_chinese_chars, path);
  if (const auto it = j.find("strip_accents"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      fail(ErrorKind::Format, kWhere, "'" + path + "': \"strip_accents\" is " + it->dump() + ", not true, false or null");
    t.strip_accents = it->get<bool>() ? 1 : 0;
  }
  // A special token is a string, or (older files) {"content": "[MASK]", ...}, an AddedToken.
  auto token = [&](const char* key, std::string& out) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (it->is_string()) out = it->get<std::string>();
    else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) out = (*it)["content"];
    else fail(ErrorKind::Format, kWhere, "'" + path + "': \"" + key + "\" is " + it->dump() + ", not a token");
  };
  token("unk_token", t.unk_token);
  token("sep_token", t.sep_token);
  token("pad_token", t.pad_token);
  token("cls_token", t.cls_token);
  token("mask_token", t.mask_token);
  return t;
}

Model load_hf_bert(const std::string& folder, std::vector<std::string>* warnings, bool read_weights,
                   const std::string& weights_file) {
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  require_folder(folder);
  const std::string config_path = required_file(folder, "config.json");
  const nlohmann::json j =
      read_config_of_type(config_path, "bert", "BERT (model_type \"bert\", BertForMaskedLM)", kWhere);
  // The variants modeling_bert.py allows that Stepformer does not compute are refused by name.
  if (const std::string p = config_string(j, "position_embedding_type", "absolute"); p != "absolute")
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': position_embedding_type \"" + p +
                                             "\"; Stepformer computes BERT's \"absolute\" (learned) positions only");
  if (config_bool(j, "is_decoder", false, config_path) || config_bool(j, "add_cross_attention", false, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': is_decoder or add_cross_attention is true (a BERT "
                                                             "used as a decoder); Stepformer opens BERT as an encoder");
  if (!config_bool(j, "tie_word_embeddings", true, config_path))
    fail(ErrorKind::Unsupported, kWhere, "'" + config_path + "': tie_word_embeddings is false; Stepformer computes "
                                                             "BERT with its masked-LM decoder tied to the word embedding");
  Config c;
  c.stacks = ModelStacks::EncoderOnly;
  c.d_model = config_int(j, "hidden_size", config_path);
  c.n_heads = config_int(j, "num_attention_heads", config_path);
  c.n_encoder_layers = config_int(j, "num_hidden_layers", config_path);
  c.n_decoder_layers = 0;
  c.d_ff = config_int(j, "intermediate_size", config_path);
  c.src_vocab_size = config_int(j, "vocab_size", config_path);
  c.tgt_vocab_size = 0;
  c.max_positions = config_int(j, "max_position_embeddings", config_path, 512);
  c.type_vocab_size = config_int(j, "type_vocab_size", config_path, 2);
  if (c.type_vocab_size < 1)
    fail(ErrorKind::Format, kWhere, "'" + config_path + "': type_vocab_size is 0; BERT adds the token-type "
                                                        "embedding of type 0 to every token, so it needs one");
  c.embedding_norm = true;
  c.positional_encoding = PositionalEncoding::Learned;
  c.embedding_scale = EmbeddingScale::One;
  c.norm_placement = NormPlacement::Post;
  c.encoder_final_norm = false;
  c.activation = bert_activation(config_string(j, "hidden_act", "gelu"), config_path);
  c.attention = AttentionStyle::SplitHeads;
  c.layer_norm_eps = static_cast<float>(config_number(j, "layer_norm_eps", 1e-12, config_path));
  c.bias = true;
  c.output_head = OutputHead::MaskedLM;
  c.output_bias = true;
  c.tie_output_embedding = true;

  // The vocabulary: vocab.txt's lines, checked against the embedding (vocab_size rows).
  const std::string vocab_path = required_file(folder, "vocab.txt");
  std::vector<std::string> pieces = read_vocab_txt(vocab_path);
  const int listed = static_cast<int>(pieces.size());
  if (listed > c.src_vocab_size)
    fail(ErrorKind::Format, kWhere,
         "'" + vocab_path + "' holds " + std::to_string(listed) + " pieces but the model's embedding has " +
             std::to_string(c.src_vocab_size) + " rows (config.json's vocab_size): the files do not belong together");
  if (listed < c.src_vocab_size) {  // an embedding padded past the vocabulary: those ids no text reaches
    warn("'" + vocab_path + "' names " + std::to_string(listed) + " of the model's " +
         std::to_string(c.src_vocab_size) + " ids; the others are shown as <unused N> and never produced from text");
    for (int id = listed; id < c.src_vocab_size; ++id) pieces.push_back("<unused " + std::to_string(id) + ">");
  }
  const BertTokenizerConfig tokenizer = read_bert_tokenizer_config(folder);
  auto special = [&](const std::string& piece, const char* role) {
    for (int id = 0; id < listed; ++id)
      if (pieces[static_cast<size_t>(id)] == piece) return id;
    fail(ErrorKind::Missing, kWhere, "'" + vocab_path + "' has no " + piece + " (BERT's " + role + " token)");
  };
  c.pad_id = special(tokenizer.pad_token, "padding");
  c.unk_id = special(tokenizer.unk_token, "unknown");
  c.bos_id = special(tokenizer.cls_token, "classification, first");
  c.eos_id = special(tokenizer.sep_token, "separator, last");
  c.mask_id = special(tokenizer.mask_token, "mask");
  if (const int pad = config_int(j, "pad_token_id", config_path, c.pad_id); pad != c.pad_id)
    warn("'" + config_path + "': pad_token_id " + std::to_string(pad) + " is not " + tokenizer.pad_token + " (" +
         std::to_string(c.pad_id) + " in vocab.txt); " + tokenizer.pad_token + " is taken");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + config_path + "': " + e.what());
  }

  Model m;
  m.family = kFamilyBert;
  m.config = c;
  m.src_vocab = Vocabulary(pieces, SpecialIds{c.pad_id, c.bos_id, c.eos_id, c.unk_id}, vocab_path);
  m.tokenizer.kind = "wordpiece";
  m.tokenizer.lowercase = m.tokenizer.split_punctuation = m.tokenizer.moses_escape = false;
  m.tokenizer.normalize_punctuation = false;
  m.tokenizer.add_bos_eos = true;  // [CLS] ... [SEP]
  m.tokenizer.wordpiece_lower_case = tokenizer.do_lower_case;
  m.tokenizer.wordpiece_strip_accents = tokenizer.strip_accents;
  m.tokenizer.wordpiece_chinese_chars = tokenizer.tokenize_chinese_chars;
  m.provenance = folder_provenance(j, folder, "Hugging Face BERT folder");
  m.wordpiece = make_wordpiece(m);  // (vocab.txt was checked above: [UNK], [CLS] and [SEP] are there)

  // The weights: BertForMaskedLM's names, or without "bert." (BertModel's), LayerNorm's gamma/beta (old
  // checkpoints) read as weight/bias.
  const std::string weights = weights_path(folder, weights_file, "BERT", kRequired);
  SafetensorsFile file = SafetensorsFile::open(weights);
  const std::string prefix = kPrefix;
  std::set<std::string> also_known = {kDecoderWeight, "cls.predictions.decoder.bias", "bert.embeddings.position_ids",
                                      "embeddings.position_ids"};
  for (const char* part : {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "cls.seq_relationship.weight",
                           "cls.seq_relationship.bias"}) {  // BertForPreTraining's next-sentence head
    also_known.insert(part);
    if (std::string(part).starts_with(prefix)) also_known.insert(std::string(part).substr(prefix.size()));
  }
  auto old_norm_name = [](const std::string& name) {  // "...LayerNorm.weight" -> "...LayerNorm.gamma"
    for (const auto& [now, old] : {std::pair<const char*, const char*>{"LayerNorm.weight", "LayerNorm.gamma"},
                                   {"LayerNorm.bias", "LayerNorm.beta"}})
      if (name.ends_with(now)) return name.substr(0, name.size() - std::string(now).size()) + old;
    return std::string();
  };
  for (const TensorSpec& spec : weight_layout(kFamilyBert, c)) {
    std::vector<std::string> names = {spec.name};
    if (spec.name.starts_with(prefix)) names.push_back(spec.name.substr(prefix.size()));
    for (size_t i = 0, n = names.size(); i < n; ++i)
      if (const std::string old = old_norm_name(names[i]); !old.empty()) names.push_back(old);
    for (size_t i = 1; i < names.size(); ++i) {
      also_known.insert(names[i]);
      if (!file.find(spec.name) && file.find(names[i])) file.add_alias(spec.name, names[i]);
    }
  }
  // Newer transformers save the output's bias also as cls.predictions.decoder.bias (the same parameter).
  if (!file.find("cls.predictions.bias") && file.find("cls.predictions.decoder.bias"))
    file.add_alias("cls.predictions.bias", "cls.predictions.decoder.bias");
  if (!file.find("cls.predictions.transform.dense.weight"))
    fail(ErrorKind::Unsupported, kWhere,
         "'" + weights + "' has no masked-LM head (cls.predictions.transform.*): a BertModel or another task's head; "
         "Stepformer opens BertForMaskedLM and BertForPreTraining checkpoints");
  try {
    require_tied_copy(file, kDecoderWeight, kWordEmbedding, "the word embedding", "masked-LM decoder", "BERT", kWhere);
    read_family_weights(file, m, warnings, read_weights, also_known);
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + weights + "': " + e.what());
  }
  return m;
}

}  // namespace sf
