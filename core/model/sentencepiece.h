// SentencePiece subword tokenization, as Marian (opus-mt) models use it: one SentencePiece model per side
// (source.spm, target.spm), whose pieces are then looked up in the model's own vocabulary (vocab.json).
//
//   "Ein Hund läuft."  --source.spm-->  ▁Ein ▁Hund ▁läuft .  --vocab.json-->  ids
//
// A piece starting with ▁ (U+2581) begins a word: SentencePiece replaces spaces by ▁ before splitting, so
// joining the pieces and turning ▁ back into spaces gives the text again. The split itself is learned from a
// corpus (a unigram language model over pieces): frequent words are one piece, rare ones several.
//
// What Hugging Face's MarianTokenizer does, and this does too (core/model/hf_marian.h has the rest):
//   - the source text's leading language code ">>fra<<" (multilingual models) is a token of its own;
//   - the rest is split by the source side's SentencePiece model (no Moses punctuation normalisation: the
//     tokenizer applies one only when the sacremoses package is installed, and then only to its input);
//   - a piece the vocabulary does not hold becomes <unk> (the classic MarianTokenizer's rule);
//   - decoding drops special tokens and hands the target pieces to the target side's model.
// This wraps Debian's libsentencepiece (its headers stay inside sentencepiece.cpp).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer.h"

namespace sf {

// The mark a piece that begins a word starts with: ▁ (U+2581).
inline constexpr std::string_view kWordStart = "\xe2\x96\x81";

// The words a row of pieces makes, as [begin, end) ranges of it: a word starts at a piece with ▁ (or at the first
// piece) and runs to the next such piece; an empty string (a special token, <bos>, <eos>) is a word of its own
// and ends the one before it. What the views draw and say about word boundaries.
struct PieceWord {
  size_t begin = 0, end = 0;
  size_t pieces() const { return end - begin; }
};
std::vector<PieceWord> piece_words(const std::vector<std::string>& pieces);
// A piece without its ▁, and the letters of pieces[w.begin, w.end) joined that way ("▁zylinder" "hut" -> "zylinderhut").
std::string_view without_word_start(std::string_view piece);
std::string word_letters(const std::vector<std::string>& pieces, PieceWord w);

// Whether this build reads SentencePiece models (Debian's libsentencepiece; not the web build, which has none).
bool sentencepiece_available();

// A piece of the input: the piece ("▁Hund") and the byte span of the input it covers.
struct Piece {
  std::string piece;
  size_t begin = 0;
  size_t end = 0;
};

class SentencePieceModels {
 public:
  // `source_proto` and `target_proto` are the bytes of a source.spm / target.spm file (a serialized
  // ModelProto). Throws ErrorKind::Format "[where] 'name': not a SentencePiece model (...)" when one does not
  // load, naming it by `source_name` / `target_name`.
  SentencePieceModels(std::string source_proto, std::string target_proto, const std::string& source_name,
                      const std::string& target_name, const std::string& where = "sentencepiece");
  ~SentencePieceModels();
  SentencePieceModels(const SentencePieceModels&) = delete;
  SentencePieceModels& operator=(const SentencePieceModels&) = delete;

  // The bytes the models were made from (for saving them into a model file).
  const std::string& proto(Side side) const;

  // Splits `text` with the side's model. Invalid UTF-8 is handled as SentencePiece does (replaced).
  std::vector<Piece> split(std::string_view text, Side side) const;
  // The text of pieces (▁ back to spaces; the leading space removed), as the side's model decodes them.
  std::string join(const std::vector<std::string>& pieces, Side side) const;
  // Every piece the side's model knows (id order of that model, not the vocabulary's).
  std::vector<std::string> known_pieces(Side side) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The Marian way from text to tokens: language code, pieces, vocabulary lookup (unknown pieces -> unk), then
// eos (when `add_eos`). Throws ErrorKind::Input for text longer than kMaxSentenceBytes.
std::vector<Token> encode_pieces(std::string_view text, const SentencePieceModels& models, const Vocabulary& vocabulary,
                                 Side side, bool add_eos);
// Pieces back to text: special tokens dropped, the rest joined by the side's model.
std::string decode_pieces(const std::vector<std::string>& pieces, const SentencePieceModels& models,
                          const Vocabulary& vocabulary, Side side);

}  // namespace sf
