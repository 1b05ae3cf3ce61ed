// BERT's WordPiece tokenizer (core/model/wordpiece.h) against the reference of tests/reference/make_wordpiece_fixtures.py
// (Hugging Face's slow BertTokenizer re-written in Python) on a vocabulary built from Multi30k
// (tests/fixtures/wordpiece/): hard cases under five option sets, every character lowering or accent stripping
// changes, random words of letters and combining marks, and every line of Multi30k's English and German test sets
// where the data is here. Then spans, decoding, and the vocabulary files and options that are refused.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/tokenizer.h"
#include "model/wordpiece.h"
#include "multi30k_files.h"
#include "util/error.h"
#include "util/utf8.h"

namespace sf {
namespace {

const std::string kDir = std::string(STEPFORMER_FIXTURE_DIR) + "/wordpiece";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const nlohmann::json& fixture() {
  static const nlohmann::json j = nlohmann::json::parse(read_file(kDir + "/cases.json"));
  return j;
}

WordPieceOptions options_named(const std::string& name) {
  const nlohmann::json& o = fixture().at("options").at(name);
  WordPieceOptions options;
  options.lower_case = o.at("do_lower_case").get<bool>();
  options.strip_accents = o.at("strip_accents").is_null() ? -1 : (o.at("strip_accents").get<bool>() ? 1 : 0);
  options.split_chinese_chars = o.at("tokenize_chinese_chars").get<bool>();
  return options;
}

const WordPiece& tokenizer(const std::string& option_name) {
  static std::map<std::string, WordPiece> made;
  auto it = made.find(option_name);
  if (it == made.end())
    it = made.emplace(option_name, WordPiece::from_vocab_file(kDir + "/vocab.txt", options_named(option_name))).first;
  return it->second;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<int> ids_of(const std::vector<WordPieceToken>& tokens) {
  std::vector<int> ids;
  for (const WordPieceToken& t : tokens) ids.push_back(t.id);
  return ids;
}

// The pieces' characters joined, "##" dropped: what the tokenizer made of the text's characters.
std::string joined_pieces(const std::vector<WordPieceToken>& tokens) {
  std::string out;
  for (const WordPieceToken& t : tokens) out += t.piece.rfind("##", 0) == 0 ? t.piece.substr(2) : t.piece;
  return out;
}

std::vector<int> base64_u16(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes += static_cast<char>((bits >> count) & 0xFF);
    }
  }
  std::vector<int> ids;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2)
    ids.push_back(static_cast<unsigned char>(bytes[i]) | (static_cast<unsigned char>(bytes[i + 1]) << 8));
  return ids;
}

using Span = std::pair<size_t, size_t>;
Span span_of(const WordPieceToken& t) { return {t.begin, t.end}; }

const char* const kOptionSets[] = {"uncased", "uncased_keep_accents", "cased", "cased_strip_accents",
                                   "uncased_no_chinese_split"};

// [SECTION] equal to BertTokenizer

TEST(WordPiece, HardCasesEqualBertTokenizer) {
  ASSERT_GE(fixture().at("hard").size(), 30u);
  for (const auto& c : fixture().at("hard")) {
    const std::string text = c.contains("text") ? c.at("text").get<std::string>() : from_hex(c.at("bytes_hex"));
    for (const char* name : kOptionSets) {
      const std::vector<WordPieceToken> tokens = tokenizer(name).encode(text);
      std::vector<std::string> pieces;
      for (const WordPieceToken& t : tokens) pieces.push_back(t.piece);
      EXPECT_EQ(ids_of(tokens), c.at("ids").at(name).get<std::vector<int>>()) << name << ": " << text;
      EXPECT_EQ(pieces, c.at("pieces").at(name).get<std::vector<std::string>>()) << name << ": " << text;
      // Spans lie in the text, in order; only the [CLS] / [SEP] added are empty.
      size_t last_begin = 0;
      for (const WordPieceToken& t : tokens) {
        EXPECT_LE(t.begin, t.end) << t.piece;
        EXPECT_LE(t.end, text.size()) << t.piece;
        EXPECT_GE(t.begin, last_begin) << name << ": " << text;
        last_begin = t.begin;
        EXPECT_EQ(t.begin == t.end, &t == &tokens.front() || &t == &tokens.back()) << t.piece << " in " << text;
        EXPECT_EQ(t.unknown, t.id == tokenizer(name).unk_id() && !t.special) << t.piece;
      }
    }
  }
}

