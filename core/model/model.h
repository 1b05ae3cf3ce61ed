// A model: everything the app needs to show one trained Transformer, loaded from one .safetensors file.
//
// The model file is a safetensors file (core/io/safetensors.h) whose tensors carry the names of a family
// (core/model/name_tables.h) and whose __metadata__ (string values) holds:
//   "format": "stepformer-model", "format_version": "1",
//   "family": "stepformer" | "pytorch-tutorial" | "seq2seq-tutorial" | "from-scratch",
//   "config": config_to_json (core/model/config.h),
//   "src_vocab", "tgt_vocab": JSON arrays of token strings, index = id,
//   "tokenizer": tokenizer_settings_to_json (core/model/tokenizer.h),
//   "provenance": a JSON object: dataset, training command, scores, converter, anything.
// A model with SentencePiece tokenization (tokenizer kind "sentencepiece": Marian) also carries its two
// SentencePiece models as 1-D I8 tensors "tokenizer.source_spm" and "tokenizer.target_spm" (the files' bytes), so
// that the model stays one file.
// docs/model-files.md documents the format, the config keys and the PyTorch converter.
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/byte_bpe.h"
#include "model/config.h"
#include "model/sentencepiece.h"
#include "model/wordpiece.h"
#include "model/tokenizer.h"
#include "model/vocabulary.h"
#include "model/weights.h"

namespace sf {

inline constexpr const char* kModelFormat = "stepformer-model";
inline constexpr const char* kModelFormatVersion = "1";
inline constexpr const char* kTimelineFormat = "stepformer-timeline";  // train/timeline.h: snapshots, no model

// How a model's authors decode with it: Hugging Face's generation_config.json for Marian models (stored under
// "generation" in a model file's __metadata__; absent for models of our own, which take the app's defaults).
struct GenerationDefaults {
  bool present = false;             // read from the model; false: nothing said
  int beam_width = 0;               // num_beams (1: greedy)
  float length_penalty = 1.0f;      // Hugging Face's: a finished beam scores sum_logprob / length^length_penalty
  int max_length = 0;               // most decoder tokens, the start token included (0: the model's maximum)
  std::vector<int> never_generate;  // bad_words_ids of one token each (Marian: <pad>)
  bool renormalize = false;         // renormalize_logits: log-probabilities over the allowed tokens
  bool force_eos = false;           // forced_eos_token_id: the last token max_length allows is </s>
};
nlohmann::json generation_defaults_to_json(const GenerationDefaults& g);
// Throws ErrorKind::Format naming a key of the wrong type.
GenerationDefaults generation_defaults_from_json(const nlohmann::json& j);

struct Model {
  std::string family = "stepformer";  // the tensor naming of the file it came from; save_model keeps it
  Config config;
  Vocabulary src_vocab;   // Vs tokens
  Vocabulary tgt_vocab;   // Vt tokens
  TokenizerSettings tokenizer;
  // tokenizer.kind "sentencepiece": the source and target SentencePiece models (shared, immutable)
  std::shared_ptr<const SentencePieceModels> sentencepiece;
  // tokenizer.kind "byte_bpe": GPT-2's tokenizer over tgt_vocab's pieces (shared, immutable)
  std::shared_ptr<const ByteBpe> byte_bpe;
  // tokenizer.kind "wordpiece": BERT's WordPiece over src_vocab's pieces (shared, immutable)
  std::shared_ptr<const WordPiece> wordpiece;
  GenerationDefaults generation;
  nlohmann::json provenance = nlohmann::json::object();
  ModelWeights weights;

