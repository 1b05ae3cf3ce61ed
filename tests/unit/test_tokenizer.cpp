// The word-level tokenizer and vocabulary. The expected strings are lines of Multi30k's Moses-tokenized files
// (tok/train.lc.norm.tok.*) next to the raw sentences they came from: the tokenizer must reproduce them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/tokenizer.h"
#include "model/vocabulary.h"
#include "util/error.h"

namespace sf {
namespace {

std::string joined(const std::string& text, const std::string& language) {
  TokenizerSettings s;
  s.source_language = language;
  std::string out;
  for (const Token& t : tokenize(text, s)) out += (out.empty() ? "" : " ") + t.text;
  return out;
}

TEST(Tokenizer, ReproducesMultiThirtyKEnglish) {
  EXPECT_EQ(joined("A little boy playing GameCube at a McDonald's.", "en"),
            "a little boy playing gamecube at a mcdonald &apos;s .");
  EXPECT_EQ(joined("A young blond-haired boy and a dark-haired girl are eating at a kid's table.", "en"),
            "a young blond-haired boy and a dark-haired girl are eating at a kid &apos;s table .");
  EXPECT_EQ(joined("Young woman holding a bottle, reaching out from a bench to shake a man's hand.", "en"),
            "young woman holding a bottle , reaching out from a bench to shake a man &apos;s hand .");
  EXPECT_EQ(joined("A woman and her daughter measuring themselves against a giant ruler at \"Washington Farms\".", "en"),
            "a woman and her daughter measuring themselves against a giant ruler at &quot; washington farms . &quot;");
  EXPECT_EQ(joined("People are standing in a building that's under construction near 3rd St.", "en"),
            "people are standing in a building that &apos;s under construction near 3rd st .");
  EXPECT_EQ(joined("Two dogs (one black) don't play; 5,300 people & a cat!", "en"),
            "two dogs ( one black ) don &apos;t play ; 5,300 people &amp; a cat !");
}

TEST(Tokenizer, ReproducesMultiThirtyKGerman) {
  EXPECT_EQ(joined("Ein kleiner Junge spielt bei McDonald's GameCube.", "de"),
            "ein kleiner junge spielt bei mcdonald &apos; s gamecube .");
  EXPECT_EQ(joined("Ein Junge, der während eines Taekwondo-Wettbewerbs einen Sprungtritt macht.", "de"),
            "ein junge , der während eines taekwondo-wettbewerbs einen sprungtritt macht .");
  EXPECT_EQ(joined("Ein Mann arbeitet auf Höhe des 2. Stocks an einem Gebäude.", "de"),
            "ein mann arbeitet auf höhe des 2. stocks an einem gebäude .");
  EXPECT_EQ(joined("Ein Mann und eine Frau halten ein Schild mit der Aufschrift: „It's a nice day for a Gay Wedding.“", "de"),
            "ein mann und eine frau halten ein schild mit der aufschrift : &quot; it &apos; s a nice day for a gay wedding &quot; .");
  EXPECT_EQ(joined("Zwei Männer treten auf. Beide spielen Gitarre, bzw. singen.", "de"),
            "zwei männer treten auf. beide spielen gitarre , bzw. singen .");
}

TEST(Tokenizer, ReproducesMultiThirtyKFrench) {
  EXPECT_EQ(joined("Une importante foule de gens se tient dehors devant l'entrée d'une bouche de métro.", "fr"),
            "une importante foule de gens se tient dehors devant l&apos; entrée d&apos; une bouche de métro .");
  EXPECT_EQ(joined("Un homme en vert tient une guitare tandis qu'un autre homme observe sa chemise.", "fr"),
            "un homme en vert tient une guitare tandis qu&apos; un autre homme observe sa chemise .");
  EXPECT_EQ(joined("Une petite fille est assise devant un grand arc-en-ciel peint.", "fr"),
            "une petite fille est assise devant un grand arc-en-ciel peint .");
  EXPECT_EQ(joined("Un jeune homme rouquin joue au billard… Magnifique !", "fr"),
            "un jeune homme rouquin joue au billard ... magnifique !");
}

TEST(Tokenizer, KeepsTheSurfaceOfEveryToken) {
  TokenizerSettings s;
  s.source_language = "fr";
  const std::string text = "  L’Herbe, «verte»…";
  const auto tokens = tokenize(text, s);
  std::vector<std::string> texts, surfaces;
  for (const auto& t : tokens) {
    texts.push_back(t.text);
    surfaces.push_back(t.surface);
    EXPECT_EQ(text.substr(t.begin, t.end - t.begin), t.surface);
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"l&apos;", "herbe", ",", "&quot;", "verte", "&quot;", "..."}));
  EXPECT_EQ(surfaces, (std::vector<std::string>{"L’", "Herbe", ",", "«", "verte", "»", "…"}));
}