// Each vocabulary below holds every character the reference expects (alone and as "##" continuation), so the pieces
// spell out what lowering and accent stripping made of the text, character for character.
WordPiece spelling_vocabulary(const std::vector<std::string>& expected, const WordPieceOptions& options) {
  std::set<std::string> chars;
  for (const std::string& s : expected)
    for (const Utf8Char& ch : decode_utf8(s)) chars.insert(s.substr(ch.begin, ch.end - ch.begin));
  std::vector<std::string> pieces = {"[UNK]", "[CLS]", "[SEP]"};
  for (const std::string& c : chars) {
    pieces.push_back(c);
    pieces.push_back("##" + c);
  }
  return WordPiece::from_vocab(pieces, options);
}

TEST(WordPiece, EveryCharacterLowersAndLosesItsAccentsAsPythonDoes) {
  const nlohmann::json& characters = fixture().at("characters");
  ASSERT_EQ(characters.size(), 3u);
  for (const auto& [name, cases] : characters.items()) {
    ASSERT_GT(cases.size(), 1000u) << name;
    std::vector<std::string> expected;
    for (const auto& c : cases) expected.push_back(c.at(1).get<std::string>());
    const WordPiece w = spelling_vocabulary(expected, options_named(name));
    size_t wrong = 0;
    for (const auto& c : cases) {
      std::string text;
      append_utf8(c.at(0).get<char32_t>(), text);
      const std::string got = joined_pieces(w.encode(text, false));
      if (got != c.at(1).get<std::string>() && ++wrong <= 10)
        ADD_FAILURE() << name << ": U+" << std::hex << c.at(0).get<uint32_t>() << " became '" << got
                      << "', Python: '" << c.at(1).get<std::string>() << "'";
    }
    EXPECT_EQ(wrong, 0u) << name;
  }
}

// Words of letters and marks of several combining classes: NFD reorders marks across characters, and keeps the
// order of what is not a mark.
TEST(WordPiece, WordsOfLettersAndMarksNormaliseAsPythonDoes) {
  const nlohmann::json& words = fixture().at("words");
  const std::vector<std::string> input = words.at("words").get<std::vector<std::string>>();
  for (const char* name : {"uncased", "uncased_keep_accents", "cased_strip_accents"}) {
    const std::vector<std::string> expected = words.at(name).get<std::vector<std::string>>();
    ASSERT_EQ(input.size(), expected.size());
    const WordPiece w = spelling_vocabulary(expected, options_named(name));
    for (size_t i = 0; i < input.size(); ++i)
      EXPECT_EQ(joined_pieces(w.encode(input[i], false)), expected[i]) << name << ": word " << i;
  }
}

