#include "model/hf_marian.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "io/user_files.h"
#include "model/hf_files.h"
#include "model/hf_bert.h"
#include "model/hf_gpt2.h"
#include "model/name_tables.h"
#include "nn/embedding.h"
#include "util/error.h"

namespace sf {

using namespace hf;

namespace {

constexpr uint64_t kMaxSpmBytes = 64ull << 20;    // source.spm: under 1 MB

const char* kRequiredFiles = "config.json, model.safetensors, source.spm, target.spm and vocab.json";

std::string required_file(const std::string& folder, const std::string& name) {
  const std::string path = in_folder(folder, name);
  if (!path_exists(path))
    fail(ErrorKind::Missing, ErrorCode::MarianFileMissing, kWhere, {{"folder", folder}, {"file", name}},
         "'" + folder + "' has no " + name + " (a Marian folder holds " + kRequiredFiles + ")");
  return path;
}

// The architecture check: a Marian config, or a message naming what it is instead.
void check_marian(const nlohmann::json& j, const std::string& path) {
  if (model_type(j, path) == "marian") return;
  fail(ErrorKind::Format, kWhere,
       "'" + path + "' describes " + describe_model(j) + "; this reader opens Hugging Face Marian models (model_type "
       "\"marian\", MarianMTModel: the opus-mt family), the encoder-decoder Transformer of the paper");
}

Activation marian_activation(const std::string& name, const std::string& path) {
  // ACT2FN: "swish" and "silu" are SiLU; "gelu" is the exact erf GELU; "relu".
  if (name == "swish" || name == "silu") return Activation::SiLU;
  if (name == "gelu") return Activation::GELU;
  if (name == "relu") return Activation::ReLU;
  fail(ErrorKind::Unsupported, kWhere,
       "'" + path + "': activation_function \"" + name + "\" is not one Stepformer computes (swish/silu, gelu, relu)");
}

// vocab.json {piece: id} as tokens by id, `size` of them (ids the file does not use get a placeholder, warned).
std::vector<std::string> vocabulary_tokens(const nlohmann::json& v, int size, const std::string& path,
                                           const std::function<void(const std::string&)>& warn) {
  if (!v.is_object()) fail(ErrorKind::Format, kWhere, "'" + path + "' is not a JSON object of piece: id");
  // A few unused ids are normal; a vocabulary that names less than half the model's is not this model's (and a
  // hostile config's vocab_size must not make us fill millions of placeholders).
  if (static_cast<int64_t>(v.size()) * 2 < size)
    fail(ErrorKind::Format, kWhere, "'" + path + "' holds " + std::to_string(v.size()) + " pieces but the model's "
                                        "vocabulary has " + std::to_string(size) + " ids: the files do not belong together");
  std::vector<std::string> tokens(static_cast<size_t>(size));
  std::vector<bool> used(static_cast<size_t>(size), false);
  for (const auto& [piece, id] : v.items()) {
    if (!id.is_number_integer())
      fail(ErrorKind::Format, kWhere, "'" + path + "': the id of piece '" + piece + "' is " + id.dump() + ", not a number");
    const int64_t i = id.get<int64_t>();
    if (i < 0 || i >= size)
      fail(ErrorKind::Format, kWhere, "'" + path + "': piece '" + piece + "' has id " + std::to_string(i) +
                                          ", outside the model's vocabulary of " + std::to_string(size));
    if (used[static_cast<size_t>(i)])
      fail(ErrorKind::Format, kWhere, "'" + path + "': pieces '" + tokens[static_cast<size_t>(i)] + "' and '" + piece +
                                          "' share id " + std::to_string(i));
    used[static_cast<size_t>(i)] = true;
    tokens[static_cast<size_t>(i)] = piece;
  }
  int gaps = 0;
  for (int i = 0; i < size; ++i)
    if (!used[static_cast<size_t>(i)]) tokens[static_cast<size_t>(i)] = "<unused " + std::to_string(i) + ">", ++gaps;
  if (gaps > 0)
    warn("'" + path + "' names " + std::to_string(size - gaps) + " of the model's " + std::to_string(size) +
         " ids; the other " + std::to_string(gaps) + " are shown as <unused N>");
  return tokens;
}

// Each SentencePiece model must fit the vocabulary its pieces are looked up in: a piece it can produce that the
// vocabulary lacks becomes <unk>. A few missing is normal; most missing means the files do not belong together.
void check_pieces_match(const SentencePieceModels& spm, Side side, const Vocabulary& vocabulary,
                        const std::string& spm_path, const std::string& vocab_path,
                        const std::function<void(const std::string&)>& warn) {
  int missing = 0, total = 0;
  std::string example;
  for (const std::string& piece : spm.known_pieces(side)) {
    if (piece == "<s>" || piece == "</s>" || piece == "<unk>" || piece == "<pad>") continue;
    ++total;
    if (!vocabulary.find(piece)) {
      if (example.empty()) example = piece;
      ++missing;
    }
  }
  if (total == 0) fail(ErrorKind::Format, kWhere, "'" + spm_path + "' holds no pieces");
  if (missing * 10 > total)
    fail(ErrorKind::Format, kWhere,
         "'" + spm_path + "' does not match '" + vocab_path + "': " + std::to_string(missing) + " of its " +
             std::to_string(total) + " pieces (e.g. '" + example + "') are not in the vocabulary. The files come from "
             "different models");
  if (missing > 0)
    warn("'" + spm_path + "': " + std::to_string(missing) + " of its " + std::to_string(total) + " pieces (e.g. '" +
         example + "') are not in '" + vocab_path + "' and become <unk>");
}

// Stored positions (older files) must be the table Marian computes; then they are not needed.
void check_stored_positions(const SafetensorsFile& file, const Config& c, const char* name) {
  const TensorView* t = file.find(name);
  if (!t) return;
  const std::vector<int64_t> want = {c.max_positions, c.d_model};
  if (t->shape != want)
    fail(ErrorKind::Shape, ErrorCode::TensorWrongShape, kWhere,
         {{"tensor", name}, {"expected", shape_string(want)}, {"found", shape_string(t->shape)}},
         "'" + file.origin() + "': tensor '" + name + "': expected " + shape_string(want) + ", found " +
             shape_string(t->shape));
  const Mat& table = cached_sinusoidal_encoding(c.max_positions, c.d_model, SinusoidLayout::Halves);
  std::vector<float> row(static_cast<size_t>(c.d_model));
  for (int p = 0; p < c.max_positions; ++p) {
    t->read_floats(static_cast<int64_t>(p) * c.d_model, row);
    for (int i = 0; i < c.d_model; ++i)
      if (!(std::fabs(row[static_cast<size_t>(i)] - table(p, i)) <= 1e-4f))
        fail(ErrorKind::Format, kWhere,
             "'" + file.origin() + "': tensor '" + name + "' is not Marian's sinusoidal table (position " +
                 std::to_string(p) + ", column " + std::to_string(i) + ": " + std::to_string(row[static_cast<size_t>(i)]) +
                 " where the table has " + std::to_string(table(p, i)) + ")");
  }
}

}  // namespace

std::string hf_hub_name(const std::string& folder, const std::string& name_or_path) {
  // "Helsinki-NLP/opus-mt-de-en": one slash, not a path on disk.
  if (!name_or_path.empty() && name_or_path[0] != '/' && name_or_path[0] != '.' &&
      std::count(name_or_path.begin(), name_or_path.end(), '/') == 1)
    return name_or_path;
  // The hub's cache: .../models--Helsinki-NLP--opus-mt-de-en/snapshots/<hash>/
  const size_t at = folder.find("models--");
  if (at != std::string::npos) {
    std::string rest = folder.substr(at + 8);
    rest = rest.substr(0, rest.find('/'));
    const size_t dashes = rest.find("--");
    if (dashes != std::string::npos) return rest.substr(0, dashes) + "/" + rest.substr(dashes + 2);
  }
  std::string f = folder;
  while (f.size() > 1 && f.back() == '/') f.pop_back();
  const size_t slash = f.rfind('/');
  return slash == std::string::npos ? f : f.substr(slash + 1);
}

Model load_hf_marian(const std::string& folder, std::vector<std::string>* warnings, bool read_weights,
                     const std::string& weights_file) {
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  require_folder(folder);

  // config.json: the architecture first, then the sizes.
  const std::string config_path = required_file(folder, "config.json");
  const nlohmann::json j = read_json_file(config_path, kMaxJsonBytes, "a config.json");
  check_marian(j, config_path);
  Config c;
  c.d_model = config_int(j, "d_model", config_path);
  c.n_encoder_layers = config_int(j, "encoder_layers", config_path);
  c.n_decoder_layers = config_int(j, "decoder_layers", config_path);
  c.n_heads = config_int(j, "encoder_attention_heads", config_path);
  if (const int dec_heads = config_int(j, "decoder_attention_heads", config_path, c.n_heads); dec_heads != c.n_heads)
    fail(ErrorKind::Unsupported, kWhere,
         "'" + config_path + "': encoder_attention_heads " + std::to_string(c.n_heads) + " and decoder_attention_heads " +
             std::to_string(dec_heads) + " differ; Stepformer's models have one head count");
  c.d_ff = config_int(j, "encoder_ffn_dim", config_path);
  if (const int dec_ff = config_int(j, "decoder_ffn_dim", config_path, c.d_ff); dec_ff != c.d_ff)
    fail(ErrorKind::Unsupported, kWhere,
         "'" + config_path + "': encoder_ffn_dim " + std::to_string(c.d_ff) + " and decoder_ffn_dim " +
             std::to_string(dec_ff) + " differ; Stepformer's models have one feed-forward size");
  const int vocab_size = config_int(j, "vocab_size", config_path);
  const bool shared = config_bool(j, "share_encoder_decoder_embeddings", true, config_path);
  c.src_vocab_size = vocab_size;
  c.tgt_vocab_size = shared ? vocab_size : config_int(j, "decoder_vocab_size", config_path, vocab_size);
  c.max_positions = config_int(j, "max_position_embeddings", config_path, 512);
  c.positional_encoding = PositionalEncoding::Sinusoidal;
  c.sinusoid_layout = SinusoidLayout::Halves;
  c.embedding_scale = config_bool(j, "scale_embedding", false, config_path) ? EmbeddingScale::SqrtDModel : EmbeddingScale::One;
  c.norm_placement = NormPlacement::Post;
  c.encoder_final_norm = c.decoder_final_norm = false;
  c.activation = marian_activation(config_string(j, "activation_function", "gelu"), config_path);
  c.attention = AttentionStyle::SplitHeads;
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which MarianEncoderLayer uses
  c.bias = true;
  c.share_embeddings = shared;
  c.tie_output_embedding = config_bool(j, "tie_word_embeddings", true, config_path);
  c.pad_id = config_int(j, "pad_token_id", config_path);
  c.eos_id = config_int(j, "eos_token_id", config_path);
  c.bos_id = config_int(j, "decoder_start_token_id", config_path, c.pad_id);  // Marian starts with <pad>

  // tokenizer_config.json (optional) and the vocabularies.
  nlohmann::json tokenizer_config = nlohmann::json::object();
  if (const std::string p = in_folder(folder, "tokenizer_config.json"); path_exists(p)) {
    tokenizer_config = read_json_file(p, kMaxJsonBytes, "a tokenizer_config.json");
    if (!tokenizer_config.is_object()) fail(ErrorKind::Format, kWhere, "'" + p + "' is not a JSON object");
  }
  const bool separate_vocabs = config_bool(tokenizer_config, "separate_vocabs", false, "tokenizer_config.json");
  if (separate_vocabs == shared)
    warn("config.json's share_encoder_decoder_embeddings and tokenizer_config.json's separate_vocabs disagree; the "
         "vocabulary files follow separate_vocabs");
  const std::string vocab_path = required_file(folder, "vocab.json");
  const nlohmann::json vocab_json = read_json_file(vocab_path, kMaxVocabBytes, "a vocab.json");
  const std::string unk_piece = config_string(tokenizer_config, "unk_token", "<unk>");
  const auto unk = vocab_json.is_object() ? vocab_json.find(unk_piece) : vocab_json.end();
  if (!vocab_json.is_object() || unk == vocab_json.end() || !unk->is_number_integer())
    fail(ErrorKind::Format, kWhere, "'" + vocab_path + "' has no " + unk_piece + " (MarianTokenizer needs it)");
  c.unk_id = static_cast<int>(unk->get<int64_t>());
  const std::vector<std::string> src_tokens = vocabulary_tokens(vocab_json, c.src_vocab_size, vocab_path, warn);
  std::vector<std::string> tgt_tokens = src_tokens;
  std::string tgt_vocab_path = vocab_path;
  if (separate_vocabs) {
    tgt_vocab_path = required_file(folder, "target_vocab.json");
    tgt_tokens = vocabulary_tokens(read_json_file(tgt_vocab_path, kMaxVocabBytes, "a target_vocab.json"),
                                   c.tgt_vocab_size, tgt_vocab_path, warn);
  } else if (c.tgt_vocab_size != c.src_vocab_size) {
    fail(ErrorKind::Format, kWhere, "'" + config_path + "': decoder_vocab_size " + std::to_string(c.tgt_vocab_size) +
                                        " differs from vocab_size but there is one vocabulary (vocab.json)");
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + config_path + "': " + e.what());
  }

