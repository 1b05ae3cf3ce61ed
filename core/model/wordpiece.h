// BERT's WordPiece tokenizer (Devlin et al. 2019; Hugging Face's BertTokenizer, the Python one), equal to it id for
// id (tests/unit/test_wordpiece.cpp against tests/reference/make_wordpiece_fixtures.py):
//
//   text --(UTF-8; an invalid byte is U+FFFD, which the cleaning below drops)-->
//   the special tokens the vocabulary holds ([PAD] [UNK] [CLS] [SEP] [MASK]) cut out where written, kept whole and
//     as written (not lower-cased: "[mask]" is no special token) -->
//   lower_case: each character lower-cased alone, as Python's str.lower() does it ("İ" -> "i" U+0307; no final
//     sigma: the slow tokenizer lowers the text one character at a time around the special tokens) -->
//   cleaning: U+0000, U+FFFD and every character of category C* (control, format such as U+200B, private use,
//     unassigned) dropped, except \t \n \r, which with every Zs (U+00A0, U+3000, ...) become a space -->
//   each CJK ideograph (HF's ranges) a word of its own; kana and Hangul are not split -->
//   words: split at spaces (and U+2028, U+2029, which Python's str.split() also splits at) -->
//   a word that is exactly a special token stays whole; else, with strip accents (lower_case's choice unless set),
//     NFD and every Mn mark dropped ("é" -> "e", "ß" stays), then split before and after every punctuation
//     character (ASCII ! .. /, : .. @, [ .. `, { .. ~ and category P*) -->
//   greedy longest match: the longest vocabulary piece that starts the word, then the longest "##" piece that
//     continues it, ...; a word longer than max_chars_per_word characters, or one with a rest no piece covers,
//     is one [UNK] -->
//   [CLS] first and [SEP] last when asked.
// The Unicode facts are Python 3.11's (Unicode 14.0.0), generated into model/unicode_wordpiece.inc by
// tools/make_unicode_tables.py. Every token keeps the byte span of the input it came from, for display.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sf {

struct WordPieceOptions {
  bool lower_case = true;           // do_lower_case
  int strip_accents = -1;           // -1: follows lower_case (HF's None), 0 off, 1 on
  bool split_chinese_chars = true;  // tokenize_chinese_chars
  int max_chars_per_word = 100;     // max_input_chars_per_word: a longer word is [UNK]
};

struct WordPieceToken {
  int id = -1;
  std::string piece;          // as vocab.txt writes it: "play", "##ing", "[UNK]", "[CLS]"
  size_t begin = 0, end = 0;  // byte span [begin, end) of the input it came from; [CLS] (0, 0), [SEP] at the end
  bool unknown = false;       // [UNK] standing for a word: the span shows which
  bool special = false;       // [CLS] / [SEP] added, or a special token written in the text ("[MASK]")
};

class WordPiece {
 public:
  // `pieces`: vocab.txt's lines in id order. Throws sf::Error(Format) naming the problem and its line when [UNK],
  // [CLS] or [SEP] is missing, a piece is empty or a piece repeats.
  static WordPiece from_vocab(std::vector<std::string> pieces, WordPieceOptions options);
  // Reads vocab.txt (a regular file of valid UTF-8, lines ending in \n, \r\n or \r, as Python's text mode reads
  // them): sf::Error(File) when it cannot be read (a folder, a FIFO, missing), sf::Error(Format) as above.
  static WordPiece from_vocab_file(const std::string& path, WordPieceOptions options);

  // The pieces of `text`, with [CLS] first and [SEP] last when `add_cls_sep`: the ids BERT reads.
  // sf::Error(Input) for text longer than kMaxSentenceBytes (model/tokenizer.h).
  std::vector<WordPieceToken> encode(std::string_view text, bool add_cls_sep = true) const;
  // The pieces of `ids` joined by spaces with each "##" continuation glued to what precedes it (HF's
  // convert_tokens_to_string); special tokens kept. sf::Error(Input) for an id outside the vocabulary.
  std::string decode(const std::vector<int>& ids) const;

  int id_of(std::string_view piece) const;  // -1 if absent
  const std::string& piece(int id) const;   // sf::Error(Input) outside 0 .. size()-1
  int size() const { return static_cast<int>(pieces_.size()); }
  int unk_id() const { return unk_; }
  int cls_id() const { return cls_; }
  int sep_id() const { return sep_; }
  int pad_id() const { return pad_; }    // -1 if absent
  int mask_id() const { return mask_; }  // -1 if absent
  const WordPieceOptions& options() const { return options_; }
  static const char* unicode_version();  // of the character tables: Python 3.11's, "14.0.0"

 private:
  static WordPiece build(std::vector<std::string> pieces, WordPieceOptions options, const std::string& where);
  // One character of the text after lower-casing / accent stripping, and the bytes of the input it came from.
  struct Char {
    char32_t c;
    size_t begin, end;
  };
  void split_segment(const std::vector<Char>& segment, std::vector<WordPieceToken>& out) const;
  void add_word(const std::vector<Char>& word, std::vector<WordPieceToken>& out) const;
  void add_pieces(const std::vector<Char>& word, std::vector<WordPieceToken>& out) const;
  bool strips_accents() const;

  std::vector<std::string> pieces_;            // by id
  std::unordered_map<std::string, int> ids_;   // piece -> id
  WordPieceOptions options_;
  int unk_ = -1, cls_ = -1, sep_ = -1, pad_ = -1, mask_ = -1;
  size_t longest_piece_chars_ = 0;             // no piece is longer: the greedy match starts there
  std::vector<int> specials_in_text_;          // ids of [PAD] [UNK] [CLS] [SEP] [MASK] as the vocabulary holds them
};

}  // namespace sf
