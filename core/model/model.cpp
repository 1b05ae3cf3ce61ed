#include "model/model.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <unordered_set>

#include "io/json_text.h"
#include "model/name_tables.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/memory.h"
#include "util/tensor.h"
#include "util/utf8.h"

namespace sf {

nlohmann::json generation_defaults_to_json(const GenerationDefaults& g) {
  return nlohmann::json{{"beam_width", g.beam_width},
                        {"length_penalty", g.length_penalty},
                        {"max_length", g.max_length},
                        {"never_generate", g.never_generate},
                        {"renormalize", g.renormalize},
                        {"force_eos", g.force_eos}};
}

GenerationDefaults generation_defaults_from_json(const nlohmann::json& j) {
  const char* where = "generation";
  if (!j.is_object()) fail(ErrorKind::Format, where, "not a JSON object");
  GenerationDefaults g;
  g.present = true;
  auto integer = [&](const char* key, int& out, int most) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > most)
      fail(ErrorKind::Format, where, std::string("key '") + key + "' must be a whole number from 0 to " +
                                         std::to_string(most) + ", is " + it->dump());
    out = static_cast<int>(it->get<int64_t>());
  };
  integer("beam_width", g.beam_width, 1 << 20);
  integer("max_length", g.max_length, 1 << 20);
  if (const auto it = j.find("length_penalty"); it != j.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      fail(ErrorKind::Format, where, "key 'length_penalty' must be a number, is " + it->dump());
    g.length_penalty = it->get<float>();
  }
  for (const auto& [key, flag] : {std::pair<const char*, bool*>{"renormalize", &g.renormalize}, {"force_eos", &g.force_eos}}) {
    const auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_boolean()) fail(ErrorKind::Format, where, std::string("key '") + key + "' must be true or false");
    *flag = it->get<bool>();
  }
  if (const auto it = j.find("never_generate"); it != j.end()) {
    if (!it->is_array() || it->size() > 1024)
      fail(ErrorKind::Format, where, "key 'never_generate' must be a list of at most 1024 token ids");
    for (const auto& id : *it) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        fail(ErrorKind::Format, where, "key 'never_generate' holds " + id.dump() + ", not a token id");
      g.never_generate.push_back(static_cast<int>(id.get<int64_t>()));
    }
  }
  return g;
}

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const TensorSpec& spec : weight_layout(family, config)) n += spec.numel();
  return n;
}

namespace {

constexpr const char* kLoad = "load_model";

SpecialIds special_ids(const Config& c) { return SpecialIds{c.pad_id, c.bos_id, c.eos_id, c.unk_id}; }

// Runs `f`, re-throwing an sf::Error of a helper with the file named: "[load_model] 'a.safetensors': [config] ...".
template <typename F>
auto in_context(const std::string& origin, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e, std::string("[") + kLoad + "] '" + origin + "': " + e.what());
  }
}

const std::string& required_metadata(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end()) {
    if (key == "format")
      fail(ErrorKind::Missing, ErrorCode::NotAModel, kLoad, {{"path", file.origin()}},
           "'" + file.origin() + "' has no __metadata__ \"format\": it is a safetensors file but not a Stepformer "
           "model (convert PyTorch checkpoints with tools/convert_pytorch.py)");
    fail(ErrorKind::Missing, ErrorCode::MetadataMissing, kLoad, {{"path", file.origin()}, {"key", key}},
         "'" + file.origin() + "' has no __metadata__ \"" + key + "\"");
  }
  return it->second;
}

