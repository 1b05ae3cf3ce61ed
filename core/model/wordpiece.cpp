#include "model/wordpiece.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "io/user_files.h"
#include "model/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

namespace sf {

// [SECTION] Unicode facts (Python 3.11's, generated)

namespace {

struct CodeRange {
  char32_t first, last;  // inclusive
};
struct LowerRange {
  char32_t first, last;  // c in [first, last] with (c - first) % stride == 0 lowers to c + delta
  int32_t delta, stride;
};
struct MarkRange {
  char32_t first, last;  // category Mn
  bool starter;          // canonical combining class 0
};
struct OrderedChar {
  char32_t c;
  int combining_class;
};
struct StripRun {
  char32_t first, last;  // c becomes kStripTargets[index + (c - first)]
  int index;
};
struct StripOther {
  char32_t c;
  int count;
  char32_t kept[3];
};

#include "model/unicode_wordpiece.inc"

// The range holding `c` among sorted, disjoint ranges (anything with .first and .last), or nullptr.
template <typename Range, size_t N>
const Range* find_range(const Range (&ranges)[N], char32_t c) {
  const Range* end = ranges + N;
  const Range* it = std::upper_bound(ranges, end, c, [](char32_t v, const Range& r) { return v < r.first; });
  if (it == ranges) return nullptr;
  --it;
  return c <= it->last ? it : nullptr;
}

bool is_dropped(char32_t c) { return find_range(kDroppedRanges, c) != nullptr; }
bool is_whitespace(char32_t c) { return find_range(kWhitespaceRanges, c) != nullptr; }
bool is_separator(char32_t c) { return find_range(kSeparatorRanges, c) != nullptr; }
bool is_punctuation(char32_t c) { return find_range(kPunctuationRanges, c) != nullptr; }

// BasicTokenizer._is_chinese_char: the CJK Unified Ideographs blocks and their extensions A-E, and the compatibility
// ideographs, as Hugging Face lists them (kana, Hangul and CJK punctuation are not among them).
bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

int combining_class_of_non_mark(char32_t c) {
  const OrderedChar* end = kOrderedNonMarks + std::size(kOrderedNonMarks);
  const OrderedChar* it =
      std::lower_bound(kOrderedNonMarks, end, c, [](const OrderedChar& o, char32_t v) { return o.c < v; });
  return it != end && it->c == c ? it->combining_class : 0;
}

const StripOther* find_strip_other(char32_t c) {
  const StripOther* end = kStripOther + std::size(kStripOther);
  const StripOther* it = std::lower_bound(kStripOther, end, c, [](const StripOther& o, char32_t v) { return o.c < v; });
  return it != end && it->c == c ? it : nullptr;
}

// Python's str.lower() of the one character `c`, appended to `out` (one character but for U+0130).
template <typename Emit>
void lower_into(char32_t c, Emit emit) {
  if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: "i" and COMBINING DOT ABOVE (SpecialCasing.txt)
    emit(U'i');
    emit(char32_t{0x307});
    return;
  }
  const LowerRange* r = find_range(kLowerRanges, c);
  if (r && (c - r->first) % static_cast<char32_t>(r->stride) == 0)
    c = static_cast<char32_t>(static_cast<int32_t>(c) + r->delta);
  emit(c);
}

}  // namespace

// [SECTION] building

namespace {

constexpr uint64_t kMaxVocabularyBytes = 64ull << 20;  // BERT's vocab.txt is 232 KB, multilingual BERT's 972 KB
constexpr const char* kSpecialPieces[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (const char b : s) n += (static_cast<unsigned char>(b) & 0xC0) != 0x80;
  return n;
}

}  // namespace

