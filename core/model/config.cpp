#include "model/config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace sf {

using nlohmann::json;

const char* to_string(PositionalEncoding v) { return v == PositionalEncoding::Learned ? "learned" : "sinusoidal"; }
const char* to_string(EmbeddingScale v) { return v == EmbeddingScale::One ? "one" : "sqrt_d_model"; }
const char* to_string(NormPlacement v) { return v == NormPlacement::Pre ? "pre" : "post"; }
const char* to_string(SinusoidLayout v) { return v == SinusoidLayout::Halves ? "halves" : "interleaved"; }
const char* to_string(Activation v) {
  switch (v) {
    case Activation::GELU: return "gelu";
    case Activation::SiLU: return "silu";
    case Activation::GELUTanh: return "gelu_tanh";
    case Activation::ReLU: break;
  }
  return "relu";
}
const char* to_string(AttentionStyle v) { return v == AttentionStyle::ReshapeHeads ? "reshape_heads" : "split_heads"; }
const char* to_string(ModelStacks v) {
  return v == ModelStacks::DecoderOnly ? "decoder_only" : v == ModelStacks::EncoderOnly ? "encoder_only" : "encoder_decoder";
}
const char* to_string(OutputHead v) { return v == OutputHead::MaskedLM ? "masked_lm" : "linear"; }

void Config::validate() const {
  auto bad = [](const std::string& what) { fail(ErrorKind::Config, "config", what); };
  auto positive = [&](const char* name, int v) {
    if (v <= 0)
      fail(ErrorKind::Config, ErrorCode::ConfigNotPositive, "config", {{"key", name}, {"value", v}},
           std::string(name) + " must be positive, got " + std::to_string(v));
  };
  positive("d_model", d_model);
  positive("n_heads", n_heads);
  // Each stack the shape has needs layers and a vocabulary; a stack it lacks has none (its keys 0).
  auto stack = [&](bool present, const char* stack_name, const char* layers_name, int layers, const char* vocab_name,
                   int vocab) {
    if (present) {
      positive(layers_name, layers);
      positive(vocab_name, vocab);
    } else if (layers != 0 || vocab != 0) {
      bad(std::string("a ") + to_string(stacks) + " model has no " + stack_name + ": " + layers_name + " and " +
          vocab_name + " must be 0, got " + std::to_string(layers) + " and " + std::to_string(vocab));
    }
  };
  stack(has_encoder(), "encoder", "n_encoder_layers", n_encoder_layers, "src_vocab_size", src_vocab_size);
  stack(has_decoder(), "decoder", "n_decoder_layers", n_decoder_layers, "tgt_vocab_size", tgt_vocab_size);
  positive("d_ff", d_ff);
  if (!has_encoder() && (encoder_final_norm || share_embeddings))
    bad("a decoder_only model has no encoder: encoder_final_norm and share_embeddings must be false");
  if (!has_decoder() && (decoder_final_norm || share_embeddings))
    bad("an encoder_only model has no decoder: decoder_final_norm and share_embeddings must be false");
  positive("max_positions", max_positions);
  if (d_model % n_heads != 0)
    fail(ErrorKind::Config, ErrorCode::ConfigHeadsDoNotDivide, "config", {{"heads", n_heads}, {"width", d_model}},
         "n_heads (" + std::to_string(n_heads) + ") does not divide d_model (" + std::to_string(d_model) + ")");
  if (d_model > 65536 || d_ff > 262144 || n_heads > 1024 || n_encoder_layers > 256 || n_decoder_layers > 256 ||
      max_positions > 65536 || src_vocab_size > 4'000'000 || tgt_vocab_size > 4'000'000)
    bad("a dimension is implausibly large (d_model " + std::to_string(d_model) + ", d_ff " + std::to_string(d_ff) +
        ", heads " + std::to_string(n_heads) + ", max_positions " + std::to_string(max_positions) + ")");
  if (!(layer_norm_eps > 0.0f) || !std::isfinite(layer_norm_eps))
    bad("layer_norm_eps must be a positive finite number");
  if (share_embeddings && src_vocab_size != tgt_vocab_size)
    bad("share_embeddings needs equal vocabulary sizes (source " + std::to_string(src_vocab_size) + ", target " +
        std::to_string(tgt_vocab_size) + ")");
  const int smaller_vocab = has_encoder() && has_decoder() ? std::min(src_vocab_size, tgt_vocab_size)
                           : has_encoder()                ? src_vocab_size
                                                          : tgt_vocab_size;
  auto special = [&](const char* name, int id) {
    if (id < 0 || id >= smaller_vocab)
      fail(ErrorKind::Config, ErrorCode::ConfigIdOutsideVocabulary, "config",
           {{"key", name}, {"id", id}, {"size", smaller_vocab}},
           std::string(name) + " (" + std::to_string(id) + ") is outside the vocabulary (size " +
               std::to_string(smaller_vocab) + ")");
  };
  special("pad_id", pad_id);
  special("bos_id", bos_id);
  special("eos_id", eos_id);
  special("unk_id", unk_id);
  // pad_id == bos_id is Marian's decoder start. GPT-2 has one special token, <|endoftext|>, for all four: its start
  // is read only when the prompt is empty and it pads nothing (one sequence), so a decoder-only model that reads
  // its prompt as it is (starts_with_bos false) may have it.
  const bool one_special_token = stacks == ModelStacks::DecoderOnly && !starts_with_bos;
  if ((bos_id == eos_id || pad_id == eos_id) && !one_special_token)
    bad("eos_id must differ from pad_id and bos_id");
  if (!starts_with_bos && stacks != ModelStacks::DecoderOnly) bad("starts_with_bos false is for decoder_only models");
  if (mask_id != -1) {
    if (stacks != ModelStacks::EncoderOnly) bad("mask_id is for encoder_only (masked language) models");
    special("mask_id", mask_id);
    if (mask_id == pad_id || mask_id == bos_id || mask_id == eos_id || mask_id == unk_id)
      bad("mask_id must differ from pad_id, bos_id, eos_id and unk_id");
  }
  // BERT's parts (type_vocab_size, embedding_norm, output_head masked_lm) sit on an encoder's input and on the
  // output head over an encoder: only the encoder_only shape has them.
  if (type_vocab_size < 0 || type_vocab_size > 1024)
    bad("type_vocab_size must be from 0 (no token-type embeddings) to 1024, got " + std::to_string(type_vocab_size));
  const bool encoder_only = stacks == ModelStacks::EncoderOnly;
  if (type_vocab_size != 0 && !encoder_only)
    bad("type_vocab_size (token-type embeddings) is for encoder_only models, this is " +
        std::string(to_string(stacks)));
  if (embedding_norm && !encoder_only)
    bad("embedding_norm is for encoder_only models, this is " + std::string(to_string(stacks)));
  if (output_head == OutputHead::MaskedLM && !encoder_only)
    bad("output_head \"masked_lm\" is for encoder_only models, this is " + std::string(to_string(stacks)));
}