  // Trainable parameters as the family stores them (shared or tied matrices once; sinusoidal positions none).
  // Equals sum(p.numel() for p in model.parameters()) of the PyTorch module for the tutorial families.
  int64_t parameter_count() const;
};

// The model's own tokenizer on `text`: word-level (model/tokenizer.h), SentencePiece (model/sentencepiece.h),
// GPT-2's byte-level BPE (model/byte_bpe.h: a token's `text` is its vocabulary piece, "Ġman", its `surface` the bytes
// it stands for, " man", which need not be whole characters; nothing is ever added) or BERT's WordPiece
// (model/wordpiece.h: pieces "play" "##ing", [CLS] first and [SEP] last, "[MASK]" in the text kept whole) by
// tokenizer.kind.
// `specials` false: the tokens alone, no <bos>/<eos> (a target prefix typed by a user; a decoder-only prompt).
// A model with a mask token (config.mask_id) and the word tokenizer keeps each literal "[MASK]" (any case) of the
// source text whole, as that token (id mask_id, its span the six characters), where the Moses rules would split it.
// Throws ErrorKind::Input for text over kMaxSentenceBytes, ErrorKind::Config for a SentencePiece model without
// its SentencePiece models.
std::vector<Token> encode_text(const Model& model, std::string_view text, Side side, bool specials = true);
// Token strings back to readable text, as the model's tokenizer joins them (special tokens dropped for
// SentencePiece, as MarianTokenizer.decode(skip_special_tokens=True)).
std::string decode_text(const Model& model, const std::vector<std::string>& tokens, Side side);

// Whether the tokenizer reads SentencePiece models from the model file (Marian's "sentencepiece", our own
// "words_bpe": model.sentencepiece is then set, its models saved with the file).
bool uses_sentencepiece(const TokenizerSettings& tokenizer);
// A "words_bpe" model's pieces ("▁zylinder" "hut" "▁.") back to the words they make ("zylinderhut" "."), special
// tokens dropped: what BLEU compares with the tokenized references, and what decode_text detokenizes.
std::vector<std::string> subword_words(const Model& model, const std::vector<std::string>& pieces, Side side);

// BERT's WordPiece for a model of tokenizer kind "wordpiece": src_vocab's pieces with the tokenizer settings'
// lower-casing, accent and CJK options. Throws what WordPiece::from_vocab throws (a vocabulary without [UNK], [CLS]
// or [SEP]).
std::shared_ptr<const WordPiece> make_wordpiece(const Model& model);

// The tensor names of the SentencePiece models in a model file.
inline constexpr const char* kSourceSpmTensor = "tokenizer.source_spm";
inline constexpr const char* kTargetSpmTensor = "tokenizer.target_spm";
// GPT-2's merges.txt in a model file with tokenizer kind "byte_bpe" (1-D I8, the file's bytes).
inline constexpr const char* kBpeMergesTensor = "tokenizer.bpe_merges";

// Reads the weights of `model.family` from `file` into model.weights (read_weights true), or only checks them
// (false), as load_model does; tensors the family does not know are warned about unless named in `also_known`;
// tensors named in `may_be_missing` keep their allocated value (zeros) when the file lacks them.
// For readers of other containers of the same tensors (model/hf_marian.h).
void read_family_weights(const SafetensorsFile& file, Model& model, std::vector<std::string>* warnings,
                         bool read_weights, const std::set<std::string>& also_known = {},
                         const std::set<std::string>& may_be_missing = {});

// Loads a model file (read whole, SafetensorsFile::open; the weights are copied out, so nothing refers to the
// file afterwards).
// Throws sf::Error naming the file and the fault:
//   File (cannot open), Format (malformed safetensors, bad metadata JSON, not a model file, unknown family),
//   Unsupported (newer format_version, a dtype other than F32/F16/BF16/F64), Config (config out of range,
//   vocabulary sizes that disagree with the config), Missing (a required tensor or metadata key),
//   Shape ("tensor 'x': expected (a, b), found (c, d)"), Value (NaN or Inf in a weight).
// Tensors the family does not know are skipped with a warning, appended to `warnings` when given, as are keys
// of the config or tokenizer settings this version does not know. The file's tensors are read straight into
// the weights (a 1 MiB buffer between); weights that would not fit in memory are refused first (Config).
// read_weights = false (`info`): every tensor is still checked (shape, dtype, NaN, Inf), through a small
// buffer, but none is kept: `weights` stays empty and memory is that of the header.
Model load_model(const std::string& path, std::vector<std::string>* warnings = nullptr, bool read_weights = true);
Model load_model(const SafetensorsFile& file, std::vector<std::string>* warnings = nullptr, bool read_weights = true);

// The description part of a file (family, config, vocabularies, tokenizer settings, provenance), read and checked
// as load_model does, for a file whose "format" is `format` (kModelFormat or kTimelineFormat); no tensor is
// read. The returned model's weights are empty.
Model read_model_description(const SafetensorsFile& file, const std::string& format,
                             std::vector<std::string>* warnings = nullptr);
// The __metadata__ entries that describe `model` (format, family, config, vocabularies, tokenizer, provenance),
// as save_model writes them, with "format" set to `format`. Checks the config and the vocabularies against it.
std::map<std::string, std::string> model_description_metadata(const Model& model, const std::string& format);

// Writes the model under its family's names with values stored as `storage` (F32 or F16), atomically (a crash
// never leaves a half-written file at `path`). Checks the config, the vocabularies against it, every weight's
// shape and that every weight is finite before anything is written.
// `rules` as write_safetensors (io/user_files.h); by default an existing regular file is replaced.
void save_model(const Model& model, const std::string& path, DType storage = DType::F32,
                const WriteRules& rules = WriteRules{true, {}, {}});
// The bytes save_model would write (for tests and fuzzing seeds).
std::vector<std::byte> serialize_model(const Model& model, DType storage = DType::F32);

}  // namespace sf
