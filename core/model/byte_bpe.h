// GPT-2's tokenizer: byte-level BPE (Radford et al. 2019, section 2.2; the hub's vocab.json and merges.txt), equal to
// GPT-2's own (tests/unit/test_byte_bpe.cpp against tests/reference/make_gpt2_bpe_fixtures.py).
//
//   text --(UTF-8; an invalid byte sequence is U+FFFD per maximal subpart, as Python reads a file with
//           errors="replace")-->
//   "<|endoftext|>" cut out as its own token (the one special token; nothing is added at the start) -->
//   pre-tokens by GPT-2's pattern, leftmost alternative first:
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     (a word keeps the one space before it; a run of spaces gives all but its last to a token of its own) -->
//   each pre-token's UTF-8 bytes, each byte as one printable character (bytes_to_unicode: the printable Latin-1
//     bytes as themselves, the other 68 as U+0100.. in byte order; a space is "Ġ") -->
//   merges by rank: the adjacent pair ranked first in merges.txt merges, every occurrence left to right, until no
//     pair is ranked -->  each piece's id in vocab.json.
// A piece need not be whole characters: "😀" is 4 bytes and may be 2 pieces; BytePiece::bytes are its raw bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sf {

struct BytePiece {
  int id = 0;
  std::string text;   // as vocab.json writes it ("Ġman")
  std::string bytes;  // the bytes it stands for (" man"); may be part of a character
};

class ByteBpe {
 public:
  // vocab.json (a JSON object piece -> id) and merges.txt ("a b" per line, the first line "#version: ..." optional).
  // ErrorKind::Format for malformed files; ErrorKind::Config for merges or byte characters the vocabulary lacks,
  // or ids that are not 0 .. size-1 once each.
  static ByteBpe from_text(std::string_view vocab_json, std::string_view merges, const std::string& where);
  static ByteBpe from_files(const std::string& vocab_json_path, const std::string& merges_path);
  // The pieces by id (a model file's vocabulary) and merges.txt's text; the same checks.
  static ByteBpe from_pieces(std::vector<std::string> pieces, std::string_view merges, const std::string& where);
  const std::string& merges_text() const { return merges_text_; }  // as given: what a model file stores

  std::vector<BytePiece> encode_pieces(std::string_view text) const;
  std::vector<int> encode(std::string_view text) const;
  // The bytes of `ids` joined (ErrorKind::Input for an id outside the vocabulary).
  std::string decode(const std::vector<int>& ids) const;
  const BytePiece& piece(int id) const { return pieces_.at(static_cast<size_t>(id)); }
  int size() const { return static_cast<int>(pieces_.size()); }
  int end_of_text_id() const { return end_of_text_; }  // -1 where the vocabulary has no "<|endoftext|>"

  // The one-character piece GPT-2's vocabulary writes byte `b` as (bytes_to_unicode: a space is "Ġ").
  static std::string byte_piece(unsigned char b);

  // GPT-2's pre-tokens of `text` (valid UTF-8, no special token), for tests: byte spans.
  static std::vector<std::string_view> pre_tokens(std::string_view text);

 private:
  void encode_pre_token(std::string_view bytes, std::vector<BytePiece>& out) const;
  std::vector<BytePiece> pieces_;                      // by id
  std::unordered_map<std::string, int> ids_;           // vocab text -> id
  struct Merge {
    int rank;    // its line in merges.txt, from 0
    int result;  // the merged piece's id
  };
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> its merge
  int byte_id_[256] = {};                              // each byte's one-character piece
  int end_of_text_ = -1;
  std::string merges_text_;
};

}  // namespace sf