void require_encoder_decoder(const Config& config, const std::string& what) {
  if (config.stacks != ModelStacks::EncoderDecoder)
    fail(ErrorKind::Unsupported, ErrorCode::ModelShapeUnsupported, what, {{"shape", to_string(config.stacks)}},
         std::string("this is a ") + to_string(config.stacks) +
             " model: only encoder-decoder (translation) models are taken here, for now");
}

namespace {

// The shortest decimal that reads back as the same float: 1e-05, not float-widened 9.999999747378752e-06.
double shortest_decimal(float value) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
    const double d = std::strtod(text, nullptr);
    if (static_cast<float>(d) == value) return d;
  }
  return value;
}

}  // namespace

json config_to_json(const Config& c) {
  json j{{"d_model", c.d_model},
              {"n_heads", c.n_heads},
              {"n_encoder_layers", c.n_encoder_layers},
              {"n_decoder_layers", c.n_decoder_layers},
              {"d_ff", c.d_ff},
              {"src_vocab_size", c.src_vocab_size},
              {"tgt_vocab_size", c.tgt_vocab_size},
              {"max_positions", c.max_positions},
              {"positional_encoding", to_string(c.positional_encoding)},
              {"sinusoid_layout", to_string(c.sinusoid_layout)},
              {"embedding_scale", to_string(c.embedding_scale)},
              {"norm_placement", to_string(c.norm_placement)},
              {"encoder_final_norm", c.encoder_final_norm},
              {"decoder_final_norm", c.decoder_final_norm},
              {"activation", to_string(c.activation)},
              {"attention", to_string(c.attention)},
              {"layer_norm_eps", shortest_decimal(c.layer_norm_eps)},
              {"bias", c.bias},
              {"tie_output_embedding", c.tie_output_embedding},
              {"share_embeddings", c.share_embeddings},
              {"pad_id", c.pad_id},
              {"bos_id", c.bos_id},
              {"eos_id", c.eos_id},
              {"unk_id", c.unk_id}};
  // The keys of the shape, written where they say something the older keys do not: every file of an
  // encoder-decoder model with the generator's bias as its other layers' stays as it was, byte for byte.
  if (c.stacks != ModelStacks::EncoderDecoder) j["stacks"] = to_string(c.stacks);
  if (c.output_head != OutputHead::Linear) j["output_head"] = to_string(c.output_head);
  if (c.bias && !c.output_bias) j["output_bias"] = false;  // (without `bias` no layer has one, the output's neither)
  if (!c.starts_with_bos) j["starts_with_bos"] = false;     // GPT-2's: the prompt as it is
  if (c.mask_id != -1) j["mask_id"] = c.mask_id;            // a masked language model's [MASK]
  if (c.type_vocab_size != 0) j["type_vocab_size"] = c.type_vocab_size;  // BERT's token-type embeddings
  if (c.embedding_norm) j["embedding_norm"] = true;                       // BERT's embeddings.LayerNorm
  return j;
}