TEST(WordPiece, EveryLineOfMulti30ksTestSetsEqualsBertTokenizer) {
  const std::string data = testing::multi30k_raw_dir();
  if (data.empty())
    GTEST_SKIP() << "the hard cases agree; Multi30k's raw test sets were not found, so their 2 x 1,000 lines were not "
                    "compared (set STEPFORMER_MULTI30K_DIR to the multi30k folder holding raw/test_2016_flickr.en.gz)";
  for (const char* lang : {"en", "de"}) {
    const nlohmann::json& test = fixture().at("test_2016").at(lang);
    const std::string path = data + "/test_2016_flickr." + lang + ".gz";
    FILE* pipe = ::popen(("gzip -dc '" + path + "' | sha256sum").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char hash[65] = {};
    ASSERT_EQ(std::fread(hash, 1, 64, pipe), 64u);
    ::pclose(pipe);
    ASSERT_EQ(std::string(hash), test.at("sha256").get<std::string>())
        << path << " is not the file the fixture was made from";
    const std::vector<std::string> lines = testing::gzip_lines(path);
    ASSERT_EQ(lines.size(), test.at("lines").get<size_t>());
    for (const char* name : {"uncased", "cased"}) {
      const std::vector<int> all = base64_u16(test.at(name).at("ids_u16le_base64").get<std::string>());
      const std::vector<size_t> lengths = test.at(name).at("lengths").get<std::vector<size_t>>();
      ASSERT_EQ(lengths.size(), lines.size());
      size_t at = 0, pieces = 0, unknown = 0;
      for (size_t i = 0; i < lines.size(); ++i) {
        ASSERT_LE(at + lengths[i], all.size());
        const std::vector<int> expected(all.begin() + static_cast<std::ptrdiff_t>(at),
                                        all.begin() + static_cast<std::ptrdiff_t>(at + lengths[i]));
        at += lengths[i];
        const std::vector<WordPieceToken> tokens = tokenizer(name).encode(lines[i], false);
        ASSERT_EQ(ids_of(tokens), expected) << lang << " " << name << " line " << i + 1 << ": " << lines[i];
        // Each piece's span holds what it spells (ASCII words, where lowering and stripping change no length).
        for (const WordPieceToken& t : tokens) {
          unknown += t.unknown;
          const std::string surface = lines[i].substr(t.begin, t.end - t.begin);
          const std::string spelled = t.piece.rfind("##", 0) == 0 ? t.piece.substr(2) : t.piece;
          bool ascii = !t.unknown;
          for (const char b : surface) ascii = ascii && static_cast<unsigned char>(b) < 0x80;
          if (!ascii) continue;
          std::string lowered = surface;
          if (std::string(name) == "uncased")
            for (char& b : lowered) b = static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
          EXPECT_EQ(lowered, spelled) << lang << " " << name << " line " << i + 1;
        }
        pieces += tokens.size();
      }
      EXPECT_EQ(at, all.size());
      EXPECT_GT(pieces, lines.size() * 10) << "real captions, not empty lines";
      EXPECT_LT(unknown, pieces / 20) << "a vocabulary of Multi30k's own words leaves few words unknown";
    }
  }
}

// [SECTION] spans, options, decoding

TEST(WordPiece, SpansAreTheBytesEachPieceCameFrom) {
  const WordPiece& w = tokenizer("uncased");
  const std::string text = "H\xC3\xA9llo, [MASK] \xE6\x88\x91\xE7\x88\xB1";  // "Héllo, [MASK] 我爱"
  const std::vector<WordPieceToken> t = w.encode(text);
  ASSERT_EQ(t.size(), 8u);
  const Span spans[] = {{0, 0}, {0, 5}, {5, 6}, {6, 7}, {8, 14}, {15, 18}, {18, 21}, {21, 21}};
  const char* const pieces[] = {"[CLS]", "hell", "##o", ",", "[MASK]", "\xE6\x88\x91", "[UNK]", "[SEP]"};
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].piece, pieces[i]) << i;
    EXPECT_EQ(span_of(t[i]), spans[i]) << t[i].piece;
  }
  EXPECT_TRUE(t[0].special && t[4].special && t[7].special);
  EXPECT_FALSE(t[1].special || t[1].unknown);
  EXPECT_TRUE(t[6].unknown);  // 爱 is not in the vocabulary: its 3 bytes show which word was unknown

  // One character lowered into two (İ -> i U+0307): both keep İ's bytes.
  const std::vector<std::string> vocab = {"[UNK]", "[CLS]", "[SEP]", "i", "##x", "##\xCC\x87"};
  WordPieceOptions keep;
  keep.strip_accents = 0;
  const std::vector<WordPieceToken> dotted = WordPiece::from_vocab(vocab, keep).encode("\xC4\xB0x", false);
  ASSERT_EQ(dotted.size(), 3u);
  EXPECT_EQ(dotted[0].piece, "i");
  EXPECT_EQ(span_of(dotted[0]), (Span{0, 2}));
  EXPECT_EQ(dotted[1].piece, "##\xCC\x87");
  EXPECT_EQ(span_of(dotted[1]), (Span{0, 2}));
  EXPECT_EQ(span_of(dotted[2]), (Span{2, 3}));
  const std::vector<WordPieceToken> stripped = WordPiece::from_vocab(vocab, {}).encode("\xC4\xB0x", false);
  ASSERT_EQ(stripped.size(), 2u);
  EXPECT_EQ(span_of(stripped[0]), (Span{0, 2}));

  // An [UNK] for a word spans the whole word, however far the match got.
  const std::vector<WordPieceToken> unknown = w.encode("the xyz\xF0\x9F\x98\x80 the", false);
  ASSERT_EQ(unknown.size(), 3u);
  EXPECT_TRUE(unknown[1].unknown);
  EXPECT_EQ(span_of(unknown[1]), (Span{4, 11}));
}

