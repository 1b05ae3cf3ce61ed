// safetensors reader and writer: dtype conversions, round trips, atomic writes, and every malformed file the
// reader must refuse with a typed error that names the fault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <algorithm>

#include "io/safetensors.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

// A file image: 8-byte little-endian header length, the header text, the data bytes.
std::vector<std::byte> file_image(const std::string& header, const std::vector<uint8_t>& data, uint64_t length = ~0ull) {
  if (length == ~0ull) length = header.size();
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((length >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (uint8_t b : data) out.push_back(static_cast<std::byte>(b));
  return out;
}

// Parses the image and returns the error, failing the test when none is thrown.
Error parse_error(const std::vector<std::byte>& image) {
  try {
    SafetensorsFile::from_bytes(image, "test.safetensors");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an sf::Error";
  return Error(ErrorKind::File, "");
}

void expect_format_error(const std::vector<std::byte>& image, const std::string& needle) {
  const Error e = parse_error(image);
  EXPECT_EQ(e.kind(), ErrorKind::Format) << e.what();
  EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  EXPECT_NE(std::string(e.what()).find("[load_safetensors]"), std::string::npos) << e.what();
}

std::vector<uint8_t> zeros(size_t n) { return std::vector<uint8_t>(n, 0); }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("stepformer_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator())); }
};

// [SECTION] conversions

TEST(SafetensorsDType, F16KnownValues) {
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_float(0xC000), -2.0f);
  EXPECT_EQ(f16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(f16_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7E00)));
  EXPECT_EQ(float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16(65519.0f), 0x7BFF);   // rounds down to the largest finite
  EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);   // the tie rounds to even: Inf
  EXPECT_EQ(float_to_f16(0.1f), 0x2E66);       // round to nearest
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // the tie 0.5 ulp rounds to even (0)
  EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp rounds to even (2)
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC0A0), -5.0f);
}

TEST(SafetensorsDType, F16RoundsToNearestWithTiesToEven) {
  // Between 1 (0x3C00) and the next F16, 1 + 2^-10 (0x3C01): above the midpoint rounds up, the midpoint itself
  // goes to the even neighbour, and so does the midpoint of 0x3C01 and 0x3C02.
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)), 0x3C00);
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
  EXPECT_EQ(float_to_f16(-(1.0f + std::ldexp(3.0f, -11))), 0xBC02);
  // Against a reference written here: the nearest of all finite F16 values (ties to the even bit pattern), for
  // random floats across the whole range, normal and subnormal.
  std::vector<std::pair<float, uint16_t>> finite;
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) finite.push_back({f16_to_float(static_cast<uint16_t>(bits)), static_cast<uint16_t>(bits)});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-26.0f, 15.9f), mantissa(1.0f, 2.0f);
  for (int n = 0; n < 200000; ++n) {
    const float f = std::ldexp(mantissa(rng), static_cast<int>(std::floor(exponent(rng))));
    if (f > 65504.0f) continue;
    const auto above = std::lower_bound(finite.begin(), finite.end(), std::pair<float, uint16_t>{f, 0});
    uint16_t want;
    if (above == finite.begin()) {
      want = above->second;
    } else if (above == finite.end()) {
      want = 0x7BFF;
    } else {
      const auto below = above - 1;
      const double up = static_cast<double>(above->first) - f, down = static_cast<double>(f) - below->first;
      want = up < down ? above->second : down < up ? below->second : (above->second % 2 == 0 ? above->second : below->second);
    }
    ASSERT_EQ(float_to_f16(f), want) << std::hexfloat << f;
    ASSERT_EQ(float_to_f16(-f), want | 0x8000) << std::hexfloat << -f;
  }
}

TEST(SafetensorsDType, EveryF16ValueSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = f16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16(f), bits) << "bits " << bits;
  }
}

TEST(SafetensorsDType, Names) {
  EXPECT_EQ(dtype_from_name("BF16"), DType::BF16);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_FALSE(dtype_from_name("F33").has_value());
  EXPECT_STREQ(dtype_name(DType::F16), "F16");
}

// [SECTION] reading

