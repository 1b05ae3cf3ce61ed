// The check of a SentencePiece model before libsentencepiece reads it (model/sentencepiece_proto.h): the
// models users have pass; the two crafted ones a hostile user reported (a normalizer trie whose first unit is
// 0xFFFFFE00, which crashed every command on its first sentence; a 200 kB piece, which overflowed the library's
// stack while it loaded) are refused with their reason, and so is every other way a character map or a piece
// can send the library outside its buffers; and a Marian folder holding one is refused by open_model, which
// every entry point goes through (translate, trace, eval, train --from, info, import-hf, the app).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "model/hf_marian.h"
#include "model/model.h"
#include "model/sentencepiece_proto.h"
#include "sentencepiece_bytes.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using namespace sf::testing;

const std::string kMarian = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/marian";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
std::string tiny_source() { return read(kMarian + "/tiny-de-en/source.spm"); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SentencePieceCheck, TheModelsUsersHavePass) {
  int checked = 0;
  for (const char* folder : {"tiny-de-en", "tiny-separate"})
    for (const char* side : {"source.spm", "target.spm"}) {
      const std::string bytes = read(kMarian + "/" + folder + "/" + side);
      ASSERT_FALSE(bytes.empty()) << folder << "/" << side;
      EXPECT_EQ(sentencepiece_model_problem(bytes), "") << folder << "/" << side;
      ++checked;
    }
  EXPECT_EQ(checked, 4);
  // The tiny model's source side carries SentencePiece's nmt_nfkc character map: its trie is walked whole.
  EXPECT_GT(tiny_source().size(), 200000u);
}

TEST(SentencePieceCheck, TheReportedNormalizerIsRefused) {
  const std::string problem = sentencepiece_model_problem(tiny_source() + normalizer_field(hostile_charsmap()));
  EXPECT_TRUE(contains(problem, "the normalizer's character map: unit 0 of its trie leads to units 1073741568 to "
                                "1073741823, past its 256")) << problem;
  // The denormalizer's map is walked the same way.
  EXPECT_TRUE(contains(sentencepiece_model_problem(tiny_source() + field_bytes(5, field_bytes(2, hostile_charsmap()))),
                       "the denormalizer's character map")) << "field 5";
}

TEST(SentencePieceCheck, APieceLongerThanTheLibrarysStackIsRefused) {
  const std::string piece = "\xe2\x96\x81" + std::string(200000, 'x');
  EXPECT_EQ(sentencepiece_model_problem(tiny_source() + piece_field(piece)),
            "piece 201 is 200003 bytes; SentencePiece makes pieces of at most 2048");
  EXPECT_EQ(sentencepiece_model_problem(tiny_source() + piece_field(std::string(2048, 'y'))), "") << "the longest allowed";
}

// A small trie of 512 units that maps "a" to the string at byte `value` of `strings`: the root's offset 256
// (its children at 256 ^ byte), "a" at 256 ^ 0x61 = 353 with a leaf, whose value unit is 353 ^ 97 = 256.
std::string trie_a(uint32_t value, std::string_view strings) {
  std::vector<uint32_t> units(512, 0);
  units[0] = 256u << 10;                             // offset 256
  units[353] = (97u << 10) | (1u << 8) | 0x61;       // label 'a', has a leaf, offset 97
  units[256] = (1u << 31) | value;                   // the leaf: the string's byte
  return charsmap(units, strings);
}

