// GPT-2's byte-level BPE (core/model/byte_bpe.h) against the reference of tests/reference/make_gpt2_bpe_fixtures.py
// (GPT-2's encoder.py algorithm in Python with the `regex` module) on a byte-level vocabulary learned from Multi30k
// (tests/fixtures/gpt2_bpe/): hard cases, and every line of Multi30k's English test set where the data is here.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/byte_bpe.h"
#include "model/unicode_classes.h"
#include "multi30k_files.h"
#include "util/error.h"
#include "util/utf8.h"

namespace sf {
namespace {

const std::string kDir = std::string(STEPFORMER_FIXTURE_DIR) + "/gpt2_bpe";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const ByteBpe& tokenizer() {
  static const ByteBpe t = ByteBpe::from_files(kDir + "/vocab.json", kDir + "/merges.txt");
  return t;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

TEST(ByteBpe, HardCasesEqualGpt2sEncoder) {
  const nlohmann::json fixture = nlohmann::json::parse(read_file(kDir + "/tokenization.json"));
  ASSERT_GE(fixture.at("hostile").size(), 20u);
  for (const auto& c : fixture.at("hostile")) {
    const std::string text = c.contains("text") ? c.at("text").get<std::string>() : from_hex(c.at("bytes_hex"));
    const std::vector<BytePiece> pieces = tokenizer().encode_pieces(text);
    std::vector<int> ids;
    std::vector<std::string> texts;
    for (const BytePiece& p : pieces) {
      ids.push_back(p.id);
      texts.push_back(p.text);
    }
    EXPECT_EQ(ids, c.at("ids").get<std::vector<int>>()) << text;
    EXPECT_EQ(texts, c.at("pieces").get<std::vector<std::string>>()) << text;
    // Decoding gives the text back, byte for byte (invalid UTF-8 as Python read it: U+FFFD per maximal subpart).
    EXPECT_EQ(tokenizer().decode(ids), utf8_with_replacements(text)) << text;
  }
}

TEST(ByteBpe, EveryLineOfMulti30ksEnglishTestSetEqualsGpt2sEncoder) {
  const nlohmann::json fixture = nlohmann::json::parse(read_file(kDir + "/tokenization.json"));
  const nlohmann::json& test = fixture.at("test_2016_en");
  const std::string data = testing::multi30k_raw_dir();
  if (data.empty())
    GTEST_SKIP() << "the hard cases agree; Multi30k's raw test set was not found, so its 1,000 English lines were not "
                    "compared (set STEPFORMER_MULTI30K_DIR to the multi30k folder holding raw/test_2016_flickr.en.gz)";
  const std::string path = data + "/test_2016_flickr.en.gz";
  FILE* pipe = ::popen(("gzip -dc '" + path + "' | sha256sum").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char hash[65] = {};
  ASSERT_EQ(std::fread(hash, 1, 64, pipe), 64u);
  ::pclose(pipe);
  ASSERT_EQ(std::string(hash), test.at("sha256").get<std::string>())
      << path << " is not the file the fixture was made from";
  std::vector<std::string> lines = testing::gzip_lines(path);
  ASSERT_EQ(lines.size(), test.at("ids").size());
  size_t pieces = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<int> ids = tokenizer().encode(lines[i]);
    ASSERT_EQ(ids, test.at("ids")[i].get<std::vector<int>>()) << "line " << i + 1 << ": " << lines[i];
    pieces += ids.size();
  }
  EXPECT_GT(pieces, lines.size() * 10);  // real captions, not empty lines
}

// The pattern's pieces where it is subtle: a word keeps one space before it, a run of spaces gives all but its last
// to a token of its own, a run of one other white space character stays itself.
TEST(ByteBpe, PreTokensFollowGpt2sPattern) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(ByteBpe::pre_tokens("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(ByteBpe::pre_tokens("a\n b"), (V{"a", "\n", " b"}));
  EXPECT_EQ(ByteBpe::pre_tokens("a \n\nb"), (V{"a", " \n", "\n", "b"}));
  EXPECT_EQ(ByteBpe::pre_tokens("end  "), (V{"end", "  "}));
  EXPECT_EQ(ByteBpe::pre_tokens("I'm they'll O'Neil"), (V{"I", "'m", " they", "'ll", " O", "'", "Neil"}));
  EXPECT_EQ(ByteBpe::pre_tokens("x=12.5!"), (V{"x", "=", "12", ".", "5", "!"}));
  EXPECT_EQ(ByteBpe::pre_tokens(" ..."), (V{" ..."}));
  EXPECT_EQ(ByteBpe::pre_tokens(""), V{});
}

TEST(ByteBpe, UnicodeClassesAreTheRegexModules) {
  EXPECT_TRUE(is_unicode_letter(U'a'));
  EXPECT_TRUE(is_unicode_letter(U'ß'));
  EXPECT_TRUE(is_unicode_letter(U'東'));
  EXPECT_TRUE(is_unicode_letter(U'한'));
  EXPECT_FALSE(is_unicode_letter(U'1'));
  EXPECT_FALSE(is_unicode_letter(U'\u0301'));  // a combining mark is \p{M}, not a letter
  EXPECT_TRUE(is_unicode_number(U'٣'));
  EXPECT_TRUE(is_unicode_number(U'½'));
  EXPECT_TRUE(is_unicode_space(U'\u00a0'));
  EXPECT_TRUE(is_unicode_space(U'\u3000'));
  EXPECT_FALSE(is_unicode_space(U'\u200b'));  // zero width space is not white space
  EXPECT_FALSE(is_unicode_letter(0x10FFFF));
}

TEST(ByteBpe, InvalidUtf8IsReplacedPerMaximalSubpart) {
  EXPECT_EQ(utf8_with_replacements("ok"), "ok");
  EXPECT_EQ(utf8_with_replacements("\xE2\x82"), "\xEF\xBF\xBD");                  // cut short: one
  EXPECT_EQ(utf8_with_replacements("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");      // overlong: two
  EXPECT_EQ(utf8_with_replacements("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: three
  EXPECT_EQ(utf8_with_replacements("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");     // whole: kept
}

// A vocabulary and merges that do not belong together, and files that are not what they claim, are refused with
// the reason.
TEST(ByteBpe, MismatchedOrMalformedFilesAreRefused) {
  const std::string vocab = read_file(kDir + "/vocab.json"), merges = read_file(kDir + "/merges.txt");
  auto refused = [](const std::string& v, const std::string& m, ErrorKind kind, const std::string& words) {
    try {
      ByteBpe::from_text(v, m, "test");
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(vocab, merges + "zz qq\n", ErrorKind::Config, "names a piece vocab.json lacks");
  refused(vocab, "#version: 0.2\nnot-two-pieces\n", ErrorKind::Format, "is not two pieces and a space");
  refused("{\"a\": 0}", "", ErrorKind::Config, "lacks the piece of byte");
  refused("[1, 2]", "", ErrorKind::Format, "not an object");
  refused("{\"a\": 0, \"b\": 0}", "", ErrorKind::Config, "once each");
  refused("{not json", "", ErrorKind::Format, "not JSON");
  EXPECT_THROW(tokenizer().decode({tokenizer().size()}), Error);
  EXPECT_EQ(tokenizer().end_of_text_id(), tokenizer().size() - 1);
}

// Where a vocabulary belongs, a FIFO, a folder, a link loop or a file that is not there: refused at once with the
// reason (io/user_files.h's read_user_file), never a read that blocks.
TEST(ByteBpe, FilesThatAreNotRegularAreRefused) {
  const std::string dir = ::testing::TempDir() + "/byte_bpe_hostile";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/folder");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink(dir + "/loop_b", dir + "/loop_a");
  std::filesystem::create_symlink(dir + "/loop_a", dir + "/loop_b");
  for (const std::string name : {"fifo", "folder", "loop_a", "missing"}) {
    try {
      ByteBpe::from_files(dir + "/" + name, kDir + "/merges.txt");
      ADD_FAILURE() << name << " was read as a vocabulary";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::File) << name << ": " << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sf
