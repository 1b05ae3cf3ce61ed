#include "model/tokenizer.h"

#include "util/utf8.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace sf {

// [SECTION] settings <-> JSON

nlohmann::json tokenizer_settings_to_json(const TokenizerSettings& s) {
  nlohmann::json j{{"kind", s.kind},
                   {"lowercase", s.lowercase},
                   {"split_punctuation", s.split_punctuation},
                   {"moses_escape", s.moses_escape},
                   {"normalize_punctuation", s.normalize_punctuation},
                   {"source_language", s.source_language},
                   {"target_language", s.target_language},
                   {"add_bos_eos", s.add_bos_eos}};
  if (s.kind == "wordpiece") {  // only there: every other file stays as it was, byte for byte
    j["do_lower_case"] = s.wordpiece_lower_case;
    j["strip_accents"] = s.wordpiece_strip_accents;
    j["tokenize_chinese_chars"] = s.wordpiece_chinese_chars;
  }
  return j;
}

TokenizerSettings tokenizer_settings_from_json(const nlohmann::json& j) {
  const char* where = "tokenizer";
  if (!j.is_object()) fail(ErrorKind::Format, where, "settings are not a JSON object");
  TokenizerSettings s;
  auto flag = [&](const char* key, bool& out) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_boolean()) fail(ErrorKind::Format, where, std::string("key '") + key + "' is not true or false");
    out = it->get<bool>();
  };
  auto text = [&](const char* key, std::string& out) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_string()) fail(ErrorKind::Format, where, std::string("key '") + key + "' is not a string");
    out = it->get<std::string>();
  };
  text("kind", s.kind);
  if (s.kind != "words" && s.kind != "sentencepiece" && s.kind != "byte_bpe" && s.kind != "wordpiece" &&
      s.kind != "words_bpe")
    fail(ErrorKind::Format, where,
         "key 'kind' is '" + s.kind + "'; expected words, words_bpe, sentencepiece, byte_bpe or wordpiece");
  flag("lowercase", s.lowercase);
  flag("split_punctuation", s.split_punctuation);
  flag("moses_escape", s.moses_escape);
  flag("normalize_punctuation", s.normalize_punctuation);
  text("source_language", s.source_language);
  text("target_language", s.target_language);
  flag("add_bos_eos", s.add_bos_eos);
  flag("do_lower_case", s.wordpiece_lower_case);
  flag("tokenize_chinese_chars", s.wordpiece_chinese_chars);
  if (const auto it = j.find("strip_accents"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > 1)
      fail(ErrorKind::Format, where, "key 'strip_accents' is " + it->dump() + "; expected -1 (as do_lower_case), 0 or 1");
    s.wordpiece_strip_accents = static_cast<int>(it->get<int64_t>());
  }
  return s;
}

// [SECTION] code points

namespace {

using Char = Utf8Char;

bool is_space(char32_t c) {
  return c <= 0x20 || c == 0x7F || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200B) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }

// Letters, approximately \p{IsAlpha}: ASCII letters and every code point of the alphabetic blocks, minus the
// punctuation and symbol blocks. Enough for the European languages the models are trained on.
bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
  if (c == 0xD7 || c == 0xF7) return false;
  if (c == 0x37E || c == 0x387) return false;                      // Greek question mark, ano teleia
  if (c >= 0x2000 && c <= 0x2BFF) return false;                    // punctuation, symbols, arrows, math
  if (c >= 0x3000 && c <= 0x303F) return false;                    // CJK punctuation
  if ((c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
      (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65))
    return false;                                                  // full-width punctuation
  if (c >= 0x1F000 && c <= 0x1FAFF) return false;                  // emoji
  return c != 0xFFFD;
}

bool is_alnum(char32_t c) { return is_alpha(c) || is_digit(c); }

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c | 1;       // pairs: even upper
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;  // odd upper
  if (c == 0x178) return 0xFF;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;        // Greek
  if (c >= 0x410 && c <= 0x42F) return c + 32;                      // Cyrillic
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c == 0x1E9E) return 0xDF;                                      // capital sharp s
  return c;
}

bool is_cased_letter(char32_t c) {
  return (c < 0x80 && is_alpha(c)) || (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7) ||
         (c >= 0x370 && c <= 0x3FF) || (c >= 0x400 && c <= 0x4FF);
}

bool is_lower(char32_t c) { return is_cased_letter(c) && to_lower(c) == c; }