  Model m;
  m.family = kFamilyMarian;
  m.config = c;
  const SpecialIds ids{c.pad_id, c.bos_id, c.eos_id, c.unk_id};
  m.src_vocab = Vocabulary(src_tokens, ids, vocab_path);
  m.tgt_vocab = Vocabulary(tgt_tokens, ids, tgt_vocab_path);
  m.tokenizer.kind = "sentencepiece";
  m.tokenizer.lowercase = m.tokenizer.split_punctuation = m.tokenizer.moses_escape = false;
  m.tokenizer.normalize_punctuation = false;
  m.tokenizer.add_bos_eos = true;
  m.tokenizer.source_language = config_string(tokenizer_config, "source_lang");
  m.tokenizer.target_language = config_string(tokenizer_config, "target_lang");

  // The SentencePiece models, checked against the vocabularies they feed.
  const std::string source_spm = required_file(folder, "source.spm"), target_spm = required_file(folder, "target.spm");
  m.sentencepiece = std::make_shared<const SentencePieceModels>(
      read_user_file(source_spm, kMaxSpmBytes, "a SentencePiece model", kWhere),
      read_user_file(target_spm, kMaxSpmBytes, "a SentencePiece model", kWhere), source_spm, target_spm, kWhere);
  check_pieces_match(*m.sentencepiece, Side::Source, m.src_vocab, source_spm, vocab_path, warn);
  check_pieces_match(*m.sentencepiece, Side::Target, m.tgt_vocab, target_spm, tgt_vocab_path, warn);