// The tensor of one slot, checked: present, the expected shape, a float dtype.
const TensorView& checked_tensor(const SafetensorsFile& file, const TensorSpec& spec) {
  const TensorView* t = file.find(spec.name);
  const std::string expected = shape_string(spec.shape);
  if (!t)
    fail(ErrorKind::Missing, ErrorCode::TensorMissing, kLoad,
         {{"path", file.origin()}, {"tensor", spec.name}, {"expected", expected}},
         "'" + file.origin() + "': missing tensor '" + spec.name + "' " + expected);
  if (t->shape != spec.shape) {
    const std::string found = shape_string(t->shape);
    fail(ErrorKind::Shape, ErrorCode::TensorWrongShape, kLoad,
         {{"tensor", spec.name}, {"expected", expected}, {"found", found}},
         "tensor '" + spec.name + "': expected " + expected + ", found " + found);
  }
  if (!dtype_is_float_readable(t->dtype))
    fail(ErrorKind::Unsupported, ErrorCode::TensorDtypeUnsupported, kLoad,
         {{"tensor", spec.name}, {"dtype", dtype_name(t->dtype)}},
         "tensor '" + spec.name + "' has dtype " + dtype_name(t->dtype) + " (expected F32, F16 or BF16)");
  return *t;
}

// `values` are the tensor's elements from `first` on.
void check_finite(const std::string& name, std::span<const float> values, const char* where, int64_t first = 0) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    const char* what = std::isnan(values[i]) ? "NaN" : "Inf";
    const int64_t index = first + static_cast<int64_t>(i);
    fail(ErrorKind::Value, ErrorCode::WeightNotFinite, where, {{"tensor", name}, {"value", what}, {"index", index}},
         "tensor '" + name + "' holds " + what + " at flat index " + std::to_string(index));
  }
}

// The weights as floats, plus the linear layers' packed copies (weights.h: halves, or floats for a model that is
// not F16), must fit in this machine's memory with room to spare; else the model is refused before anything is
// allocated, with the numbers.
void check_weight_memory(const std::string& origin, const std::vector<TensorSpec>& layout) {
  double values = 0;
  for (const TensorSpec& spec : layout) values += static_cast<double>(spec.numel());
  const double bytes = values * 8.0;
  const double memory = physical_memory_bytes();
  if (bytes > 0.75 * memory) {
    char text[300];
    std::snprintf(text, sizeof text,
                  "the model has %.0f million weights, which need about %.1f GB of memory to load; this machine has "
                  "%.1f GB",
                  values / 1e6, bytes / 1e9, memory / 1e9);
    fail(ErrorKind::Config, kLoad, "'" + origin + "': " + text);
  }
}

}  // namespace

namespace {

// A key this version does not read is most likely a typo ("d_modle") that would otherwise run the defaults
// silently: each one becomes a warning that names it and the keys there are.
void warn_unknown_keys(const nlohmann::json& j, const nlohmann::json& every_key, const char* what,
                       const std::function<void(const std::string&)>& warn) {
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    if (every_key.contains(key)) continue;
    std::string known;
    for (const auto& [k, v] : every_key.items()) known += (known.empty() ? "" : ", ") + k;
    warn(std::string(what) + " key '" + key + "' is not one this version knows and is ignored (a typo? the keys are " +
         known + ")");
  }
}

}  // namespace

Model load_model(const std::string& path, std::vector<std::string>* warnings, bool read_weights) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  return load_model(file, warnings, read_weights);
}