TEST(Tokenizer, EncodeMarksUnknownWordsAndAddsSpecials) {
  const Vocabulary v({"<unk>", "<pad>", "<bos>", "<eos>", "ein", "mann", "."}, SpecialIds{});
  TokenizerSettings s;
  s.source_language = "de";
  const auto tokens = encode("Ein Zauberer.", s, v);
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(token_ids(tokens), (std::vector<int>{2, 4, 0, 6, 3}));
  EXPECT_TRUE(tokens[0].special);
  EXPECT_TRUE(tokens[2].unknown);
  EXPECT_EQ(tokens[2].text, "zauberer");      // the word is kept for display...
  EXPECT_EQ(tokens[2].surface, "Zauberer");   // ...as typed
  EXPECT_FALSE(tokens[1].unknown);
  s.add_bos_eos = false;
  EXPECT_EQ(token_ids(encode("mann", s, v)), (std::vector<int>{5}));
}

TEST(Tokenizer, SettingsSwitchRulesOff) {
  TokenizerSettings s;
  s.lowercase = false;
  s.split_punctuation = false;
  s.moses_escape = false;
  auto texts = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& t : tokenize(text, s)) out.push_back(t.text);
    return out;
  };
  EXPECT_EQ(texts("The man's hat."), (std::vector<std::string>{"The", "man's", "hat."}));
  s.split_punctuation = true;
  s.source_language = "en";
  EXPECT_EQ(texts("The man's hat."), (std::vector<std::string>{"The", "man", "'s", "hat", "."}));
  EXPECT_EQ(texts("Mr. J. Smith"), (std::vector<std::string>{"Mr", ".", "J.", "Smith"}));
}

TEST(Tokenizer, SettingsJsonRoundTripAndErrors) {
  // Every key with a value other than its default, written as a model file's metadata holds it.
  const nlohmann::json every_key = {{"kind", "sentencepiece"},     {"lowercase", false},
                                    {"split_punctuation", false},
                                    {"moses_escape", false},       {"normalize_punctuation", false},
                                    {"source_language", "fr"},     {"target_language", "en"},
                                    {"add_bos_eos", false}};
  const TokenizerSettings s = tokenizer_settings_from_json(every_key);
  EXPECT_FALSE(s.lowercase);
  EXPECT_FALSE(s.split_punctuation);
  EXPECT_FALSE(s.moses_escape);
  EXPECT_FALSE(s.normalize_punctuation);
  EXPECT_EQ(s.source_language, "fr");
  EXPECT_EQ(s.target_language, "en");
  EXPECT_FALSE(s.add_bos_eos);
  EXPECT_EQ(s.kind, "sentencepiece");
  EXPECT_EQ(tokenizer_settings_to_json(s), every_key);
  const TokenizerSettings defaults = tokenizer_settings_from_json(nlohmann::json::object());
  EXPECT_TRUE(defaults.lowercase && defaults.split_punctuation && defaults.moses_escape &&
              defaults.normalize_punctuation && defaults.add_bos_eos);
  EXPECT_THROW(tokenizer_settings_from_json(nlohmann::json{{"source_language", 3}}), Error);
  EXPECT_THROW(tokenizer_settings_from_json(nlohmann::json{{"moses_escape", "no"}}), Error);
  EXPECT_THROW(tokenizer_settings_from_json(nlohmann::json::array()), Error);
  EXPECT_EQ(defaults.kind, "words");
  EXPECT_THROW(tokenizer_settings_from_json(nlohmann::json{{"kind", "bpe"}}), Error);
}

TEST(Tokenizer, GermanOrdinalsKeepTheirPeriodWhateverFollows) {
  // Moses' German prefixes hold the numbers: "2." is an ordinal even before a capitalised word (the text keeps
  // its case here, so the lowercase-next-word rule cannot be what keeps it together); English splits it.
  TokenizerSettings s;
  s.lowercase = false;
  s.source_language = "de";
  auto texts = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& t : tokenize(text, s)) out.push_back(t.text);
    return out;
  };
  EXPECT_EQ(texts("Am 2. Oktober"), (std::vector<std::string>{"Am", "2.", "Oktober"}));
  s.source_language = "en";
  EXPECT_EQ(texts("On 2. October"), (std::vector<std::string>{"On", "2", ".", "October"}));
}