WordPiece WordPiece::build(std::vector<std::string> pieces, WordPieceOptions options, const std::string& where) {
  if (options.strip_accents < -1 || options.strip_accents > 1)
    fail(ErrorKind::Config, where,
         "strip_accents is " + std::to_string(options.strip_accents) + "; expected -1 (follow lower_case), 0 or 1");
  if (options.max_chars_per_word < 1)
    fail(ErrorKind::Config, where,
         "max_chars_per_word is " + std::to_string(options.max_chars_per_word) + "; expected at least 1");
  if (pieces.empty()) fail(ErrorKind::Format, where, "the vocabulary holds no pieces (an empty vocab.txt?)");
  WordPiece w;
  w.options_ = options;
  w.pieces_ = std::move(pieces);
  w.ids_.reserve(w.pieces_.size());
  for (size_t i = 0; i < w.pieces_.size(); ++i) {
    const std::string& p = w.pieces_[i];
    if (p.empty())
      fail(ErrorKind::Format, ErrorCode::VocabularyTokenEmpty, where, {{"index", i}},
           "line " + std::to_string(i + 1) + " is empty (piece " + std::to_string(i) + ")");
    const auto [it, inserted] = w.ids_.emplace(p, static_cast<int>(i));
    if (!inserted)
      fail(ErrorKind::Format, ErrorCode::VocabularyTokenTwice, where,
           {{"token", p}, {"first", it->second}, {"second", i}},
           "the piece '" + p + "' is on line " + std::to_string(it->second + 1) + " and again on line " +
               std::to_string(i + 1));
    w.longest_piece_chars_ = std::max(w.longest_piece_chars_, utf8_length(p));
  }
  auto required = [&](const char* piece) {
    const int id = w.id_of(piece);
    if (id < 0)
      fail(ErrorKind::Format, where,
           std::string("the vocabulary has no ") + piece + " (BERT's vocab.txt holds [UNK], [CLS] and [SEP])");
    return id;
  };
  w.unk_ = required("[UNK]");
  w.cls_ = required("[CLS]");
  w.sep_ = required("[SEP]");
  w.pad_ = w.id_of("[PAD]");
  w.mask_ = w.id_of("[MASK]");
  for (const char* s : kSpecialPieces)
    if (w.id_of(s) >= 0) w.specials_in_text_.push_back(w.id_of(s));
  return w;
}

WordPiece WordPiece::from_vocab(std::vector<std::string> pieces, WordPieceOptions options) {
  return build(std::move(pieces), options, "WordPiece");
}

WordPiece WordPiece::from_vocab_file(const std::string& path, WordPieceOptions options) {
  const std::string where = "WordPiece '" + path + "'";
  const std::string bytes = read_user_file(path, kMaxVocabularyBytes, "a vocabulary", "WordPiece");
  // Python's text mode (HF's load_vocab: readlines, then rstrip("\n")) ends a line at \n, \r\n or \r, and a last
  // line without an end still counts.
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n' && bytes[i] != '\r') continue;
    lines.push_back(bytes.substr(start, i - start));
    if (bytes[i] == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < bytes.size()) lines.push_back(bytes.substr(start));
  for (size_t i = 0; i < lines.size(); ++i)
    if (utf8_with_replacements(lines[i]) != lines[i])  // Python's open(..., encoding="utf-8") refuses the file
      fail(ErrorKind::Format, where, "line " + std::to_string(i + 1) + " is not valid UTF-8");
  return build(std::move(lines), options, where);
}