namespace {

template <typename T>
void read_key(const json& j, const char* key, T& out, bool required = false) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required)
      fail(ErrorKind::Config, ErrorCode::ConfigKeyMissing, "config", {{"key", key}},
           std::string("missing key '") + key + "'");
    return;
  }
  try {
    if constexpr (std::is_same_v<T, int>) {
      if (!it->is_number_integer()) throw std::runtime_error("");
      const auto v = it->get<int64_t>();
      if (v < INT32_MIN || v > INT32_MAX) throw std::runtime_error("");
      out = static_cast<int>(v);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) throw std::runtime_error("");
      out = it->get<bool>();
    } else {
      if (!it->is_number()) throw std::runtime_error("");
      out = it->get<T>();
    }
  } catch (...) {
    fail(ErrorKind::Config, ErrorCode::ConfigKeyWrongType, "config", {{"key", key}, {"found", it->dump()}},
         std::string("key '") + key + "' has the wrong type: " + it->dump());
  }
}

template <typename E>
void read_enum(const json& j, const char* key, E& out, std::initializer_list<std::pair<const char*, E>> options) {
  auto it = j.find(key);
  if (it == j.end()) return;
  std::string allowed;
  if (it->is_string()) {
    for (const auto& [name, value] : options) {
      if (it->get<std::string>() == name) {
        out = value;
        return;
      }
    }
  }
  for (const auto& [name, value] : options) allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  fail(ErrorKind::Config, "config", std::string("key '") + key + "' is " + it->dump() + "; expected one of " + allowed);
}

}  // namespace

Config config_from_json(const json& j) {
  if (!j.is_object()) fail(ErrorKind::Config, "config", "expected a JSON object, got " + std::string(j.type_name()));
  Config c;
  read_enum(j, "stacks", c.stacks,
            {{"encoder_decoder", ModelStacks::EncoderDecoder}, {"decoder_only", ModelStacks::DecoderOnly},
             {"encoder_only", ModelStacks::EncoderOnly}});
  read_key(j, "d_model", c.d_model, true);
  read_key(j, "n_heads", c.n_heads, true);
  // A stack's keys are required where the shape has the stack; where it has not, absent means 0.
  if (!c.has_encoder()) c.n_encoder_layers = c.src_vocab_size = 0;
  if (!c.has_decoder()) c.n_decoder_layers = c.tgt_vocab_size = 0;
  read_key(j, "n_encoder_layers", c.n_encoder_layers, c.has_encoder());
  read_key(j, "n_decoder_layers", c.n_decoder_layers, c.has_decoder());
  read_key(j, "d_ff", c.d_ff, true);
  read_key(j, "src_vocab_size", c.src_vocab_size, c.has_encoder());
  read_key(j, "tgt_vocab_size", c.tgt_vocab_size, c.has_decoder());
  read_key(j, "max_positions", c.max_positions);
  read_enum(j, "positional_encoding", c.positional_encoding,
            {{"sinusoidal", PositionalEncoding::Sinusoidal}, {"learned", PositionalEncoding::Learned}});
  read_enum(j, "sinusoid_layout", c.sinusoid_layout,
            {{"interleaved", SinusoidLayout::Interleaved}, {"halves", SinusoidLayout::Halves}});
  read_enum(j, "embedding_scale", c.embedding_scale,
            {{"sqrt_d_model", EmbeddingScale::SqrtDModel}, {"one", EmbeddingScale::One}});
  read_enum(j, "norm_placement", c.norm_placement, {{"post", NormPlacement::Post}, {"pre", NormPlacement::Pre}});
  read_key(j, "encoder_final_norm", c.encoder_final_norm);
  read_key(j, "decoder_final_norm", c.decoder_final_norm);
  read_enum(j, "activation", c.activation, {{"relu", Activation::ReLU}, {"gelu", Activation::GELU}, {"silu", Activation::SiLU},
             {"gelu_tanh", Activation::GELUTanh}});
  read_enum(j, "attention", c.attention,
            {{"split_heads", AttentionStyle::SplitHeads}, {"reshape_heads", AttentionStyle::ReshapeHeads}});
  read_key(j, "layer_norm_eps", c.layer_norm_eps);
  read_key(j, "bias", c.bias);
  read_enum(j, "output_head", c.output_head, {{"linear", OutputHead::Linear}, {"masked_lm", OutputHead::MaskedLM}});
  c.output_bias = c.bias;  // absent: as every other linear layer (the files before the key existed)
  read_key(j, "output_bias", c.output_bias);
  read_key(j, "tie_output_embedding", c.tie_output_embedding);
  read_key(j, "share_embeddings", c.share_embeddings);
  read_key(j, "pad_id", c.pad_id);
  read_key(j, "bos_id", c.bos_id);
  read_key(j, "eos_id", c.eos_id);
  read_key(j, "unk_id", c.unk_id);
  read_key(j, "starts_with_bos", c.starts_with_bos);
  read_key(j, "mask_id", c.mask_id);
  read_key(j, "type_vocab_size", c.type_vocab_size);
  read_key(j, "embedding_norm", c.embedding_norm);
  return c;
}

}  // namespace sf