TEST(Tokenizer, InvalidUtf8BecomesReplacementCharacters) {
  // Each byte that does not start a valid sequence is one U+FFFD (EF BF BD); a lead byte whose continuation is
  // missing or not a continuation byte does not swallow the next character.
  TokenizerSettings s;
  s.source_language = "en";
  s.split_punctuation = false;
  auto texts = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& t : tokenize(text, s)) out.push_back(t.text);
    return out;
  };
  EXPECT_EQ(texts("a\xc3x"), (std::vector<std::string>{"a\xef\xbf\xbdx"}));
  EXPECT_EQ(texts("\xff\xfe b"), (std::vector<std::string>{"\xef\xbf\xbd\xef\xbf\xbd", "b"}));
  EXPECT_EQ(texts("\xe2\x82"), (std::vector<std::string>{"\xef\xbf\xbd\xef\xbf\xbd"}));
  EXPECT_EQ(texts("\xc0\xaf"), (std::vector<std::string>{"\xef\xbf\xbd\xef\xbf\xbd"})) << "an overlong '/'";
  EXPECT_EQ(texts("\xed\xa0\x80"), (std::vector<std::string>{"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"})) << "a surrogate";
  // Valid sequences of two, three and four bytes pass (lowercased).
  EXPECT_EQ(texts("\xc3\x9c \xe2\x82\xac \xf0\x9f\x98\x80"),
            (std::vector<std::string>{"\xc3\xbc", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}));
}

TEST(Tokenizer, NeverCrashesOnOddInput) {
  TokenizerSettings s;
  s.source_language = "en";
  EXPECT_TRUE(tokenize("", s).empty());
  EXPECT_TRUE(tokenize(" \t\n ", s).empty());
  const std::string invalid_utf8 = "a\xff\xfe b\xc3 \xe2\x82";
  const auto tokens = tokenize(invalid_utf8, s);
  for (const auto& t : tokens) EXPECT_LE(t.end, invalid_utf8.size());
  EXPECT_FALSE(tokens.empty());
  for (const char* odd : {"'", "''", "'s", "...", ".", ",", "-", "a.", "'a'", "5,", ",5", "x'.'y"})
    EXPECT_NO_THROW(tokenize(odd, s)) << odd;
}

TEST(Tokenizer, Detokenize) {
  TokenizerSettings s;
  s.target_language = "en";
  EXPECT_EQ(detokenize({"a", "man", "&apos;s", "hat", "(", "red", ")", ",", "&quot;", "big", "&quot;", "."}, s),
            "a man's hat (red), \"big\".");
  s.target_language = "fr";
  EXPECT_EQ(detokenize({"l&apos;", "herbe", "est", "verte", "!"}, s), "l'herbe est verte!");
  EXPECT_EQ(unescape_token("&amp;lt;"), "&lt;");
}

TEST(Vocabulary, LookupAndErrors) {
  const Vocabulary v({"<unk>", "<pad>", "<bos>", "<eos>", "hund"}, SpecialIds{});
  EXPECT_EQ(v.size(), 5);
  EXPECT_EQ(v.id("hund"), 4);
  EXPECT_EQ(v.id("katze"), 0);
  EXPECT_FALSE(v.find("katze").has_value());
  EXPECT_EQ(v.token(4), "hund");
  EXPECT_TRUE(v.is_special(2));
  EXPECT_FALSE(v.is_special(4));
  EXPECT_THROW(v.token(5), Error);
  EXPECT_THROW(v.token(-1), Error);
  EXPECT_EQ(Vocabulary::from_json(v.to_json(), SpecialIds{}, "v").tokens(), v.tokens());
  try {
    Vocabulary({"<unk>", "<pad>", "<bos>", "<eos>", "a", "a"}, SpecialIds{}, "src_vocab");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[src_vocab] token 'a' appears twice (ids 4 and 5)");
  }
  EXPECT_THROW(Vocabulary({"<unk>", "", "<bos>", "<eos>"}, SpecialIds{}), Error);
  try {
    Vocabulary({"<unk>", "<pad>", "<bos>"}, SpecialIds{}, "tgt_vocab");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config);
    EXPECT_NE(std::string(e.what()).find("eos_id (3) is outside the vocabulary (size 3)"), std::string::npos);
  }
  EXPECT_THROW(Vocabulary::from_json(nlohmann::json{{"a", 1}}, SpecialIds{}, "v"), Error);
}

}  // namespace
}  // namespace sf