Model read_model_description(const SafetensorsFile& file, const std::string& expected_format,
                             std::vector<std::string>* warnings) {
  const std::string& origin = file.origin();
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  Model m;

  // Metadata: what this file is, then the config, vocabularies and tokenizer settings.
  const std::string& format = required_metadata(file, "format");
  if (format == kTimelineFormat && expected_format == kModelFormat)
    fail(ErrorKind::Format, ErrorCode::TimelineNotModel, kLoad, {{"path", origin}},
         "'" + origin + "' is a training timeline (snapshots of a run), not a model: open the model file it belongs "
         "to");
  if (format != expected_format)
    fail(ErrorKind::Format, kLoad, "'" + origin + "': __metadata__ \"format\" is '" + format + "', expected '" +
                                       expected_format + "'");
  const std::string& version = required_metadata(file, "format_version");
  if (version != kModelFormatVersion)
    fail(ErrorKind::Unsupported, ErrorCode::FormatVersionUnsupported, kLoad,
         {{"path", origin}, {"version", version}, {"supported", kModelFormatVersion}},
         "'" + origin + "': format_version '" + version + "' is not supported by this build (it reads version " +
             kModelFormatVersion + ")");
  m.family = required_metadata(file, "family");
  if (!is_known_family(m.family))
    fail(ErrorKind::Format, ErrorCode::UnknownFamily, kLoad, {{"family", m.family}},
         "'" + origin + "': unknown family '" + m.family + "' (expected " + known_families_text() + ")");

  m.config = in_context(origin, [&] {
    const nlohmann::json j = parse_json_text(required_metadata(file, "config"), "metadata", "\"config\"");
    Config c = config_from_json(j);
    // Every key: the defaults' JSON, and the keys config_to_json writes only where they say something.
    nlohmann::json every_key = config_to_json(Config{});
    for (const char* key : {"stacks", "output_head", "output_bias", "starts_with_bos", "mask_id", "type_vocab_size",
                            "embedding_norm"})
      every_key[key] = nullptr;
    warn_unknown_keys(j, every_key, "config", warn);
    c.validate();
    check_family_config(m.family, c, "config");
    return c;
  });
  const Config& c = m.config;

  auto vocabulary = [&](const char* key, int expected_size, const char* size_key) {
    return in_context(origin, [&] {
      const nlohmann::json j = parse_json_text(required_metadata(file, key), "metadata", std::string("\"") + key + "\"");
      Vocabulary v = Vocabulary::from_json(j, special_ids(c), key);
      if (v.size() != expected_size)
        fail(ErrorKind::Config, key, "holds " + std::to_string(v.size()) + " tokens, but the config's " + size_key +
                                         " is " + std::to_string(expected_size));
      return v;
    });
  };
  // A vocabulary for each stack the model has (config.stacks): a decoder-only model has no source's, an
  // encoder-only model no target's.
  if (c.has_encoder()) m.src_vocab = vocabulary("src_vocab", c.src_vocab_size, "src_vocab_size");
  if (c.has_decoder()) m.tgt_vocab = vocabulary("tgt_vocab", c.tgt_vocab_size, "tgt_vocab_size");

  const auto& meta = file.metadata();
  if (const auto it = meta.find("tokenizer"); it != meta.end()) {
    m.tokenizer = in_context(origin, [&] {
      const nlohmann::json j = parse_json_text(it->second, "metadata", "\"tokenizer\"");
      TokenizerSettings every_key;  // the keys of every kind (wordpiece's are written only for it)
      every_key.kind = "wordpiece";
      warn_unknown_keys(j, tokenizer_settings_to_json(every_key), "tokenizer", warn);
      return tokenizer_settings_from_json(j);
    });
  } else {
    warn("no tokenizer settings in the file: using the defaults (lowercase, Moses punctuation splitting)");
  }
  if (const auto it = meta.find("generation"); it != meta.end()) {
    m.generation = in_context(origin, [&] {
      return generation_defaults_from_json(parse_json_text(it->second, "metadata", "\"generation\""));
    });
    for (int id : m.generation.never_generate)
      if (id >= c.tgt_vocab_size)
        fail(ErrorKind::Format, kLoad, "'" + origin + "': generation's never_generate holds id " + std::to_string(id) +
                                           ", outside the target vocabulary (" + std::to_string(c.tgt_vocab_size) + ")");
  }
  if (const auto it = meta.find("provenance"); it != meta.end()) {
    m.provenance = in_context(origin, [&] { return parse_json_text(it->second, "metadata", "\"provenance\""); });
    if (!m.provenance.is_object())
      fail(ErrorKind::Format, kLoad, "'" + origin + "': __metadata__ \"provenance\" is not a JSON object");
  }

  return m;
}