  // How the authors decode: generation_config.json, else config.json's keys of the same names.
  const std::string generation_path = in_folder(folder, "generation_config.json");
  const nlohmann::json g = path_exists(generation_path) ? read_json_file(generation_path, kMaxJsonBytes, "a generation_config.json") : j;
  const std::string g_path = path_exists(generation_path) ? generation_path : config_path;
  if (!g.is_object()) fail(ErrorKind::Format, kWhere, "'" + g_path + "' is not a JSON object");
  m.generation.present = true;
  m.generation.beam_width = config_int(g, "num_beams", g_path, 1);
  m.generation.max_length = std::min(config_int(g, "max_length", g_path, c.max_positions), c.max_positions);
  if (const auto it = g.find("length_penalty"); it != g.end() && it->is_number())
    m.generation.length_penalty = it->get<float>();
  m.generation.renormalize = config_bool(g, "renormalize_logits", false, g_path);
  if (const auto it = g.find("forced_eos_token_id"); it != g.end() && it->is_number_integer())
    m.generation.force_eos = it->get<int64_t>() == c.eos_id;
  if (const auto it = g.find("bad_words_ids"); it != g.end() && it->is_array()) {
    for (const auto& words : *it) {
      if (words.is_array() && words.size() == 1 && words[0].is_number_integer() && words[0].get<int64_t>() >= 0 &&
          words[0].get<int64_t>() < c.tgt_vocab_size)
        m.generation.never_generate.push_back(static_cast<int>(words[0].get<int64_t>()));
      else
        warn("'" + g_path + "': bad_words_ids entry " + words.dump() + " is not one token of the vocabulary: ignored");
    }
  }
  // The decoder starts with <pad>; generating it would be meaningless (Marian bans it: bad_words_ids [[pad]],
  // and earlier transformers versions did so in adjust_logits_during_generation).
  if (std::find(m.generation.never_generate.begin(), m.generation.never_generate.end(), c.pad_id) ==
      m.generation.never_generate.end())
    m.generation.never_generate.push_back(c.pad_id);