TEST(WordPiece, OptionsChangeWhatTheyName) {
  const std::vector<std::string> vocab = {"[UNK]", "[CLS]", "[SEP]", "abc", "##def", "a", "##b", "##c", "##d"};
  WordPieceOptions five;
  five.max_chars_per_word = 5;
  const WordPiece w = WordPiece::from_vocab(vocab, five);
  EXPECT_EQ(ids_of(w.encode("abcd abcdef", false)), (std::vector<int>{3, 8, 0}));  // 6 characters > 5: [UNK]
  EXPECT_EQ(ids_of(WordPiece::from_vocab(vocab, {}).encode("abcdef", false)), (std::vector<int>{3, 4}));
  WordPieceOptions cased;
  cased.lower_case = false;
  EXPECT_EQ(ids_of(WordPiece::from_vocab(vocab, cased).encode("ABC abc", false)), (std::vector<int>{0, 3}));
  EXPECT_EQ(ids_of(WordPiece::from_vocab(vocab, {}).encode("ABC abc", false)), (std::vector<int>{3, 3}));
  // Ids and names of the special tokens; [PAD] and [MASK] may be absent.
  EXPECT_EQ(w.unk_id(), 0);
  EXPECT_EQ(w.cls_id(), 1);
  EXPECT_EQ(w.sep_id(), 2);
  EXPECT_EQ(w.pad_id(), -1);
  EXPECT_EQ(w.mask_id(), -1);
  EXPECT_EQ(w.size(), 9);
  EXPECT_EQ(w.id_of("##def"), 4);
  EXPECT_EQ(w.id_of("zzz"), -1);
  EXPECT_EQ(w.piece(4), "##def");
  EXPECT_STREQ(WordPiece::unicode_version(), "14.0.0");
  EXPECT_THROW(w.piece(9), Error);
  const WordPiece& full = tokenizer("uncased");
  EXPECT_EQ(full.pad_id(), 0);
  EXPECT_EQ(full.mask_id(), 4);
  // Without [MASK] in the vocabulary, "[MASK]" in the text is ordinary text.
  EXPECT_EQ(ids_of(w.encode("[MASK]", false)), (std::vector<int>{0, 0, 0}));
}

TEST(WordPiece, DecodeGluesContinuationsAndKeepsSpecialTokens) {
  const WordPiece& w = tokenizer("uncased");
  const std::vector<WordPieceToken> t = w.encode("Héllo, the [MASK] sat.");
  EXPECT_EQ(w.decode(ids_of(t)), "[CLS] hello , the [MASK] sat . [SEP]");
  EXPECT_EQ(w.decode({w.cls_id(), w.id_of("hell"), w.id_of("##o"), w.id_of(","), w.mask_id(), w.sep_id()}),
            "[CLS] hello , [MASK] [SEP]");
  EXPECT_EQ(w.decode({w.id_of("##o"), w.id_of("hell")}), "##o hell");  // nothing before the first to glue it to
  EXPECT_EQ(w.decode({}), "");
  try {
    w.decode({w.size()});
    ADD_FAILURE() << "an id outside the vocabulary was decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(e.code(), ErrorCode::TokenIdOutsideVocabulary);
  }
  EXPECT_THROW(w.decode({-1}), Error);
}

TEST(WordPiece, TextLongerThanTheLimitIsRefused) {
  const WordPiece& w = tokenizer("uncased");
  const std::string longest(kMaxSentenceBytes, 'a');
  EXPECT_EQ(w.encode(longest, false).size(), 1u);  // one word far over 100 characters: [UNK]
  try {
    w.encode(longest + "a");
    ADD_FAILURE() << "text over kMaxSentenceBytes was encoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(e.code(), ErrorCode::SentenceTooLong);
  }
}

// Text made of fragments that matter to the tokenizer (parts of special tokens, marks, letters that lower into two,
// ideographs, controls, invalid bytes) in random order: every encoding keeps its promises.
TEST(WordPiece, RandomTextKeepsThePromises) {
  using namespace std::literals;
  const std::string_view fragments[] = {"[MASK]"sv, "[MAS"sv, "K]"sv, "["sv, "a"sv, "B"sv, " "sv, "\t"sv, "\n"sv,
                                        "\xC4\xB0"sv, "\xCC\x81"sv, "\xE6\x88\x91"sv, "\xE3\x81\x93"sv, "\xEA\xB0\x80"sv,
                                        "\xF0\x9F\x98\x80"sv, "\xFF"sv, "\xE2\x82"sv, "\0"sv, "\xE2\x80\x8B"sv, "."sv,
                                        "##"sv, "\xC3\x9F"sv, "\xF0\x9D\x85\xA0"sv, "\xE2\x80\xA8"sv};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  for (const char* name : kOptionSets) {
    const WordPiece& w = tokenizer(name);
    for (int round = 0; round < 300; ++round) {
      std::string text;
      const size_t n = next() % 40;
      for (size_t k = 0; k < n; ++k) text += fragments[next() % std::size(fragments)];
      const std::vector<WordPieceToken> tokens = w.encode(text);
      ASSERT_GE(tokens.size(), 2u);
      EXPECT_EQ(tokens.front().id, w.cls_id());
      EXPECT_EQ(tokens.back().id, w.sep_id());
      size_t last_begin = 0;
      for (const WordPieceToken& t : tokens) {
        ASSERT_LE(t.begin, t.end);
        ASSERT_LE(t.end, text.size());
        EXPECT_GE(t.begin, last_begin);
        last_begin = t.begin;
        EXPECT_EQ(t.piece, w.piece(t.id));
        if (t.unknown) {
          EXPECT_EQ(t.id, w.unk_id());
        }
      }
      EXPECT_NO_THROW(w.decode(ids_of(tokens)));
    }
  }
}

