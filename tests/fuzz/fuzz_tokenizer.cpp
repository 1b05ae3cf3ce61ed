// libFuzzer target: the tokenizer, as a model file's metadata and a user's typing reach it, and printable().
//
// The input is split at its first newline: the bytes before it are the tokenizer settings (JSON, as stored
// under "tokenizer" in a model file's __metadata__), the bytes after it the text a user typed (any bytes,
// invalid UTF-8 included). The settings are parsed with sf::parse_json_text + sf::tokenizer_settings_from_json;
// when they are refused (sf::Error) the defaults are used. The text then goes through sf::tokenize, sf::encode
// (source and target side, with a small fixed vocabulary and with one built from the text's own tokens),
// sf::unescape_token and sf::detokenize, and through sf::printable.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, any exception other than sf::Error (the
// only one these functions document), or a broken invariant checked below (abort()):
//   - every token has non-empty text and a span [begin, end) inside the input; encode()'s ids lie in the
//     vocabulary, a token is `unknown` exactly when its text is not in the vocabulary, and none is unknown
//     when the vocabulary holds all the text's tokens (encode() splits as tokenize() does);
//   - printable()'s output holds no C0 control (byte < 0x20), no DEL (0x7f), no C1 control (U+0080-U+009F),
//     and is valid UTF-8 (util/printable.h).
//
// An input that starts with the 4 bytes "\0SPM" is a SentencePiece model instead (no JSON starts with NUL): its
// last byte n says that the n bytes before it are the text, the bytes between the tag and the text are the model
// (a serialized ModelProto, as source.spm and target.spm hold). It goes through sf::SentencePieceModels (our
// check of the model, model/sentencepiece_proto.h, then libsentencepiece), and the text through split() and
// join() on both sides. A bug there too: a crash (libsentencepiece trusting a crafted model), any exception but
// sf::Error, a piece whose span lies outside the text. The seeds spm_* are the target.spm of
// tests/fixtures/marian/tiny-de-en and the crafted models of issue 46 (tests/fuzz/make_sentencepiece_seeds.py).
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/tokenizer/).
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/json_text.h"
#include "model/sentencepiece.h"
#include "model/tokenizer.h"
#include "model/vocabulary.h"
#include "util/error.h"
#include "util/printable.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// The length of the valid UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or 0.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) n = 2, cp = b & 0x1f;
  else if (b >= 0xe0 && b <= 0xef) n = 3, cp = b & 0x0f;
  else if (b >= 0xf0 && b <= 0xf4) n = 4, cp = b & 0x07;
  else return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void check_printable(std::string_view text) {
  const std::string out = sf::printable(text);
  for (size_t i = 0; i < out.size();) {
    const auto b = static_cast<unsigned char>(out[i]);
    check(b >= 0x20 && b != 0x7f);
    const size_t n = utf8_length(out, i);
    check(n != 0);
    if (n == 2) check(!(b == 0xc2 && static_cast<unsigned char>(out[i + 1]) < 0xa0));
    if (n == 3) {  // no bidirectional control (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)
      const uint32_t cp = (b & 0x0fu) << 12 | (static_cast<unsigned char>(out[i + 1]) & 0x3fu) << 6 |
                          (static_cast<unsigned char>(out[i + 2]) & 0x3fu);
      check(!sf::is_bidi_control(cp));
    }
    if (n == 2) {  // (U+061C ARABIC LETTER MARK)
      const uint32_t cp = (b & 0x1fu) << 6 | (static_cast<unsigned char>(out[i + 1]) & 0x3fu);
      check(!sf::is_bidi_control(cp));
    }
    i += n;
  }
  // Printable text comes back unchanged.
  check(sf::printable(out) == out);
}

void check_tokens(const std::vector<sf::Token>& tokens, std::string_view text) {
  for (const sf::Token& t : tokens) {
    check(!t.text.empty());
    check(t.begin <= t.end && t.end <= text.size());
    if (!t.special) check(t.begin < t.end);
  }
}

void check_encoded(const std::vector<sf::Token>& tokens, std::string_view text, const sf::Vocabulary& vocabulary,
                   bool all_known) {
  check_tokens(tokens, text);
  for (const sf::Token& t : tokens) {
    check(t.id >= 0 && t.id < vocabulary.size());
    if (!t.special) check(t.unknown == (t.id == vocabulary.specials().unk && t.text != vocabulary.token(t.id)));
    if (all_known) check(!t.unknown);
  }
  const std::vector<int> ids = sf::token_ids(tokens);
  check(ids.size() == tokens.size());
}