// normalize-punctuation.perl, the part that matters for words: typographic quotes, dashes and ellipses.
std::vector<Char> normalize(const std::vector<Char>& in) {
  std::vector<Char> out;
  out.reserve(in.size());
  for (const Char& ch : in) {
    switch (ch.c) {
      case 0x201C: case 0x201D: case 0x201E: case 0x201F: case 0xAB: case 0xBB: case 0x301D: case 0x301E:
        out.push_back({'"', ch.begin, ch.end});
        break;
      case 0x2018: case 0x2019: case 0x201A: case 0x201B: case 0xB4: case '`':
        out.push_back({'\'', ch.begin, ch.end});
        break;
      case 0x2013: case 0x2012: case 0x2212:
        out.push_back({'-', ch.begin, ch.end});
        break;
      case 0x2014: case 0x2015:  // an em dash stands alone: " - "
        out.push_back({' ', ch.begin, ch.begin});
        out.push_back({'-', ch.begin, ch.end});
        out.push_back({' ', ch.end, ch.end});
        break;
      case 0x2026:
        for (int k = 0; k < 3; ++k) out.push_back({'.', ch.begin, ch.end});
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

// Abbreviations whose final period belongs to the word: the lowercase entries of Moses' nonbreaking_prefix.*
// files (the training data were lowercased before tokenizing, so only those ever matched), and single
// capital letters (initials) when the text keeps its case.
bool is_abbreviation(const std::u32string& word, const std::string& language, bool lowercased) {
  static const char* const en[] = {"v", "vs", "i.e", "rev", "e.g"};
  static const char* const de[] = {"bzw", "usw", "ca", "ggf", "evtl", "vgl", "inkl", "zzgl", "sog", "ebd", "bspw",
                                   "gegr", "abs", "bd", "dt", "tel", "z.b", "u.a", "d.h", "s.o", "s.u"};
  static const char* const fr[] = {"art", "av", "bd", "cf", "chap", "env", "fig", "p", "pp", "vol"};
  if (!lowercased && word.size() == 1 && word[0] >= 'A' && word[0] <= 'Z') return true;  // "J. Smith"
  std::string w;
  for (char32_t c : word) append_utf8(to_lower(c), w);
  auto in = [&](const auto& list) { return std::find(std::begin(list), std::end(list), w) != std::end(list); };
  const bool single_letter = word.size() == 1 && is_alpha(word[0]);
  const bool all_digits = std::all_of(word.begin(), word.end(), is_digit);
  if (language == "de" && (single_letter || all_digits)) return true;  // "s.", ordinals "2. stock"
  if (language == "fr" && single_letter) return true;
  if (language == "en") return in(en);
  if (language == "de") return in(de);
  if (language == "fr") return in(fr);
  return false;
}

// normalize-punctuation.perl's quote rules: English puts a period or comma inside the closing quote
// ("farms." -> farms . "), the other languages after it (wedding." -> wedding " .).
void move_punctuation_around_quotes(std::vector<Char>& chars, const std::string& language) {
  const size_t n = chars.size();
  for (size_t i = 0; i < n; ++i) {
    if (language == "en") {
      if (chars[i].c != '"') continue;
      size_t j = i + 1;
      while (j < n && (chars[j].c == '.' || chars[j].c == ',')) ++j;
      if (j == i + 1) continue;
      std::rotate(chars.begin() + static_cast<std::ptrdiff_t>(i), chars.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  chars.begin() + static_cast<std::ptrdiff_t>(j));  // '"' '.' -> '.' '"'
      i = j - 1;
    } else if (chars[i].c == '.' || chars[i].c == ',') {
      size_t j = i;
      while (j < n && chars[j].c == chars[i].c) ++j;
      if (j < n && chars[j].c == '"') {
        std::rotate(chars.begin() + static_cast<std::ptrdiff_t>(i), chars.begin() + static_cast<std::ptrdiff_t>(j),
                    chars.begin() + static_cast<std::ptrdiff_t>(j) + 1);  // '.' '"' -> '"' '.'
        i = j;
      } else {
        i = j - 1;
      }
    }
  }
}

std::string escape_moses(const std::u32string& chars, bool escape) {
  std::string out;
  for (char32_t c : chars) {
    if (escape) {
      switch (c) {
        case '&': out += "&amp;"; continue;
        case '|': out += "&#124;"; continue;
        case '<': out += "&lt;"; continue;
        case '>': out += "&gt;"; continue;
        case '\'': out += "&apos;"; continue;
        case '"': out += "&quot;"; continue;
        case '[': out += "&#91;"; continue;
        case ']': out += "&#93;"; continue;
        default: break;
      }
    }
    append_utf8(c, out);
  }
  return out;
}

// Cuts one whitespace-delimited word into pieces by the Moses rules; returns the piece boundaries.
// cut[i] means a token boundary before character i (cut[0] and cut[n] are always boundaries).
std::vector<bool> moses_cuts(const std::vector<Char>& w, const std::string& language) {
  const size_t n = w.size();
  std::vector<bool> cut(n + 1, false);
  cut[0] = cut[n] = true;
  auto alone = [&](size_t i) { cut[i] = cut[i + 1] = true; };
  // 1. everything but letters, digits, . ' , - stands alone
  for (size_t i = 0; i < n; ++i) {
    const char32_t c = w[i].c;
    if (!is_alnum(c) && c != '.' && c != '\'' && c != ',' && c != '-') alone(i);
  }
  // 2. commas, unless between digits (5,300)
  for (size_t i = 0; i < n; ++i) {
    if (w[i].c != ',') continue;
    const bool digit_before = i > 0 && !cut[i] && is_digit(w[i - 1].c);
    const bool digit_after = i + 1 < n && !cut[i + 1] && is_digit(w[i + 1].c);
    if (!(digit_before && digit_after)) alone(i);
  }
  // 3. runs of two or more dots stand alone ("...")
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && w[j].c == '.') ++j;
    if (j - i >= 2) cut[i] = cut[j] = true;
    i = std::max(j, i + 1);
  }
  // 4. apostrophes
  for (size_t i = 0; i < n; ++i) {
    if (w[i].c != '\'') continue;
    const bool alpha_before = i > 0 && !cut[i] && is_alpha(w[i - 1].c);
    const bool digit_before = i > 0 && !cut[i] && is_digit(w[i - 1].c);
    const bool alpha_after = i + 1 < n && !cut[i + 1] && is_alpha(w[i + 1].c);
    if (language == "en") {
      if (alpha_before && alpha_after) cut[i] = true;                                   // man 's
      else if (digit_before && i + 1 < n && !cut[i + 1] && (w[i + 1].c == 's' || w[i + 1].c == 'S')) cut[i] = true;  // 1990 's
      else if (!(digit_before && alpha_after)) alone(i);
    } else if (language == "fr" || language == "it") {
      if (alpha_before && alpha_after) cut[i + 1] = true;                               // l' herbe
      else alone(i);
    } else {
      alone(i);                                                                          // mcdonald ' s
    }
  }
  return cut;
}

}  // namespace