TEST(SafetensorsRead, F32F16AndBF16AsFloat) {
  // a: F32 (2,) = {1.5, -2}; b: F16 (2,) = {1, 0.5}; c: BF16 (1, 2) = {1, -5}
  std::vector<uint8_t> data;
  for (float f : {1.5f, -2.0f}) {
    uint8_t b[4];
    std::memcpy(b, &f, 4);
    data.insert(data.end(), b, b + 4);
  }
  for (uint16_t h : {uint16_t{0x3C00}, uint16_t{0x3800}, uint16_t{0x3F80}, uint16_t{0xC0A0}}) {
    data.push_back(h & 0xff);
    data.push_back(h >> 8);
  }
  const std::string header = R"({"__metadata__":{"k":"v"},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},)"
                             R"("c":{"dtype":"BF16","shape":[1,2],"data_offsets":[12,16]}})";
  const auto file = SafetensorsFile::from_bytes(file_image(header, data));
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.metadata().at("k"), "v");
  EXPECT_EQ(file.find("a")->to_floats(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(file.find("b")->to_floats(), (std::vector<float>{1.0f, 0.5f}));
  EXPECT_EQ(file.find("c")->to_floats(), (std::vector<float>{1.0f, -5.0f}));
  EXPECT_EQ(file.find("c")->shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(file.find("zzz"), nullptr);
}

TEST(SafetensorsRead, ScalarsEmptyTensorsAndPaddedHeaders) {
  std::string header = R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}})";
  header.append(5, ' ');
  const auto file = SafetensorsFile::from_bytes(file_image(header, zeros(4)));
  EXPECT_EQ(file.find("s")->numel(), 1);
  EXPECT_EQ(file.find("e")->numel(), 0);
}

TEST(SafetensorsRead, IntegerDTypesAreRecognisedButNotReadAsFloat) {
  const auto file = SafetensorsFile::from_bytes(
      file_image(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", zeros(16)));
  try {
    file.find("ids")->to_floats();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("I64"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsRead, TruncatedFile) {
  expect_format_error({std::byte{1}, std::byte{2}, std::byte{3}}, "shorter than the 8-byte header length");
  expect_format_error({}, "the file is 0 bytes");
  // a valid file cut in the middle of its data
  auto image = file_image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", zeros(16));
  image.resize(image.size() - 5);
  expect_format_error(image, "lie outside the data (11 bytes)");
}

TEST(SafetensorsRead, HeaderLengthPastTheEnd) {
  expect_format_error(file_image("{}", {}, 1000), "header length 1000 runs past the end of the file (10 bytes)");
  expect_format_error(file_image("{}", {}, ~0ull - 1), "runs past the end");
}

TEST(SafetensorsRead, HeaderOverTheLimitIsRefusedBeforeItIsParsed) {
  // A header of exactly the limit is read (an empty object padded with spaces); one byte more is refused, by
  // its length alone, naming the limit.
  const uint64_t limit = SafetensorsFile::kMaxHeaderBytes;
  ASSERT_EQ(limit, 16u << 20) << "docs/model-files.md documents 16 MiB";
  std::string header = "{" + std::string(limit - 2, ' ') + "}";
  EXPECT_NO_THROW(SafetensorsFile::from_bytes(file_image(header, {}), "big.safetensors"));
  header.insert(1, " ");
  expect_format_error(file_image(header, {}), "header length 16777217 exceeds the limit of 16777216 bytes");
}

TEST(SafetensorsRead, InvalidJson) {
  expect_format_error(file_image(R"({"a": {"dtype": "F32", )", {}), "not valid JSON");
  expect_format_error(file_image("[1, 2]", {}), "does not start with '{'");
  expect_format_error(file_image(R"({"a": 1})", {}), "tensor 'a': entry is not a JSON object");
  expect_format_error(file_image(std::string(1, '{') + std::string(200, '[') + std::string(200, ']') + "}", {}),
                      "nests deeper than 64 levels");
  expect_format_error(file_image(R"({"__metadata__": {"a": 1}})", {}), "__metadata__ key 'a' is not a string");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[1]}})", {}), "needs 'dtype', 'shape' and 'data_offsets'");
  expect_format_error(file_image("{\"\xff\": 1}", {}), "not valid JSON");
}

TEST(SafetensorsRead, OffsetsOutsideTheData) {
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", zeros(8)),
                      "tensor 'a': data_offsets [8, 16) lie outside the data (8 bytes)");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", zeros(8)),
                      "end before they begin");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", zeros(8)),
                      "is not a pair of non-negative integers");
  expect_format_error(
      file_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", zeros(8)),
      "lie outside the data");
}

TEST(SafetensorsRead, OverlappingHolesAndTrailingBytes) {
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 zeros(12)),
                      "tensor 'b' data_offsets [4, 12) overlap tensor 'a' [0, 8)");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", zeros(8)),
                      "hole [0, 4)");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", zeros(8)),
                      "4 bytes after the last tensor");
}

TEST(SafetensorsRead, UnknownDTypeAndSizeMismatch) {
  expect_format_error(file_image(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", zeros(4)),
                      "tensor 'a': unknown dtype 'F33'");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", zeros(8)),
                      "span 8 bytes, but F32 (3,) needs 12");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", zeros(4)),
                      "too many elements");
  expect_format_error(file_image(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", zeros(8)),
                      "too many elements");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", zeros(4)),
                      "not a non-negative integer");
  expect_format_error(file_image(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", zeros(4)),
                      "not a non-negative integer");
}