// [SECTION] vocabularies that are refused

void expect_refused(const std::vector<std::string>& pieces, ErrorKind kind, const std::string& words,
                    ErrorCode code = ErrorCode::Generic) {
  try {
    WordPiece::from_vocab(pieces, {});
    ADD_FAILURE() << "accepted; expected: " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(WordPiece, VocabulariesWithoutWhatBertNeedsAreRefused) {
  expect_refused({"[CLS]", "[SEP]", "a"}, ErrorKind::Format, "no [UNK]");
  expect_refused({"[UNK]", "[SEP]", "a"}, ErrorKind::Format, "no [CLS]");
  expect_refused({"[UNK]", "[CLS]", "a"}, ErrorKind::Format, "no [SEP]");
  expect_refused({}, ErrorKind::Format, "holds no pieces");
  expect_refused({"[UNK]", "[CLS]", "[SEP]", "a", "b", "a"}, ErrorKind::Format, "'a' is on line 4 and again on line 6",
                 ErrorCode::VocabularyTokenTwice);
  expect_refused({"[UNK]", "[CLS]", "", "[SEP]"}, ErrorKind::Format, "line 3 is empty", ErrorCode::VocabularyTokenEmpty);
  WordPieceOptions bad;
  bad.strip_accents = 2;
  EXPECT_THROW(WordPiece::from_vocab({"[UNK]", "[CLS]", "[SEP]"}, bad), Error);
  bad = {};
  bad.max_chars_per_word = 0;
  EXPECT_THROW(WordPiece::from_vocab({"[UNK]", "[CLS]", "[SEP]"}, bad), Error);
}

TEST(WordPiece, VocabularyFilesAreReadAsPythonReadsThem) {
  const std::string dir = ::testing::TempDir() + "/wordpiece_files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/folder");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  // \n, \r\n and \r end lines; a last line without an end counts.
  const WordPiece crlf = WordPiece::from_vocab_file(write("crlf.txt", "[UNK]\r\n[CLS]\r[SEP]\nhe\r\n##llo"), {});
  EXPECT_EQ(crlf.size(), 5);
  EXPECT_EQ(crlf.id_of("##llo"), 4);
  EXPECT_EQ(ids_of(crlf.encode("Hello", false)), (std::vector<int>{3, 4}));
  // The fixture's vocabulary has every line a piece.
  const std::string fixture_vocab = read_file(kDir + "/vocab.txt");
  EXPECT_EQ(tokenizer("uncased").size(), std::count(fixture_vocab.begin(), fixture_vocab.end(), '\n'));
  auto refused = [&](const std::string& path, ErrorKind kind, const std::string& words) {
    try {
      WordPiece::from_vocab_file(path, {});
      ADD_FAILURE() << path << " was read as a vocabulary";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << path << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(write("empty.txt", ""), ErrorKind::Format, "holds no pieces");
  refused(write("twice.txt", "[UNK]\n[CLS]\n[SEP]\nx\nx\n"), ErrorKind::Format, "on line 4 and again on line 5");
  refused(write("blank.txt", "[UNK]\n[CLS]\n[SEP]\n\nx\n"), ErrorKind::Format, "line 4 is empty");
  refused(write("latin1.txt", "[UNK]\n[CLS]\n[SEP]\ncaf\xE9\n"), ErrorKind::Format, "line 4 is not valid UTF-8");
  refused(write("no_unk.txt", "[CLS]\n[SEP]\n"), ErrorKind::Format, "no [UNK]");
  // Where a vocabulary belongs, a folder, a FIFO, a link loop or nothing: refused at once, never a read that blocks.
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink(dir + "/loop_b", dir + "/loop_a");
  std::filesystem::create_symlink(dir + "/loop_a", dir + "/loop_b");
  for (const std::string name : {"folder", "fifo", "loop_a", "missing"}) refused(dir + "/" + name, ErrorKind::File, "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sf