// [SECTION] tokenize / encode

std::vector<Token> tokenize(std::string_view text, const TokenizerSettings& settings, Side side) {
  const std::string& language = settings.language(side);
  std::vector<Char> chars = decode_utf8(text);
  if (settings.normalize_punctuation) {
    chars = normalize(chars);
    move_punctuation_around_quotes(chars, language);
  }

  // Pieces: whitespace words, each cut by the Moses rules.
  std::vector<std::vector<Char>> pieces;
  std::vector<Char> word;
  auto finish_word = [&] {
    if (word.empty()) return;
    if (!settings.split_punctuation) {
      pieces.push_back(word);
    } else {
      const std::vector<bool> cut = moses_cuts(word, language);
      size_t start = 0;
      for (size_t i = 1; i <= word.size(); ++i) {
        if (!cut[i]) continue;
        pieces.emplace_back(word.begin() + static_cast<std::ptrdiff_t>(start), word.begin() + static_cast<std::ptrdiff_t>(i));
        start = i;
      }
    }
    word.clear();
  };
  for (const Char& ch : chars) {
    if (is_space(ch.c)) finish_word();
    else word.push_back(ch);
  }
  finish_word();

  // A piece's final period is split off unless the piece is an abbreviation or the next piece starts in
  // lowercase (tokenizer.perl's nonbreaking-prefix rule).
  if (settings.split_punctuation) {
    for (size_t p = 0; p < pieces.size(); ++p) {
      const auto& piece = pieces[p];
      if (piece.size() < 2 || piece.back().c != '.') continue;
      std::u32string pre;
      bool has_dot = false, has_alpha = false;
      for (size_t i = 0; i + 1 < piece.size(); ++i) {
        pre += piece[i].c;
        has_dot |= piece[i].c == '.';
        has_alpha |= is_alpha(piece[i].c);
      }
      if (pre.back() == '.') continue;  // "..." handled as a run
      if (has_dot && has_alpha) continue;                  // "z.b.", "u.s."
      if (is_abbreviation(pre, language, settings.lowercase)) continue;  // "bzw.", "e.g."
      // Lowercased text (as the training data were when tokenized) keeps "splits. located" together.
      if (p + 1 < pieces.size()) {
        const char32_t next = pieces[p + 1].front().c;
        if (is_lower(settings.lowercase ? to_lower(next) : next)) continue;
      }
      std::vector<Char> dot{piece.back()};
      pieces[p].pop_back();
      pieces.insert(pieces.begin() + static_cast<std::ptrdiff_t>(p) + 1, std::move(dot));
      ++p;
    }
  }

  std::vector<Token> tokens;
  tokens.reserve(pieces.size());
  for (const auto& piece : pieces) {
    std::u32string chars32;
    for (const Char& ch : piece) chars32 += settings.lowercase ? to_lower(ch.c) : ch.c;
    Token t;
    t.text = escape_moses(chars32, settings.moses_escape);
    t.begin = piece.front().begin;
    t.end = piece.back().end;
    for (const Char& ch : piece) t.begin = std::min(t.begin, ch.begin), t.end = std::max(t.end, ch.end);
    t.surface = std::string(text.substr(t.begin, t.end - t.begin));
    tokens.push_back(std::move(t));
  }
  return tokens;
}

