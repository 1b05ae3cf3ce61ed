#include "model/byte_bpe.h"

#include <nlohmann/json.hpp>

#include <limits>

#include "io/user_files.h"
#include "model/unicode_classes.h"
#include "util/error.h"
#include "util/utf8.h"

namespace sf {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr uint64_t kMaxTokenizerFileBytes = 64ull << 20;  // GPT-2's vocab.json is 1 MB, merges.txt 456 KB

uint64_t pair_key(int left, int right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// GPT-2's bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves; the other 68
// (controls, space, DEL, NBSP, the soft hyphen) for U+0100, U+0101, ... in byte order. byte_char[b] is b's.
// char_byte[c] is the byte character c stands for, -1 for none (every byte's character lies below U+0144).
struct ByteChars {
  static constexpr int kChars = 256 + 68;
  char32_t byte_char[256];
  int char_byte[kChars];
  ByteChars() {
    int next = 0;
    for (int& b : char_byte) b = -1;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      char_byte[byte_char[b]] = b;
    }
  }
};
const ByteChars& byte_chars() {
  static const ByteChars chars;
  return chars;
}

// The byte a piece's character stands for; -1 for a character no byte maps to.
int char_byte(char32_t c) { return c < ByteChars::kChars ? byte_chars().char_byte[c] : -1; }

}  // namespace

ByteBpe ByteBpe::from_text(std::string_view vocab_json, std::string_view merges, const std::string& where) {
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(vocab_json);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Format, where, std::string("vocab.json is not JSON: ") + e.what());
  }
  if (!vocab.is_object() || vocab.empty())
    fail(ErrorKind::Format, where, "vocab.json is not an object of pieces and ids");
  const size_t n = vocab.size();
  if (n > static_cast<size_t>(std::numeric_limits<int>::max() / 2))
    fail(ErrorKind::Format, where, "vocab.json holds " + std::to_string(n) + " pieces");
  std::vector<std::string> pieces(n);
  std::vector<char> seen(n, 0);
  for (const auto& [text, id_json] : vocab.items()) {
    if (!id_json.is_number_integer())
      fail(ErrorKind::Format, where, "vocab.json gives '" + text + "' a value that is not a whole number");
    const long long id = id_json.get<long long>();
    if (id < 0 || id >= static_cast<long long>(n) || seen[static_cast<size_t>(id)])
      fail(ErrorKind::Config, where,
           "vocab.json's ids are not 0 .. " + std::to_string(n - 1) + " once each ('" + text + "' has " +
               std::to_string(id) + ")");
    seen[static_cast<size_t>(id)] = 1;
    pieces[static_cast<size_t>(id)] = text;
  }
  return from_pieces(std::move(pieces), merges, where);
}

ByteBpe ByteBpe::from_pieces(std::vector<std::string> pieces, std::string_view merges, const std::string& where) {
  ByteBpe t;
  t.merges_text_ = std::string(merges);
  t.pieces_.resize(pieces.size());
  for (size_t id = 0; id < pieces.size(); ++id) {
    BytePiece& p = t.pieces_[id];
    p.id = static_cast<int>(id);
    p.text = std::move(pieces[id]);
    if (p.text == kEndOfText) {
      t.end_of_text_ = p.id;
      p.bytes = p.text;
    } else {
      for (const Utf8Char& ch : decode_utf8(p.text)) {
        const int b = char_byte(ch.c);
        if (b < 0) {  // not a byte-level piece: kept, but it can never be produced from text
          p.bytes.clear();
          break;
        }
        p.bytes += static_cast<char>(b);
      }
    }
    if (!t.ids_.emplace(p.text, p.id).second)
      fail(ErrorKind::Format, where, "the vocabulary holds the piece '" + p.text + "' twice");
  }
  for (int b = 0; b < 256; ++b) {
    const std::string one = byte_piece(static_cast<unsigned char>(b));
    const auto it = t.ids_.find(one);
    if (it == t.ids_.end())
      fail(ErrorKind::Config, where,
           "vocab.json lacks the piece of byte " + std::to_string(b) + " ('" + one +
               "'): not GPT-2's byte-level vocabulary");
    t.byte_id_[b] = it->second;
  }
  // merges.txt: "left right" per line, the rank its line's place (the "#version" line not counted).
  int rank = 0;
  size_t start = 0, line_number = 0;
  while (start < merges.size()) {
    size_t end = merges.find('\n', start);
    if (end == std::string_view::npos) end = merges.size();
    std::string_view line = merges.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      fail(ErrorKind::Format, where,
           "merges.txt line " + std::to_string(line_number) + " is not two pieces and a space: '" + std::string(line) +
               "'");
    const std::string left(line.substr(0, space)), right(line.substr(space + 1));
    const auto l = t.ids_.find(left), r = t.ids_.find(right), m = t.ids_.find(left + right);
    if (l == t.ids_.end() || r == t.ids_.end() || m == t.ids_.end())
      fail(ErrorKind::Config, where,
           "merges.txt line " + std::to_string(line_number) + " ('" + std::string(line) +
               "') names a piece vocab.json lacks ('" +
               (l == t.ids_.end() ? left : r == t.ids_.end() ? right : left + right) +
               "'): the merges are not this vocabulary's");
    // A pair listed twice takes its later rank, as GPT-2's dict(zip(merges, range(...))) does.
    t.merges_[pair_key(l->second, r->second)] = {rank++, m->second};
  }
  return t;
}