int WordPiece::id_of(std::string_view piece) const {
  const auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

const std::string& WordPiece::piece(int id) const {
  if (id < 0 || id >= size())
    fail(ErrorKind::Input, ErrorCode::TokenIdOutsideVocabulary, "WordPiece", {{"id", id}, {"size", size()}},
         "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(size()) + " pieces");
  return pieces_[static_cast<size_t>(id)];
}

const char* WordPiece::unicode_version() { return kWordPieceUnicodeVersion; }

bool WordPiece::strips_accents() const {
  // HF: lower_case strips unless strip_accents is False; without lower_case only strip_accents True strips.
  return options_.strip_accents == -1 ? options_.lower_case : options_.strip_accents == 1;
}

// [SECTION] encoding

namespace {

// _run_strip_accents: unicodedata.normalize("NFD", word) with every Mn character dropped. NFD is each character's
// full canonical decomposition followed by canonical reordering (a stable sort by combining class of each run of
// characters whose class is not 0). Marks of a non-zero class are dropped at once: a stable sort keeps the order of
// what remains, and such marks bound no run. Marks of class 0 do bound runs, so they stay until the sort is done.
// (tools/make_unicode_tables.py says more.)
template <typename Char>
std::vector<Char> strip_accents(const std::vector<Char>& word) {
  struct Item {
    Char ch;
    int combining_class;
    bool mark;  // an Mn of class 0: bounds reordering, then dropped
  };
  std::vector<Item> items;
  items.reserve(word.size());
  auto kept = [&](const Char& from, char32_t c) {
    if (const MarkRange* m = find_range(kMarkRanges, c)) {
      if (m->starter) items.push_back({{c, from.begin, from.end}, 0, true});
      return;
    }
    items.push_back({{c, from.begin, from.end}, combining_class_of_non_mark(c), false});
  };
  for (const Char& ch : word) {
    const char32_t c = ch.c;
    if (c >= 0xAC00 && c <= 0xD7A3) {  // a Hangul syllable: leading consonant, vowel, optional trailing consonant
      const char32_t s = c - 0xAC00;
      items.push_back({{0x1100 + s / 588, ch.begin, ch.end}, 0, false});
      items.push_back({{0x1161 + (s % 588) / 28, ch.begin, ch.end}, 0, false});
      if (s % 28) items.push_back({{0x11A7 + s % 28, ch.begin, ch.end}, 0, false});
    } else if (const StripRun* r = find_range(kStripRuns, c)) {
      kept(ch, kStripTargets[static_cast<size_t>(r->index) + (c - r->first)]);
    } else if (const StripOther* o = find_strip_other(c)) {
      for (int k = 0; k < o->count; ++k) kept(ch, o->kept[k]);
    } else {
      kept(ch, c);
    }
  }
  for (size_t i = 0; i < items.size();) {
    if (items[i].combining_class == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < items.size() && items[j].combining_class != 0) ++j;
    std::stable_sort(items.begin() + static_cast<std::ptrdiff_t>(i), items.begin() + static_cast<std::ptrdiff_t>(j),
                     [](const Item& a, const Item& b) { return a.combining_class < b.combining_class; });
    i = j;
  }
  std::vector<Char> out;
  out.reserve(items.size());
  for (const Item& it : items)
    if (!it.mark) out.push_back(it.ch);
  return out;
}

}  // namespace

// One word's pieces: greedy longest match first, "##" before every piece but the first (WordpieceTokenizer).
void WordPiece::add_pieces(const std::vector<Char>& word, std::vector<WordPieceToken>& out) const {
  if (word.empty()) return;
  // The bytes chars [from, to) came from. Not simply first.begin .. last.end: canonical reordering can move a mark
  // before a character that came earlier in the text.
  auto span_of = [&](size_t from, size_t to) {
    size_t b = word[from].begin, e = word[from].end;
    for (size_t k = from; k < to; ++k) b = std::min(b, word[k].begin), e = std::max(e, word[k].end);
    return std::pair{b, e};
  };
  if (word.size() > static_cast<size_t>(options_.max_chars_per_word)) {
    const auto [b, e] = span_of(0, word.size());
    out.push_back({unk_, pieces_[static_cast<size_t>(unk_)], b, e, true, false});
    return;
  }
  // The word as UTF-8, and where each character starts in it.
  std::string text;
  std::vector<size_t> offset;
  offset.reserve(word.size() + 1);
  for (const Char& ch : word) {
    offset.push_back(text.size());
    append_utf8(ch.c, text);
  }
  offset.push_back(text.size());
  const size_t first_new = out.size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    int found = -1;
    size_t end = std::min(word.size(), start + longest_piece_chars_);
    for (; end > start; --end) {
      // chars [start, end), behind "##" unless at the word's start
      candidate.assign(start == 0 ? "" : "##");
      candidate.append(text, offset[start], offset[end] - offset[start]);
      const auto it = ids_.find(candidate);
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // no piece covers the rest: the whole word is [UNK]
      out.resize(first_new);
      const auto [b, e] = span_of(0, word.size());
      out.push_back({unk_, pieces_[static_cast<size_t>(unk_)], b, e, true, false});
      return;
    }
    const auto [b, e] = span_of(start, end);
    out.push_back({found, pieces_[static_cast<size_t>(found)], b, e, false, false});
    start = end;
  }
}

// One whitespace-separated word of the cleaned text (BasicTokenizer.tokenize's loop body).
void WordPiece::add_word(const std::vector<Char>& word, std::vector<WordPieceToken>& out) const {
  // A word that is exactly a special token is kept whole (never_split): cleaning can make one ("[MA\u200bSK]").
  for (const int id : specials_in_text_) {
    const std::string& s = pieces_[static_cast<size_t>(id)];
    if (s.size() != word.size()) continue;
    if (std::equal(word.begin(), word.end(), s.begin(),
                   [](const Char& ch, char b) { return ch.c == static_cast<unsigned char>(b); })) {
      out.push_back({id, s, word.front().begin, word.back().end, false, true});
      return;
    }
  }
  const std::vector<Char> chars = strips_accents() ? strip_accents(word) : word;
  // _run_split_on_punc: each punctuation character alone, the runs between them whole.
  std::vector<Char> run;
  for (const Char& ch : chars) {
    if (is_punctuation(ch.c)) {
      add_pieces(run, out);
      run.clear();
      add_pieces({ch}, out);
    } else {
      run.push_back(ch);
    }
  }
  add_pieces(run, out);
}

// The text between two special tokens (HF's _tokenize of one chunk of the added-tokens split).
void WordPiece::split_segment(const std::vector<Char>& segment, std::vector<WordPieceToken>& out) const {
  std::vector<Char> word;
  auto end_word = [&] {
    if (!word.empty()) add_word(word, out);
    word.clear();
  };
  for (const Char& ch : segment) {
    if (is_dropped(ch.c)) continue;                  // _clean_text
    if (is_whitespace(ch.c) || is_separator(ch.c)) {  // _clean_text's " ", then whitespace_tokenize
      end_word();
    } else if (options_.split_chinese_chars && is_cjk_ideograph(ch.c)) {  // _tokenize_chinese_chars: " c "
      end_word();
      word.push_back(ch);
      end_word();
    } else {
      word.push_back(ch);
    }
  }
  end_word();
}

std::vector<WordPieceToken> WordPiece::encode(std::string_view text, bool add_cls_sep) const {
  if (text.size() > kMaxSentenceBytes)
    fail(ErrorKind::Input, ErrorCode::SentenceTooLong, "WordPiece::encode",
         {{"bytes", text.size()}, {"limit", kMaxSentenceBytes}},
         "the text is " + std::to_string(text.size()) + " bytes; the limit is " + std::to_string(kMaxSentenceBytes));
  // Invalid UTF-8 becomes U+FFFD per bad byte (util/utf8.h), which the cleaning drops. Python cannot hold invalid
  // UTF-8 in a str: the reference reads such text with errors="replace" (U+FFFD per maximal subpart, fewer of them),
  // and drops those U+FFFD the same way, so the pieces agree; only the spans of the bad bytes, dropped, differ.
  const std::vector<Utf8Char> decoded = decode_utf8(text);
  std::vector<WordPieceToken> out;
  if (add_cls_sep) out.push_back({cls_, pieces_[static_cast<size_t>(cls_)], 0, 0, false, true});
  std::vector<Char> segment;
  segment.reserve(decoded.size());
  for (size_t i = 0; i < decoded.size();) {
    // A special token the vocabulary holds, written in the text: cut out whole, never lower-cased (HF splits the
    // text at the added tokens before anything else, and lowers only what lies between them).
    int special = -1;
    for (const int id : specials_in_text_) {
      const std::string& s = pieces_[static_cast<size_t>(id)];
      if (i + s.size() > decoded.size()) continue;
      bool same = true;
      for (size_t k = 0; k < s.size() && same; ++k) same = decoded[i + k].c == static_cast<unsigned char>(s[k]);
      if (same) {
        special = id;
        break;
      }
    }
    if (special >= 0) {
      split_segment(segment, out);
      segment.clear();
      const size_t n = pieces_[static_cast<size_t>(special)].size();
      out.push_back({special, pieces_[static_cast<size_t>(special)], decoded[i].begin, decoded[i + n - 1].end, false,
                     true});
      i += n;
      continue;
    }
    const Utf8Char& ch = decoded[i++];
    if (options_.lower_case)
      lower_into(ch.c, [&](char32_t c) { segment.push_back({c, ch.begin, ch.end}); });
    else
      segment.push_back({ch.c, ch.begin, ch.end});
  }
  split_segment(segment, out);
  if (add_cls_sep) out.push_back({sep_, pieces_[static_cast<size_t>(sep_)], text.size(), text.size(), false, true});
  return out;
}

// [SECTION] decoding

std::string WordPiece::decode(const std::vector<int>& ids) const {
  // HF's convert_tokens_to_string: " ".join(tokens).replace(" ##", "").strip()
  std::string joined;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) joined += ' ';
    joined += piece(ids[k]);
  }
  std::string out;
  out.reserve(joined.size());
  for (size_t i = 0; i < joined.size();) {
    if (joined.compare(i, 3, " ##") == 0) {
      i += 3;
      continue;
    }
    out += joined[i++];
  }
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

}  // namespace sf