const sf::Vocabulary& fixed_vocabulary() {
  static const sf::Vocabulary v({"<unk>", "<pad>", "<bos>", "<eos>", "a", "man", "&apos;s", "hat", "l&apos;", "herbe",
                                 ".", ",", "...", "ein", "mann", "&quot;", "t-shirt", "z.b.", "bzw.", "-", "&amp;",
                                 "&#124;", "&lt;", "&gt;", "&#91;", "&#93;", "(", ")", "5,300", "?", "!"},
                                sf::SpecialIds{1, 2, 3, 0}, "fuzz");
  return v;
}

void run(std::string_view text, const sf::TokenizerSettings& settings) {
  for (const sf::Side side : {sf::Side::Source, sf::Side::Target}) {
    const std::vector<sf::Token> tokens = sf::tokenize(text, settings, side);
    check_tokens(tokens, text);

    // A vocabulary of the text's own tokens (plus the specials): every word of the text is then known.
    std::vector<std::string> words = {"<unk>", "<pad>", "<bos>", "<eos>"};
    std::set<std::string> seen(words.begin(), words.end());
    for (const sf::Token& t : tokens)
      if (words.size() < 64 && seen.insert(t.text).second) words.push_back(t.text);
    const sf::Vocabulary own(words, sf::SpecialIds{1, 2, 3, 0}, "fuzz");

    std::vector<std::string> texts;
    for (const sf::Vocabulary* vocabulary : {&fixed_vocabulary(), &own}) {
      try {
        const std::vector<sf::Token> encoded = sf::encode(text, settings, *vocabulary, side);
        check_encoded(encoded, text, *vocabulary, vocabulary == &own && tokens.size() + 4 <= 64);
        texts.clear();
        for (const sf::Token& t : encoded) texts.push_back(t.text);
      } catch (const sf::Error&) {
      }
    }
    for (const std::string& t : texts) (void)sf::unescape_token(t);
    (void)sf::detokenize(texts, settings, sf::Side::Source);
    (void)sf::detokenize(texts, settings, sf::Side::Target);
    std::vector<std::string> raw;  // the token texts of tokenize() and the raw words, as detokenize may see them
    for (const sf::Token& t : tokens) raw.push_back(t.text);
    raw.emplace_back(text.substr(0, 64));
    (void)sf::detokenize(raw, settings, side);
  }
}

// A SentencePiece model and a text (see the top): loaded and used, or refused with sf::Error.
void run_sentencepiece(std::string_view model, std::string_view text) {
  std::unique_ptr<sf::SentencePieceModels> models;
  try {
    models = std::make_unique<sf::SentencePieceModels>(std::string(model), std::string(model), "source.spm", "target.spm");
  } catch (const sf::Error&) {
    return;
  }
  for (const sf::Side side : {sf::Side::Source, sf::Side::Target}) {
    try {
      std::vector<std::string> pieces;
      for (const sf::Piece& p : models->split(text, side)) {
        check(p.begin <= p.end && p.end <= text.size());
        pieces.push_back(p.piece);
      }
      (void)models->join(pieces, side);
    } catch (const sf::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.size() >= 5 && input.substr(0, 4) == std::string_view("\0SPM", 4)) {
    const std::string_view rest = input.substr(4, input.size() - 5);
    const size_t n = std::min<size_t>(static_cast<unsigned char>(input.back()), rest.size());
    run_sentencepiece(rest.substr(0, rest.size() - n), rest.substr(rest.size() - n));
    return 0;
  }
  const size_t newline = input.find('\n');
  const std::string_view settings_text = newline == std::string_view::npos ? std::string_view() : input.substr(0, newline);
  const std::string_view text = newline == std::string_view::npos ? input : input.substr(newline + 1);

  sf::TokenizerSettings settings;
  if (!settings_text.empty()) {
    try {
      settings = sf::tokenizer_settings_from_json(sf::parse_json_text(settings_text, "fuzz", "tokenizer settings"));
      // What was read writes back and reads again the same.
      const sf::TokenizerSettings again = sf::tokenizer_settings_from_json(sf::tokenizer_settings_to_json(settings));
      check(again.lowercase == settings.lowercase && again.split_punctuation == settings.split_punctuation &&
            again.moses_escape == settings.moses_escape &&
            again.normalize_punctuation == settings.normalize_punctuation &&
            again.source_language == settings.source_language && again.target_language == settings.target_language &&
            again.add_bos_eos == settings.add_bos_eos);
    } catch (const sf::Error&) {
      settings = sf::TokenizerSettings{};
    }
  }
  run(text, settings);
  check_printable(input);
  return 0;
}
