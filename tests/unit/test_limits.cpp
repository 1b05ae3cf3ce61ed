// Every limit of the core that docs/ state (cli.md, user-guide.md, model-files.md), at its boundary: the number
// they give is accepted, one more is refused with a message that names it. The numbers are written out here as
// the documents give them (not taken from the constants), so a limit changed in the code and not in the
// documents fails.
//   sentence 16 kB (16,384 bytes); beam width 1 to 64; corpus files 64 MB (67,108,864 bytes) and 1,000,000 lines;
//   JSON (settings, metadata, checkpoints) nested 64 deep; a SentencePiece piece 2,048 bytes; a safetensors
//   header 16 MiB (docs/model-files.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "decode/decoder.h"
#include "io/json_text.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/sentencepiece_proto.h"
#include "sentencepiece_bytes.h"
#include "train/corpus.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

const std::string kShipped = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";

// The message of the sf::Error `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Folder {
  fs::path path = fs::temp_directory_path() / ("stepformer_limits_" + std::to_string(::getpid()));
  Folder() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

TEST(Limits, ASentenceOf16384BytesIsReadAndOneByteMoreIsRefused) {
  const Model model = load_model(kShipped);
  std::string text;
  while (text.size() + 4 <= 16384) text += "ein ";
  text.append(16384 - text.size(), 'a');
  ASSERT_EQ(text.size(), 16384u);
  EXPECT_EQ(error_of([&] { encode_text(model, text, Side::Source); }), "");
  const std::string refused = error_of([&] { encode_text(model, text + "a", Side::Source); });
  EXPECT_NE(refused.find("16385 bytes; the limit is 16384"), std::string::npos) << refused;
}

TEST(Limits, ABeamOf64IsTakenAnd65Refused) {
  DecodeOptions o;
  o.strategy = DecodeStrategy::Beam;
  o.beam_width = 64;
  EXPECT_EQ(error_of([&] { validate_decode_options(o); }), "");
  o.beam_width = 65;
  EXPECT_NE(error_of([&] { validate_decode_options(o); }).find("the beam width must be from 1 to 64, got 65"), std::string::npos);
  o.beam_width = 1;
  EXPECT_EQ(error_of([&] { validate_decode_options(o); }), "");
  o.beam_width = 0;
  EXPECT_NE(error_of([&] { validate_decode_options(o); }).find("got 0"), std::string::npos);
}

TEST(Limits, ACorpusFileOf1000000LinesIsReadAndOneLineMoreIsRefused) {
  Folder d;
  {
    std::ofstream out(d.file("lines.de"));
    for (int i = 0; i < 1000000; ++i) out << "a\n";
  }
  EXPECT_EQ(read_token_lines(d.file("lines.de")).size(), 1000000u);
  std::ofstream(d.file("lines.de"), std::ios::app) << "a\n";
  const std::string refused = error_of([&] { read_token_lines(d.file("lines.de")); });
  EXPECT_NE(refused.find("has 1000001 lines; the limit for a corpus file is 1000000"), std::string::npos) << refused;
}

TEST(Limits, ACorpusFileOf64MegabytesIsReadAndOneByteMoreIsRefused) {
  Folder d;
  const uint64_t limit = 67108864;  // 64 MB as docs/cli.md says it: 64 x 2^20 bytes
  {
    // 1,024 lines of 65,535 letters and a newline: 64 x 2^20 bytes, few lines.
    std::ofstream out(d.file("big.de"), std::ios::binary);
    const std::string line = std::string(65535, 'a') + "\n";
    for (int i = 0; i < 1024; ++i) out << line;
  }
  ASSERT_EQ(fs::file_size(d.file("big.de")), limit);
  EXPECT_EQ(error_of([&] { read_token_lines(d.file("big.de")); }), "");
  std::ofstream(d.file("big.de"), std::ios::app | std::ios::binary) << "a";
  const std::string refused = error_of([&] { read_token_lines(d.file("big.de")); });
  EXPECT_NE(refused.find("67,108,865 bytes; the limit for a corpus file is 67,108,864 bytes"), std::string::npos) << refused;
}

TEST(Limits, JsonNested64DeepIsReadAnd65Refused) {
  const auto nested = [](int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); };
  EXPECT_EQ(error_of([&] { parse_json_text(nested(64), "test", "the text"); }), "");
  const std::string refused = error_of([&] { parse_json_text(nested(65), "test", "the text"); });
  EXPECT_NE(refused.find("nests deeper than 64 levels"), std::string::npos) << refused;
}

TEST(Limits, ASentencePiecePieceOf2048BytesIsReadAndOneByteMoreIsRefused) {
  std::ifstream in(std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/marian/tiny-de-en/target.spm", std::ios::binary);
  const std::string base((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(sentencepiece_model_problem(base + testing::piece_field(std::string(2048, 'y'))), "");
  EXPECT_NE(sentencepiece_model_problem(base + testing::piece_field(std::string(2049, 'y'))).find("is 2049 bytes"),
            std::string::npos);
}

// docs/model-files.md: a safetensors header of at most 16 MiB. A header of exactly 16 MiB (a JSON object padded
// with spaces, as writers pad theirs) is read; one byte more is refused with the numbers.
TEST(Limits, ASafetensorsHeaderOf16MebibytesIsReadAndOneByteMoreIsRefused) {
  Folder d;
  const uint64_t limit = 16777216;  // 16 x 2^20
  const auto write = [&](uint64_t header_bytes) {
    std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    header.append(header_bytes - header.size(), ' ');
    std::ofstream out(d.file("h.safetensors"), std::ios::binary);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((header_bytes >> (8 * i)) & 0xFF));
    out << header;
    out.write("\0\0\x80\x3f", 4);  // 1.0f
  };
  write(limit);
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(d.file("h.safetensors")); }), "");
  write(limit + 1);
  const std::string refused = error_of([&] { SafetensorsFile::open(d.file("h.safetensors")); });
  EXPECT_NE(refused.find("header length 16777217 exceeds the limit of 16777216 bytes"), std::string::npos) << refused;
}

}  // namespace
}  // namespace sf
