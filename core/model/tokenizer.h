// The word-level tokenizer: turns what a user types into the tokens a model's vocabulary was built from.
//
// The models Stepformer shows are trained on Moses-tokenized, lowercased text (Multi30k's *.lc.norm.tok.*:
// "l&apos; herbe", "a man &apos;s hat", "t-shirt", "bzw."). With the default settings this tokenizer
// reproduces the Moses tokenizer (tokenizer.perl, non-aggressive hyphens) for ordinary sentences:
//   - typographic quotes and dashes normalised to ASCII (normalize-punctuation.perl),
//   - every character that is not a letter, digit, space, period, apostrophe, comma or hyphen split off,
//   - commas split off unless between digits (5,300), runs of dots kept together ("..."),
//   - apostrophes by language: en "man's" -> "man" "'s"; fr/it "l'herbe" -> "l'" "herbe"; else "' " alone,
//   - a word's final period split off unless the word is an abbreviation ("z.b.", "bzw.", "mr.") or the next
//     word starts in lowercase,
//   - lowercasing, and the Moses escapes (' -> &apos;, " -> &quot;, & -> &amp;, | < > [ ]).
// Every token keeps the span of the input it came from (its surface, for display) and, after vocabulary
// lookup, whether it was unknown.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/vocabulary.h"

namespace sf {

enum class Side { Source, Target };

// Stored as JSON under "tokenizer" in a model file's __metadata__ (keys = member names).
struct TokenizerSettings {
  // "words": the word-level rules of this header; "sentencepiece": subword pieces from the SentencePiece models
  // the model file carries (model/sentencepiece.h: Marian's), where the keys below do not apply; "byte_bpe": GPT-2's
  // byte-level BPE (model/byte_bpe.h) over the target vocabulary and the merges the file carries, nothing added;
  // "wordpiece": BERT's WordPiece over the source vocabulary (vocab.txt's pieces), with the three wordpiece_* keys
  // below (written only for that kind), the word-level keys not applying; "words_bpe": the word-level rules of this
  // header, then each word split into byte-pair pieces by the one SentencePiece model the file carries for both
  // sides (a vocabulary shared as the paper's: train/subwords.h), the pieces' ids those of the vocabulary
  std::string kind = "words";
  bool lowercase = true;
  bool split_punctuation = true;      // the Moses rules above; false: split on whitespace only
  bool moses_escape = true;           // ' -> &apos; etc., as in the training files
  bool normalize_punctuation = true;  // “ ” „ « » -> ", ‘ ’ ´ ` -> ', – — -> -, … -> ...
  std::string source_language = "";   // "en", "fr", "it", "de", ...: picks the apostrophe rule and abbreviations
  std::string target_language = "";
  bool add_bos_eos = true;            // encode() wraps the sentence in <bos> ... <eos> (both tutorials do);
                                      // sentencepiece: the source ends with <eos> and has no <bos> (Marian)

  // BERT's tokenizer_config.json (kind "wordpiece" only; JSON keys do_lower_case, strip_accents,
  // tokenize_chinese_chars): lower-case the text; strip accents (-1: as lower-casing says, Hugging Face's None;
  // 0 off; 1 on); put spaces around CJK ideographs.
  bool wordpiece_lower_case = true;
  int wordpiece_strip_accents = -1;
  bool wordpiece_chinese_chars = true;

  const std::string& language(Side side) const { return side == Side::Source ? source_language : target_language; }
};

nlohmann::json tokenizer_settings_to_json(const TokenizerSettings& settings);
// Absent keys keep their defaults; a key of the wrong type is ErrorKind::Format naming it.
TokenizerSettings tokenizer_settings_from_json(const nlohmann::json& j);

struct Token {
  std::string text;     // the normalised token, as the vocabulary holds it ("&apos;s")
  std::string surface;  // the characters of the input it came from ("'s"); empty for <bos>/<eos>
  size_t begin = 0;     // byte span [begin, end) of the surface in the input
  size_t end = 0;
  int id = -1;          // vocabulary id after encode(); the unk id for unknown words
  bool unknown = false; // not in the vocabulary: id is unk, `text` and `surface` keep the word for display
  bool special = false; // <bos> / <eos> added by encode()
};

// Splits `text` into tokens (no vocabulary lookup; ids stay -1). Invalid UTF-8 bytes become U+FFFD.
std::vector<Token> tokenize(std::string_view text, const TokenizerSettings& settings, Side side = Side::Source);

// The longest text encode() takes: a sentence the models accept (at most max_positions tokens, 256 for the shipped
// ones) is far shorter; a pasted book is refused before any work is done.
inline constexpr size_t kMaxSentenceBytes = 16 * 1024;

// tokenize() + vocabulary lookup (+ <bos>/<eos> when settings.add_bos_eos). Throws ErrorKind::Input for text
// longer than kMaxSentenceBytes.
std::vector<Token> encode(std::string_view text, const TokenizerSettings& settings, const Vocabulary& vocabulary,
                          Side side = Side::Source);
std::vector<int> token_ids(const std::vector<Token>& tokens);
// A special token (<bos>, <eos>: `id` of `vocabulary`) standing at byte `at` of the text, covering none of it.
Token special_token(const Vocabulary& vocabulary, int id, size_t at);

// Display helpers: undo the Moses escapes of one token ("&apos;s" -> "'s"), and join tokens into readable
// text (no space before . , ! ? ; : ) and closing quotes, none after "(" or a French "l'").
std::string unescape_token(std::string_view token);
std::string detokenize(const std::vector<std::string>& tokens, const TokenizerSettings& settings,
                       Side side = Side::Target);

}  // namespace sf