ByteBpe ByteBpe::from_files(const std::string& vocab_json_path, const std::string& merges_path) {
  const std::string vocab = read_user_file(vocab_json_path, kMaxTokenizerFileBytes, "a vocabulary", "ByteBpe");
  const std::string merges = read_user_file(merges_path, kMaxTokenizerFileBytes, "a merges file", "ByteBpe");
  return from_text(vocab, merges, vocab_json_path);
}

std::string ByteBpe::byte_piece(unsigned char b) {
  std::string one;
  append_utf8(byte_chars().byte_char[b], one);
  return one;
}

std::vector<std::string_view> ByteBpe::pre_tokens(std::string_view text) {
  const std::vector<Utf8Char> cs = decode_utf8(text);
  std::vector<std::string_view> out;
  const size_t n = cs.size();
  auto emit = [&](size_t a, size_t b) { out.push_back(text.substr(cs[a].begin, cs[b - 1].end - cs[a].begin)); };
  auto at = [&](size_t k) -> char32_t { return k < n ? cs[k].c : 0; };
  // 1 letters, 2 numbers, 3 anything else that is not white space; 0 white space
  auto kind = [](char32_t c) {
    return is_unicode_letter(c) ? 1 : is_unicode_number(c) ? 2 : is_unicode_space(c) ? 0 : 3;
  };
  size_t i = 0;
  while (i < n) {
    const char32_t c = cs[i].c;
    if (c == U'\'') {  // 's|'t|'re|'ve|'m|'ll|'d
      const char32_t c1 = at(i + 1), c2 = at(i + 2);
      if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
      if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l')) {
        emit(i, i + 3);
        i += 3;
        continue;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ : one space (U+0020 only) may lead a run of one class
    const size_t j = (c == U' ' && i + 1 < n) ? i + 1 : i;
    if (const int k = kind(cs[j].c); k != 0) {
      size_t e = j;
      while (e < n && kind(cs[e].c) == k) ++e;
      emit(i, e);
      i = e;
      continue;
    }
    // \s+(?!\S) | \s+ : a run of white space; before a character that is not, its last one is left to that one's
    // token (a run of one stays itself: \s+)
    size_t e = i;
    while (e < n && kind(cs[e].c) == 0) ++e;
    if (e < n && e - i > 1) --e;
    emit(i, e);
    i = e;
  }
  return out;
}

void ByteBpe::encode_pre_token(std::string_view bytes, std::vector<BytePiece>& out) const {
  std::vector<int> word;
  word.reserve(bytes.size());
  for (const char b : bytes) word.push_back(byte_id_[static_cast<unsigned char>(b)]);
  std::vector<int> merged;
  while (word.size() > 1) {
    const Merge* first = nullptr;  // the pair ranked first
    uint64_t best = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = merges_.find(pair_key(word[i], word[i + 1]));
      if (it != merges_.end() && (!first || it->second.rank < first->rank)) {
        first = &it->second;
        best = it->first;
      }
    }
    if (!first) break;
    // Every occurrence of the pair, left to right, none overlapping.
    const int result = first->result;
    merged.clear();
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && pair_key(word[i], word[i + 1]) == best) {
        merged.push_back(result);
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word.swap(merged);
  }
  for (const int id : word) out.push_back(pieces_[static_cast<size_t>(id)]);
}

std::vector<BytePiece> ByteBpe::encode_pieces(std::string_view text) const {
  const std::string clean = utf8_with_replacements(text);
  std::vector<BytePiece> out;
  std::string_view rest = clean;
  while (!rest.empty()) {
    const size_t special = end_of_text_ >= 0 ? rest.find(kEndOfText) : std::string_view::npos;
    const std::string_view part = rest.substr(0, special);
    for (const std::string_view token : pre_tokens(part)) encode_pre_token(token, out);
    if (special == std::string_view::npos) break;
    out.push_back(pieces_[static_cast<size_t>(end_of_text_)]);
    rest.remove_prefix(special + kEndOfText.size());
  }
  return out;
}

std::vector<int> ByteBpe::encode(std::string_view text) const {
  std::vector<int> ids;
  for (const BytePiece& p : encode_pieces(text)) ids.push_back(p.id);
  return ids;
}

std::string ByteBpe::decode(const std::vector<int>& ids) const {
  std::string out;
  for (const int id : ids) {
    if (id < 0 || id >= size())
      fail(ErrorKind::Input, "ByteBpe::decode",
           "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(size()));
    out += pieces_[static_cast<size_t>(id)].bytes;
  }
  return out;
}

}  // namespace sf