TEST(SafetensorsRead, MissingFileIsAFileError) {
  try {
    SafetensorsFile::open("/nonexistent/dir/model.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::File);
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/model.safetensors'"), std::string::npos);
  }
}

// [SECTION] writing

TEST(SafetensorsWrite, F32RoundTripThroughAMappedFile) {
  TempDir dir;
  const std::vector<float> a = {1.0f, -2.5f, 3.25f, 1e-30f, 7.0f, -0.0f};
  const std::vector<float> b = {42.0f};
  write_safetensors(dir.file("m.safetensors"), {{"layer.a", {2, 3}, a}, {"b", {}, b}}, {{"note", "hello"}});
  const auto file = SafetensorsFile::open(dir.file("m.safetensors"));
  EXPECT_EQ(file.metadata().at("note"), "hello");
  EXPECT_EQ(file.find("layer.a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.find("layer.a")->dtype, DType::F32);
  EXPECT_EQ(file.find("layer.a")->to_floats(), a);
  EXPECT_EQ(file.find("b")->to_floats(), b);
  EXPECT_EQ((file.file_size() - 7 * 4) % 8, 0u);  // header padded: the data region starts 8-byte aligned
}

TEST(SafetensorsWrite, F16RoundTrip) {
  TempDir dir;
  const std::vector<float> a = {1.0f, 0.1f, -3.14159f, 65504.0f, 1e-6f};
  write_safetensors(dir.file("m.safetensors"), {{"a", {5}, a}}, {}, DType::F16);
  const auto file = SafetensorsFile::open(dir.file("m.safetensors"));
  EXPECT_EQ(file.find("a")->dtype, DType::F16);
  const auto back = file.find("a")->to_floats();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(back[i], a[i], std::abs(a[i]) * 1e-3 + 6e-8) << i;
  EXPECT_EQ(back[0], 1.0f);
}

TEST(SafetensorsWrite, IsAtomic) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::vector<float> old_values = {1, 2, 3};
  write_safetensors(path, {{"a", {3}, old_values}}, {});
  EXPECT_EQ(dir.entries(), 1u);  // no temporary file left behind

  // A write that fails half-way (a value F16 cannot hold) leaves the old file intact and no temporary file.
  const std::vector<float> big = {1.0f, 1e6f};
  try {
    write_safetensors(path, {{"a", {3}, old_values}, {"big", {2}, big}}, {}, DType::F16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("tensor 'big' value 1000000"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), 1u);
  EXPECT_EQ(SafetensorsFile::open(path).find("a")->to_floats(), old_values);

  // Replacing works and is seen whole.
  const std::vector<float> new_values = {4, 5};
  write_safetensors(path, {{"a", {2}, new_values}}, {});
  EXPECT_EQ(SafetensorsFile::open(path).find("a")->to_floats(), new_values);
  EXPECT_EQ(dir.entries(), 1u);
}

TEST(SafetensorsWrite, AnOpenMappingSurvivesTheReplacement) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::vector<float> v1 = {1, 2}, v2 = {3, 4};
  write_safetensors(path, {{"a", {2}, v1}}, {});
  const auto mapped = SafetensorsFile::open(path);
  write_safetensors(path, {{"a", {2}, v2}}, {});  // rename gives a new inode; the old mapping is untouched
  EXPECT_EQ(mapped.find("a")->to_floats(), v1);
}

TEST(SafetensorsWrite, Errors) {
  TempDir dir;
  const std::vector<float> v = {1, 2};
  EXPECT_THROW(write_safetensors("/nonexistent/dir/m.safetensors", {{"a", {2}, v}}, {}), Error);
  try {
    write_safetensors(dir.file("m.safetensors"), {{"a", {3}, v}}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 3 values, got 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_safetensors(dir.file("m.safetensors"), {{"a", {2}, v}, {"a", {2}, v}}, {}), Error);
  EXPECT_THROW(write_safetensors(dir.file("m.safetensors"), {{"a", {2}, v}}, {}, DType::BF16), Error);
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(SafetensorsWrite, SerializeMatchesTheFile) {
  TempDir dir;
  const std::vector<float> v = {1, 2, 3};
  write_safetensors(dir.file("m.safetensors"), {{"a", {3}, v}}, {{"x", "y"}});
  std::ifstream in(dir.file("m.safetensors"), std::ios::binary);
  const std::string on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bytes = serialize_safetensors({{"a", {3}, v}}, {{"x", "y"}});
  ASSERT_EQ(bytes.size(), on_disk.size());
  EXPECT_EQ(std::memcmp(bytes.data(), on_disk.data(), bytes.size()), 0);
  // ...and the bytes are the tensor and the metadata, read back.
  const SafetensorsFile back = SafetensorsFile::from_bytes(bytes, "serialized");
  ASSERT_NE(back.find("a"), nullptr);
  EXPECT_EQ(back.find("a")->to_floats(), v);
  EXPECT_EQ(back.metadata().at("x"), "y");
}

}  // namespace
}  // namespace sf