TEST(SentencePieceCheck, EveryWayOutOfTheBuffersIsNamed) {
  struct Case {
    const char* what;
    std::string extra;   // appended to a real model
    const char* reason;  // in the problem; "" = accepted
  };
  const std::string nan_score = piece_field("nan", std::numeric_limits<float>::quiet_NaN());
  const std::vector<Case> cases = {
      {"a well-formed map", normalizer_field(trie_a(0, std::string("b\0", 2))), ""},
      {"a map of 2 bytes", normalizer_field(std::string("\x01\x00", 2)), "it is 2 bytes, too short for a trie"},
      {"a trie larger than the map", normalizer_field(u32_le(1000) + std::string(12, '\0')),
       "its trie is said to be 1000 bytes, in 12 bytes"},
      // libsentencepiece compares the size with the whole map, 4 bytes of size included: this one passes it.
      {"a trie 2 bytes past the end", normalizer_field(u32_le(1030) + std::string(1028, '\0')),
       "its trie is said to be 1030 bytes, in 1028 bytes"},
      {"a trie of 16 units", normalizer_field(charsmap(std::vector<uint32_t>(16, 0), std::string("\0", 1))),
       "its trie has 16 units"},
      {"a rule past the strings", normalizer_field(trie_a(1000, std::string("b\0", 2))),
       "a rule of its trie points at byte 1000 of its 2 bytes of strings"},
      {"strings without an end", normalizer_field(trie_a(0, "b")), "which end in no NUL"},
      {"an empty piece", piece_field(""), "piece 201 is empty"},
      {"a NUL in a piece", piece_field(std::string("a\0b", 3)), "piece 201 holds a NUL byte"},
      {"a score that is not a number", nan_score, "piece 201 has the score nan"},
      {"a type of 9", piece_field("q", -1.0f, 9), "piece 201 has the type 9"},
      {"a model type of 7", field_bytes(2, field_varint(3, 7)), "its model type is 7"},
      {"a group", varint(1 << 3 | 3), "wire type 3"},
      {"a field past the end", varint(1 << 3 | 2) + varint(1000) + "abc", "a field of 1000 bytes where 3 are left"},
      {"a varint of 11 bytes", varint(3 << 3) + std::string(10, '\xff') + "\x01", "a number runs past the end"},
      {"a piece of the wrong wire type", field_varint(1, 5), "a piece (field 1) has wire type 0, not 2"},
  };
  for (const Case& c : cases) {
    const std::string problem = sentencepiece_model_problem(tiny_source() + c.extra);
    if (std::string(c.reason).empty()) EXPECT_EQ(problem, "") << c.what;
    else EXPECT_TRUE(contains(problem, c.reason)) << c.what << ": " << problem;
  }
  EXPECT_EQ(sentencepiece_model_problem(""), "it holds no pieces");
  std::string many;
  for (size_t i = 0; i <= kMaxSentencePieces; ++i) many += piece_field("a");
  EXPECT_EQ(sentencepiece_model_problem(many), "it holds more than 1000000 pieces");
}

// A Marian folder with a crafted source.spm or target.spm: refused by open_model, naming the file and the reason,
// where libsentencepiece crashed (the normalizer on the first sentence, the long piece while loading).
TEST(SentencePieceCheck, AMarianFolderHoldingOneIsRefusedByName) {
  const fs::path root = fs::temp_directory_path() / ("stepformer-spm-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy(kMarian + "/tiny-de-en", root / "m", fs::copy_options::recursive);
  const auto refused = [&](const char* side, const std::string& bytes) {
    const std::string original = read((root / "m" / side).string());
    std::ofstream((root / "m" / side), std::ios::binary) << bytes;
    std::string message;
    try {
      open_model((root / "m").string());
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Format);
      message = e.what();
    }
    std::ofstream((root / "m" / side), std::ios::binary) << original;
    return message;
  };
  std::string message = refused("source.spm", tiny_source() + normalizer_field(hostile_charsmap()));
  EXPECT_TRUE(contains(message, "source.spm' is not a SentencePiece model Stepformer can read: the normalizer's "
                                "character map: unit 0 of its trie")) << message;
  message = refused("target.spm", read(kMarian + "/tiny-de-en/target.spm") + piece_field(std::string(200000, 'x')));
  EXPECT_TRUE(contains(message, "target.spm' is not a SentencePiece model Stepformer can read: piece")) << message;
  EXPECT_TRUE(contains(message, "is 200000 bytes")) << message;
  EXPECT_NO_THROW(open_model((root / "m").string())) << "the folder as it was loads";
  fs::remove_all(root);
}

}  // namespace
}  // namespace sf