Token special_token(const Vocabulary& vocabulary, int id, size_t at) {
  Token t;
  t.text = vocabulary.token(id);
  t.begin = t.end = at;
  t.id = id;
  t.special = true;
  return t;
}

std::vector<Token> encode(std::string_view text, const TokenizerSettings& settings, const Vocabulary& vocabulary,
                          Side side) {
  if (text.size() > kMaxSentenceBytes)
    fail(ErrorKind::Input, ErrorCode::SentenceTooLong, "encode", {{"bytes", text.size()}, {"limit", kMaxSentenceBytes}},
         "the sentence is " + std::to_string(text.size()) + " bytes; the limit is " +
             std::to_string(kMaxSentenceBytes) + " (a model reads at most a few hundred tokens)");
  std::vector<Token> words = tokenize(text, settings, side);
  std::vector<Token> out;
  out.reserve(words.size() + 2);
  if (settings.add_bos_eos) out.push_back(special_token(vocabulary, vocabulary.specials().bos, 0));
  for (Token& t : words) {
    const auto id = vocabulary.find(t.text);
    t.id = id.value_or(vocabulary.specials().unk);
    t.unknown = !id.has_value();
    out.push_back(std::move(t));
  }
  if (settings.add_bos_eos) out.push_back(special_token(vocabulary, vocabulary.specials().eos, text.size()));
  return out;
}

std::vector<int> token_ids(const std::vector<Token>& tokens) {
  std::vector<int> ids;
  ids.reserve(tokens.size());
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

// [SECTION] display

std::string unescape_token(std::string_view token) {
  static const std::pair<std::string_view, char> escapes[] = {{"&apos;", '\''}, {"&quot;", '"'}, {"&#124;", '|'},
                                                              {"&lt;", '<'},    {"&gt;", '>'},   {"&#91;", '['},
                                                              {"&#93;", ']'},   {"&amp;", '&'}};
  std::string out;
  for (size_t i = 0; i < token.size();) {
    bool replaced = false;
    if (token[i] == '&') {
      for (const auto& [escape, c] : escapes) {
        if (token.substr(i, escape.size()) == escape) {
          out += c;
          i += escape.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += token[i++];
  }
  return out;
}

std::string detokenize(const std::vector<std::string>& tokens, const TokenizerSettings& settings, Side side) {
  const std::string& language = settings.language(side);
  std::string out;
  bool glue_next = true;  // no space before the first token
  bool open_quote = false;
  for (const std::string& raw : tokens) {
    const std::string t = settings.moses_escape ? unescape_token(raw) : raw;
    bool glue = glue_next;
    glue_next = false;
    if (t == "." || t == "," || t == "!" || t == "?" || t == ";" || t == ":" || t == ")" || t == "]" || t == "%" ||
        t == "...")
      glue = true;
    else if (t == "(" || t == "[")
      glue_next = true;
    else if (t == "\"") {
      if (open_quote) glue = true;
      else glue_next = true;
      open_quote = !open_quote;
    } else if (language == "en" && t.size() > 1 && t[0] == '\'')
      glue = true;                                                   // man 's -> man's
    else if ((language == "fr" || language == "it") && t.size() > 1 && t.back() == '\'')
      glue_next = true;                                              // l' herbe -> l'herbe
    if (!out.empty() && !glue) out += ' ';
    out += t;
  }
  return out;
}

}  // namespace sf