  m.provenance = folder_provenance(j, folder, "Hugging Face Marian folder");

  // The weights.
  if (weights_file.empty() && !path_exists(in_folder(folder, "model.safetensors")) &&
      !path_exists(in_folder(folder, "pytorch_model.bin")))
    required_file(folder, "model.safetensors");  // (the error code the app translates)
  const std::string weights = weights_path(folder, weights_file, "Marian", kRequiredFiles);
  SafetensorsFile file = SafetensorsFile::open(weights);
  // Tied matrices are stored once, under whichever of their names the saver kept.
  std::set<std::string> also_known = {"model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight",
                                      "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
                                      "lm_head.weight"};
  if (shared) {
    also_known.insert("model.shared.weight");
    for (const char* alias : {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"})
      if (!file.find("model.shared.weight")) file.add_alias("model.shared.weight", alias);
  } else if (c.tie_output_embedding && !file.find("model.decoder.embed_tokens.weight")) {
    file.add_alias("model.decoder.embed_tokens.weight", "lm_head.weight");
  }
  check_stored_positions(file, c, "model.encoder.embed_positions.weight");
  check_stored_positions(file, c, "model.decoder.embed_positions.weight");
  if (!file.find("final_logits_bias")) warn("'" + weights + "' has no final_logits_bias: zeros, as Hugging Face loads it");
  try {
    read_family_weights(file, m, warnings, read_weights, also_known, {"final_logits_bias"});
  } catch (const Error& e) {
    throw Error(e, "[" + std::string(kWhere) + "] '" + weights + "': " + e.what());
  }
  return m;
}

Model open_model(const std::string& path, std::vector<std::string>* warnings, bool read_weights) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (!path_exists(in_folder(path, "config.json")))
      fail(ErrorKind::File, kWhere,
           "'" + path + "' is a folder without config.json: neither a model file nor a Hugging Face model folder");
    const std::string config_path = in_folder(path, "config.json");
    const nlohmann::json j = read_json_file(config_path, kMaxJsonBytes, "a config.json");
    const std::string type = model_type(j, config_path);
    if (type == "gpt2") return load_hf_gpt2(path, warnings, read_weights);
    if (type == "bert") return load_hf_bert(path, warnings, read_weights);
    if (type == "marian") return load_hf_marian(path, warnings, read_weights);
    fail(ErrorKind::Format, kWhere,
         "'" + config_path + "' describes " + describe_model(j) + "; Stepformer opens " + kOpenedArchitectures);
  }
  return load_model(path, warnings, read_weights);
}

}  // namespace sf