namespace {

// The bytes of a tokenizer tensor (tokenizer.*_spm, tokenizer.bpe_merges): 1-D I8, at most kMaxSpmBytes.
std::string tokenizer_tensor_bytes(const SafetensorsFile& file, const char* name, const char* kind = "SentencePiece",
                                   const char* what = "its model") {
  constexpr int64_t kMaxSpmBytes = 64ll << 20;  // real ones are under 1 MB
  const TensorView* t = file.find(name);
  if (!t)
    fail(ErrorKind::Missing, kLoad, "'" + file.origin() + "': the tokenizer is " + kind + " but tensor '" + name +
                                        "' (" + what + ") is missing");
  if (t->dtype != DType::I8 || t->shape.size() != 1 || t->numel() > kMaxSpmBytes)
    fail(ErrorKind::Format, kLoad, "'" + file.origin() + "': tensor '" + name + "' must be 1-D I8 of at most 64 MiB, is " +
                                       dtype_name(t->dtype) + " " + shape_string(t->shape));
  const std::vector<std::byte> bytes = t->read_bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

void read_family_weights(const SafetensorsFile& file, Model& m, std::vector<std::string>* warnings, bool read_weights,
                         const std::set<std::string>& also_known, const std::set<std::string>& may_be_missing) {
  const std::string& origin = file.origin();
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  const Config& c = m.config;

  // Weights: check every tensor the family needs (present, shape, dtype) before allocating anything, so the
  // file's own size bounds the memory a hostile config can make us take.
  const std::vector<TensorSpec> layout = weight_layout(m.family, c);
  auto absent = [&](const std::string& name) { return may_be_missing.count(name) && !file.find(name); };
  for (const TensorSpec& spec : layout)
    if (!absent(spec.name)) checked_tensor(file, spec);

  // Weights the machine could not hold are refused before anything is read or allocated, by `info` too (which
  // checks every value without keeping them): a model `info` calls usable loads.
  check_weight_memory(origin, layout);
  if (!read_weights) {
    // Every value is still checked (NaN, Inf), through a small buffer: memory stays that of the header.
    std::vector<float> chunk(1 << 18);
    for (const TensorSpec& spec : layout) {
      if (absent(spec.name)) continue;
      const TensorView& t = checked_tensor(file, spec);
      for (int64_t first = 0; first < t.numel(); first += static_cast<int64_t>(chunk.size())) {
        stop_if_cancelled();
        const std::span<float> piece(chunk.data(), static_cast<size_t>(std::min<int64_t>(chunk.size(), t.numel() - first)));
        t.read_floats(first, piece);
        check_finite(spec.name, piece, kLoad, first);
      }
    }
  } else {
    m.weights = allocate_weights(c);
    for (const WeightSlot& slot : weight_slots(m.family, c, m.weights, kLoad)) {
      if (absent(slot.name)) continue;
      const TensorView& t = checked_tensor(file, TensorSpec{slot.name, slot.shape});
      if (slot.transposed) {  // GPT-2's Conv1D [in, out]: this one tensor through a buffer, then into place
        stop_if_cancelled();
        std::vector<float> stored(static_cast<size_t>(t.numel()));
        t.read_floats(0, stored);
        check_finite(slot.name, stored, kLoad, 0);
        read_slot(stored, slot);
        continue;
      }
      int64_t first = 0;
      for (const std::span<float>& part : slot.parts) {  // in_proj_weight: W_q, W_k, W_v one after another
        stop_if_cancelled();  // (the app quits, or opens another model, while this one loads: util/cancel.h)
        t.read_floats(first, part);  // straight into the weight: no second copy of a large tensor
        check_finite(slot.name, part, kLoad, first);
        first += static_cast<int64_t>(part.size());
      }
    }
    complete_shared_weights(c, m.weights);
    stop_if_cancelled();
    attach_packed_weights(m.weights);  // laid out for the few-row kernel; a model stored as F16 as halves (model/weights.h)
  }

  std::unordered_set<std::string> known(also_known.begin(), also_known.end());
  for (const TensorSpec& spec : layout) known.insert(spec.name);
  for (const TensorView& t : file.tensors()) {
    if (!known.count(t.name))
      warn("unknown tensor '" + t.name + "' " + dtype_name(t.dtype) + " " + shape_string(t.shape) +
           " is not part of family '" + m.family + "': ignored");
  }
}

Model load_model(const SafetensorsFile& file, std::vector<std::string>* warnings, bool read_weights) {
  Model m = read_model_description(file, kModelFormat, warnings);
  std::set<std::string> spm_tensors;
  if (uses_sentencepiece(m.tokenizer)) {
    m.sentencepiece = in_context(file.origin(), [&] {
      return std::make_shared<const SentencePieceModels>(tokenizer_tensor_bytes(file, kSourceSpmTensor),
                                                         tokenizer_tensor_bytes(file, kTargetSpmTensor), kSourceSpmTensor,
                                                         kTargetSpmTensor);
    });
    spm_tensors = {kSourceSpmTensor, kTargetSpmTensor};
  } else if (m.tokenizer.kind == "byte_bpe") {
    if (!m.config.has_decoder() || m.config.has_encoder())
      fail(ErrorKind::Config, kLoad, "'" + file.origin() + "': a byte_bpe tokenizer serves a decoder_only model");
    m.byte_bpe = in_context(file.origin(), [&] {
      return std::make_shared<const ByteBpe>(ByteBpe::from_pieces(
          m.tgt_vocab.tokens(), tokenizer_tensor_bytes(file, kBpeMergesTensor, "byte-level BPE", "its merges"),
          kBpeMergesTensor));
    });
    spm_tensors = {kBpeMergesTensor};
  } else if (m.tokenizer.kind == "wordpiece") {
    if (m.config.stacks != ModelStacks::EncoderOnly)
      fail(ErrorKind::Config, kLoad, "'" + file.origin() + "': a wordpiece tokenizer serves an encoder_only model");
    m.wordpiece = in_context(file.origin(), [&] { return make_wordpiece(m); });
  }
  read_family_weights(file, m, warnings, read_weights, spm_tensors);
  return m;
}

namespace {

// Where the literal mask token ("[MASK]", any case) starts in `text` at or after `from`; npos when nowhere.
size_t find_mask_literal(std::string_view text, size_t from) {
  constexpr std::string_view kLiteral = "[mask]";
  for (size_t at = text.find('[', from); at != std::string_view::npos; at = text.find('[', at + 1)) {
    if (text.size() - at < kLiteral.size()) return std::string_view::npos;
    bool same = true;
    for (size_t i = 0; i < kLiteral.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(text[at + i])) == kLiteral[i];
    if (same) return at;
  }
  return std::string_view::npos;
}

// A masked language model's word tokenizer: each literal "[MASK]" (any case) is its mask token, whole, with its
// span in the text; the text between goes through the Moses rules (which would make "[MASK]" three tokens,
// "&#91; mask &#93;"), spans moved to where that text lies.
std::vector<Token> encode_with_mask_literal(const Model& model, std::string_view text, bool specials) {
  if (text.size() > kMaxSentenceBytes)
    fail(ErrorKind::Input, "encode", "the sentence is " + std::to_string(text.size()) + " bytes; the limit is " +
                                         std::to_string(kMaxSentenceBytes));
  const Vocabulary& vocabulary = model.src_vocab;  // an encoder-only model reads its source vocabulary
  const int mask_id = model.config.mask_id;
  TokenizerSettings between = model.tokenizer;
  between.add_bos_eos = false;
  std::vector<Token> out;
  const bool ends = specials && model.tokenizer.add_bos_eos;
  if (ends) out.push_back(special_token(vocabulary, vocabulary.specials().bos, 0));
  size_t from = 0;
  while (from <= text.size()) {
    const size_t mask_at = find_mask_literal(text, from);
    const size_t segment_end = mask_at == std::string_view::npos ? text.size() : mask_at;
    for (Token& t : encode(text.substr(from, segment_end - from), between, vocabulary, Side::Source)) {
      t.begin += from;
      t.end += from;
      out.push_back(std::move(t));
    }
    if (mask_at == std::string_view::npos) break;
    Token mask;
    mask.text = vocabulary.token(mask_id);
    mask.surface = std::string(text.substr(mask_at, 6));
    mask.begin = mask_at;
    mask.end = mask_at + 6;
    mask.id = mask_id;
    out.push_back(std::move(mask));
    from = mask_at + 6;
  }
  if (ends) out.push_back(special_token(vocabulary, vocabulary.specials().eos, text.size()));
  return out;
}

}  // namespace

std::vector<Token> encode_text(const Model& model, std::string_view text, Side side, bool specials) {
  const Vocabulary& vocabulary = side == Side::Source ? model.src_vocab : model.tgt_vocab;
  if (model.config.has_mask_token() && model.tokenizer.kind == "words" && side == Side::Source)
    return encode_with_mask_literal(model, text, specials);
  if (model.tokenizer.kind == "sentencepiece") {
    if (!model.sentencepiece)
      fail(ErrorKind::Config, "encode", "the model's tokenizer is SentencePiece but it has no SentencePiece models");
    // Marian: the source ends with </s> and has no start token (the decoder's start is the config's bos).
    return encode_pieces(text, *model.sentencepiece, vocabulary, side,
                         specials && side == Side::Source && model.tokenizer.add_bos_eos);
  }
  if (model.tokenizer.kind == "words_bpe") {
    if (!model.sentencepiece)
      fail(ErrorKind::Config, "encode", "the model's tokenizer is words_bpe but it has no SentencePiece model");
    // The words as the word-level rules make them ("Zylinderhut" -> "zylinderhut"), then each word's pieces
    // ("▁zylinder" "hut"), every piece keeping its word's span of the text (the typed word, shown on hover).
    TokenizerSettings words = model.tokenizer;
    words.add_bos_eos = false;
    std::vector<Token> out;
    if (specials && model.tokenizer.add_bos_eos) out.push_back(special_token(vocabulary, vocabulary.specials().bos, 0));
    for (const Token& word : tokenize(text, words, side))
      for (const Piece& piece : model.sentencepiece->split(word.text, side)) {
        Token t;
        t.text = piece.piece;
        t.surface = word.surface;
        t.begin = word.begin;
        t.end = word.end;
        const std::optional<int> id = vocabulary.find(piece.piece);
        t.id = id ? *id : vocabulary.specials().unk;
        t.unknown = !id;
        out.push_back(std::move(t));
      }
    if (specials && model.tokenizer.add_bos_eos)
      out.push_back(special_token(vocabulary, vocabulary.specials().eos, text.size()));
    return out;
  }
  if (model.tokenizer.kind == "byte_bpe") {
    if (!model.byte_bpe)
      fail(ErrorKind::Config, "encode", "the model's tokenizer is byte-level BPE but it has no merges");
    if (text.size() > kMaxSentenceBytes)
      fail(ErrorKind::Input, "encode", "the text is " + std::to_string(text.size()) + " bytes; at most " +
                                           std::to_string(kMaxSentenceBytes) + " are taken");
    // The pieces' bytes follow one another through the text (invalid UTF-8 became U+FFFD, 3 bytes each: the
    // spans then count in the cleaned text, clamped to the input).
    std::vector<Token> tokens;
    size_t at = 0;
    for (const BytePiece& p : model.byte_bpe->encode_pieces(text)) {
      Token t;
      t.text = p.text;
      t.surface = p.bytes;
      t.begin = std::min(at, text.size());
      at += p.bytes.size();
      t.end = std::min(at, text.size());
      t.id = p.id;
      t.special = p.id == model.byte_bpe->end_of_text_id();
      tokens.push_back(std::move(t));
    }
    return tokens;
  }
  if (model.tokenizer.kind == "wordpiece") {
    if (!model.wordpiece) fail(ErrorKind::Config, "encode", "the model's tokenizer is WordPiece but it has none");
    // [CLS] pieces [SEP] (a BERT input always has both: `specials` false gives the pieces alone); each piece keeps
    // the span of the text it came from, an [UNK] its whole word.
    std::vector<Token> tokens;
    for (const WordPieceToken& p : model.wordpiece->encode(text, specials && model.tokenizer.add_bos_eos)) {
      Token t;
      t.text = p.piece;
      t.begin = p.begin;
      t.end = p.end;
      t.surface = std::string(text.substr(p.begin, p.end - p.begin));
      t.id = p.id;
      t.unknown = p.unknown;
      t.special = p.special;
      tokens.push_back(std::move(t));
    }
    return tokens;
  }
  TokenizerSettings settings = model.tokenizer;
  if (!specials) settings.add_bos_eos = false;
  return encode(text, settings, vocabulary, side);
}

std::string decode_text(const Model& model, const std::vector<std::string>& tokens, Side side) {
  if (model.tokenizer.kind == "sentencepiece") {
    if (!model.sentencepiece)
      fail(ErrorKind::Config, "decode", "the model's tokenizer is SentencePiece but it has no SentencePiece models");
    return decode_pieces(tokens, *model.sentencepiece, side == Side::Source ? model.src_vocab : model.tgt_vocab, side);
  }
  if (model.tokenizer.kind == "words_bpe") {
    // The pieces joined into words (▁ starts one), then the words detokenized as the word-level model's are.
    return detokenize(subword_words(model, tokens, side), model.tokenizer, side);
  }
  if (model.tokenizer.kind == "byte_bpe") {
    if (!model.byte_bpe)
      fail(ErrorKind::Config, "decode", "the model's tokenizer is byte-level BPE but it has no merges");
    // The pieces' bytes joined; bytes that do not form whole characters (a continuation cut short) read as U+FFFD,
    // as GPT-2's decode(errors="replace").
    std::vector<int> ids;
    for (const std::string& t : tokens)
      if (const std::optional<int> id = model.tgt_vocab.find(t)) ids.push_back(*id);
    return utf8_with_replacements(model.byte_bpe->decode(ids));
  }
  if (model.tokenizer.kind == "wordpiece") {
    if (!model.wordpiece) fail(ErrorKind::Config, "decode", "the model's tokenizer is WordPiece but it has none");
    // BERT's convert_tokens_to_string: pieces joined by spaces, each "##" continuation glued to the one before.
    std::vector<int> ids;
    for (const std::string& t : tokens)
      if (const std::optional<int> id = model.src_vocab.find(t)) ids.push_back(*id);
    return model.wordpiece->decode(ids);
  }
  return detokenize(tokens, model.tokenizer, side);
}

bool uses_sentencepiece(const TokenizerSettings& tokenizer) {
  return tokenizer.kind == "sentencepiece" || tokenizer.kind == "words_bpe";
}

std::vector<std::string> subword_words(const Model& model, const std::vector<std::string>& pieces, Side side) {
  if (!model.sentencepiece)
    fail(ErrorKind::Config, "decode", "the model's tokenizer is words_bpe but it has no SentencePiece model");
  const Vocabulary& vocabulary = side == Side::Source ? model.src_vocab : model.tgt_vocab;
  std::vector<std::string> kept;  // (special tokens dropped)
  for (const std::string& p : pieces)
    if (const std::optional<int> id = vocabulary.find(p); !id || !vocabulary.is_special(*id)) kept.push_back(p);
  std::istringstream text(model.sentencepiece->join(kept, side));  // words, one space apart
  std::vector<std::string> words;
  for (std::string word; text >> word;) words.push_back(std::move(word));
  return words;
}

std::shared_ptr<const WordPiece> make_wordpiece(const Model& model) {
  WordPieceOptions options;
  options.lower_case = model.tokenizer.wordpiece_lower_case;
  options.strip_accents = model.tokenizer.wordpiece_strip_accents;
  options.split_chinese_chars = model.tokenizer.wordpiece_chinese_chars;
  return std::make_shared<const WordPiece>(WordPiece::from_vocab(model.src_vocab.tokens(), options));
}

namespace {

struct PreparedModel {
  std::vector<std::vector<float>> stacked;  // owns the concatenation of multi-part slots
  std::vector<int8_t> spm[2];                // the SentencePiece models' bytes (a vector: moving keeps its data)
  std::vector<int8_t> merges;                // byte_bpe's merges.txt
  std::vector<TensorToWrite> tensors;
  std::map<std::string, std::string> metadata;
};

// Checks what describes the model (config, vocabularies against it, provenance).
void check_description(const Model& m, const char* where) {
  const Config& c = m.config;
  c.validate();
  check_family_config(m.family, c, where);
  auto check_vocab = [&](const Vocabulary& v, int size, const char* name) {
    if (v.size() != size)
      fail(ErrorKind::Config, where, std::string(name) + " holds " + std::to_string(v.size()) +
                                         " tokens, the config says " + std::to_string(size));
    const SpecialIds s = v.specials(), e = special_ids(c);
    if (s.pad != e.pad || s.bos != e.bos || s.eos != e.eos || s.unk != e.unk)
      fail(ErrorKind::Config, where, std::string(name) + "'s special ids differ from the config's");
  };
  if (c.has_encoder()) check_vocab(m.src_vocab, c.src_vocab_size, "src_vocab");  // a vocabulary for each stack
  if (c.has_decoder()) check_vocab(m.tgt_vocab, c.tgt_vocab_size, "tgt_vocab");
  if (!m.provenance.is_object()) fail(ErrorKind::Format, where, "provenance is not a JSON object");
}

std::map<std::string, std::string> description_metadata(const Model& m, const std::string& format) {
  std::map<std::string, std::string> meta = {{"format", format},
          {"format_version", kModelFormatVersion},
          {"family", m.family},
          {"config", config_to_json(m.config).dump()},
          {"tokenizer", tokenizer_settings_to_json(m.tokenizer).dump()},
          {"provenance", m.provenance.dump()}};
  if (m.config.has_encoder()) meta["src_vocab"] = m.src_vocab.to_json().dump();
  if (m.config.has_decoder()) meta["tgt_vocab"] = m.tgt_vocab.to_json().dump();
  if (m.generation.present) meta["generation"] = generation_defaults_to_json(m.generation).dump();
  return meta;
}

PreparedModel prepare(const Model& m, const char* where) {
  const Config& c = m.config;
  check_description(m, where);

  PreparedModel p;
  const std::vector<ConstWeightSlot> slots = weight_slots(m.family, c, m.weights, where);
  p.stacked.reserve(slots.size());
  for (const ConstWeightSlot& slot : slots) {
    std::span<const float> values;
    if (slot.parts.size() == 1 && !slot.transposed) {
      values = slot.parts[0];
    } else {  // stacked (in_proj_weight) or transposed (GPT-2's Conv1D): laid out as the family stores it
      values = p.stacked.emplace_back(stored_values(slot));
    }
    check_finite(slot.name, values, where);
    p.tensors.push_back({slot.name, slot.shape, values});
  }
  if (uses_sentencepiece(m.tokenizer)) {
    if (!m.sentencepiece)
      fail(ErrorKind::Config, where, "the tokenizer is SentencePiece but the model has no SentencePiece models");
    const char* names[2] = {kSourceSpmTensor, kTargetSpmTensor};
    for (int i = 0; i < 2; ++i) {
      const std::string& proto = m.sentencepiece->proto(i == 0 ? Side::Source : Side::Target);
      p.spm[i].resize(proto.size());
      std::memcpy(p.spm[i].data(), proto.data(), proto.size());
      p.tensors.push_back({names[i], {static_cast<int64_t>(proto.size())}, {}, p.spm[i]});
    }
  } else if (m.tokenizer.kind == "byte_bpe") {
    if (!m.byte_bpe) fail(ErrorKind::Config, where, "the tokenizer is byte-level BPE but the model has no merges");
    const std::string& merges = m.byte_bpe->merges_text();
    p.merges.resize(merges.size());
    std::memcpy(p.merges.data(), merges.data(), merges.size());
    p.tensors.push_back({kBpeMergesTensor, {static_cast<int64_t>(merges.size())}, {}, p.merges});
  }
  p.metadata = description_metadata(m, kModelFormat);
  return p;
}

}  // namespace

std::map<std::string, std::string> model_description_metadata(const Model& model, const std::string& format) {
  check_description(model, "model_description_metadata");
  return description_metadata(model, format);
}

void save_model(const Model& model, const std::string& path, DType storage, const WriteRules& rules) {
  const PreparedModel p = prepare(model, "save_model");
  write_safetensors(path, p.tensors, p.metadata, storage, rules);
}

std::vector<std::byte> serialize_model(const Model& model, DType storage) {
  const PreparedModel p = prepare(model, "serialize_model");
  return serialize_safetensors(p.tensors, p.metadata, storage);
}

}  // namespace sf
