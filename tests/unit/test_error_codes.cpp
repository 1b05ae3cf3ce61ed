// Typed errors (util/error.h, util/error_codes.inc): the declarations hold together, an error thrown with
// values other than its code's declared ones becomes Generic, and real failures a user meets (a truncated file,
// a tensor of the wrong shape, a NaN weight, a FIFO where a model belongs, ...) carry the right code and values.
// The app's wording of each code is tested in tests/gui/test_error_text.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda_model.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/hf_marian.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/error.h"
#include "model_file_edit.h"

namespace sf {

// gtest prints a code by its id ("tensor_wrong_shape"), not as a byte.
void PrintTo(ErrorCode code, std::ostream* os) { *os << error_code_id(code); }

namespace {

namespace fs = std::filesystem;

const std::string kTiny = std::string(STEPFORMER_FIXTURE_DIR) + "/models/pytorch_tutorial_tiny.safetensors";
const std::string kGpt = std::string(STEPFORMER_FIXTURE_DIR) + "/shapes/gpt_pre.model.safetensors";

// The values of an error as a map, to compare with what the test expects.
std::map<std::string, std::string> values_of(const Error& e) {
  std::map<std::string, std::string> m;
  for (const ErrorValue& v : e.values()) m[std::string(v.name)] = v.value;
  return m;
}

// The sf::Error `f` throws (a failed expectation when it throws none).
Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an sf::Error";
  return Error(ErrorKind::File, "");
}

// Copies of a good model, each broken one way, in a fresh folder.
struct BrokenFiles {
  fs::path dir = fs::temp_directory_path() / ("stepformer-error-codes-" + std::to_string(::getpid()));
  BrokenFiles() { fs::create_directories(dir); }
  ~BrokenFiles() { fs::remove_all(dir); }

  std::string cut(const std::string& name, uintmax_t size) const {
    const std::string path = (dir / name).string();
    fs::copy_file(kTiny, path, fs::copy_options::overwrite_existing);
    fs::resize_file(path, size);
    return path;
  }
  using Edit = sf::testing::TensorEdit;
  std::string rewrite(const std::string& name, const Edit& edit) const {
    return sf::testing::rewrite_model_file(kTiny, (dir / name).string(), edit);
  }
};

// [SECTION] the declarations

TEST(ErrorCodes, DeclarationsHoldTogether) {
  std::set<std::string_view> ids;
  for (size_t i = 0; i < kErrorCodeCount; ++i) {
    const ErrorCodeInfo& info = kErrorCodes[i];
    SCOPED_TRACE(std::string(info.id));
    EXPECT_EQ(static_cast<size_t>(info.code), i) << "kErrorCodes is in the enum's order";
    EXPECT_TRUE(ids.insert(info.id).second) << "an id names one code";
    const auto names = error_value_names(info.code);
    std::set<std::string_view> seen;
    for (std::string_view name : names) {
      EXPECT_TRUE(seen.insert(name).second) << "a value name twice: " << name;
      // A placeholder name of the app's table (gui/text/text.h): lowercase letters, digits, underscores.
      EXPECT_TRUE(!name.empty() && name[0] >= 'a' && name[0] <= 'z') << name;
      EXPECT_TRUE(std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      })) << name;
    }
    // No hole: the names fill the first slots.
    for (size_t k = names.size(); k < kMaxErrorValues; ++k) EXPECT_TRUE(info.value_names[k].empty());
  }
  EXPECT_TRUE(error_value_names(ErrorCode::Generic).empty());
  EXPECT_EQ(error_code_id(ErrorCode::TensorWrongShape), "tensor_wrong_shape");
}

TEST(ErrorCodes, ValuesOtherThanTheDeclaredOnesMakeAGenericError) {
  const Error right(ErrorKind::Value, ErrorCode::WeightNotFinite, {{"index", 3}, {"tensor", "w"}, {"value", "NaN"}},
                    "[t] w holds NaN");
  EXPECT_EQ(right.code(), ErrorCode::WeightNotFinite) << "any order";
  EXPECT_EQ(right.value("index"), "3");
  EXPECT_STREQ(right.what(), "[t] w holds NaN");

  const Error misspelt(ErrorKind::Value, ErrorCode::WeightNotFinite, {{"tensr", "w"}, {"value", "NaN"}, {"index", 3}},
                       "[t] w holds NaN");
  EXPECT_EQ(misspelt.code(), ErrorCode::Generic);
  EXPECT_TRUE(misspelt.values().empty());
  EXPECT_STREQ(misspelt.what(), "[t] w holds NaN") << "the English text stays";
  EXPECT_EQ(misspelt.kind(), ErrorKind::Value);

  const Error one_short(ErrorKind::Value, ErrorCode::WeightNotFinite, {{"tensor", "w"}, {"value", "NaN"}}, "x");
  EXPECT_EQ(one_short.code(), ErrorCode::Generic);
  const Error twice(ErrorKind::Value, ErrorCode::WeightNotFinite, {{"tensor", "w"}, {"tensor", "w"}, {"index", 1}},
                    "x");
  EXPECT_EQ(twice.code(), ErrorCode::Generic);
}

TEST(ErrorCodes, MoreContextKeepsTheCodeAndValues) {
  const Error cause(ErrorKind::Config, ErrorCode::ConfigKeyMissing, {{"key", "d_model"}}, "[config] missing key");
  const Error said(cause, "[load_model] 'a.safetensors': [config] missing key");
  EXPECT_EQ(said.kind(), ErrorKind::Config);
  EXPECT_EQ(said.code(), ErrorCode::ConfigKeyMissing);
  EXPECT_EQ(said.value("key"), "d_model");
  EXPECT_STREQ(said.what(), "[load_model] 'a.safetensors': [config] missing key");
}

// [SECTION] real failures

TEST(ErrorCodes, ATruncatedSafetensorsFileSaysSo) {
  const BrokenFiles files;
  const std::string stub = files.cut("stub.safetensors", 5);
  Error e = error_of([&] { load_model(stub); });
  EXPECT_EQ(e.kind(), ErrorKind::Format) << e.what();
  EXPECT_EQ(e.code(), ErrorCode::SafetensorsTruncated) << e.what();
  EXPECT_EQ(values_of(e), (std::map<std::string, std::string>{{"path", stub}, {"size", "5"}}));

  const std::string short_data = files.cut("short.safetensors", fs::file_size(kTiny) - 100);
  e = error_of([&] { load_model(short_data); });
  EXPECT_EQ(e.code(), ErrorCode::SafetensorsDataPastEnd) << e.what();
  EXPECT_EQ(e.value("path"), short_data);
  const std::string tensor(e.value("tensor"));
  EXPECT_FALSE(tensor.empty());
  EXPECT_NE(std::string(e.what()).find("tensor '" + tensor + "'"), std::string::npos)
      << "the tensor the message names: " << e.what();
}

TEST(ErrorCodes, AWrongShapeNamesTheTensorAndBothShapes) {
  const BrokenFiles files;
  const std::string path = files.rewrite("shape.safetensors", [](const std::string& name, std::vector<int64_t>& shape,
                                                                  std::vector<float>&) {
    if (name == "transformer.encoder.layers.0.linear1.weight") std::swap(shape[0], shape[1]);
  });
  const Error e = error_of([&] { load_model(path); });
  EXPECT_EQ(e.kind(), ErrorKind::Shape) << e.what();
  EXPECT_EQ(e.code(), ErrorCode::TensorWrongShape) << e.what();
  EXPECT_EQ(values_of(e), (std::map<std::string, std::string>{{"tensor", "transformer.encoder.layers.0.linear1.weight"},
                                                              {"expected", "(32, 16)"},
                                                              {"found", "(16, 32)"}}));
  EXPECT_NE(std::string(e.what()).find("expected (32, 16), found (16, 32)"), std::string::npos) << "the CLI's text";
}

TEST(ErrorCodes, ANaNWeightNamesTheTensorAndItsIndex) {
  const BrokenFiles files;
  const std::string path = files.rewrite("nan.safetensors", [](const std::string& name, std::vector<int64_t>&,
                                                                std::vector<float>& v) {
    if (name == "transformer.encoder.layers.1.linear1.weight") v[5] = std::nanf("");
  });
  const Error e = error_of([&] { load_model(path); });
  EXPECT_EQ(e.kind(), ErrorKind::Value) << e.what();
  EXPECT_EQ(e.code(), ErrorCode::WeightNotFinite) << e.what();
  EXPECT_EQ(values_of(e), (std::map<std::string, std::string>{
                              {"tensor", "transformer.encoder.layers.1.linear1.weight"}, {"value", "NaN"}, {"index", "5"}}));
}

TEST(ErrorCodes, AFifoOrAFolderIsNotARegularFile) {
  const BrokenFiles files;
  const std::string fifo = (files.dir / "fifo.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  Error e = error_of([&] { open_model(fifo); });  // the app's way in: a model file or a Marian folder
  EXPECT_EQ(e.kind(), ErrorKind::File) << e.what();
  EXPECT_EQ(e.code(), ErrorCode::FileNotRegular) << e.what();
  EXPECT_EQ(e.value("path"), fifo);
  EXPECT_NE(e.value("file_kind").find("FIFO"), std::string::npos) << e.value("file_kind");

  e = error_of([&] { load_model(files.dir.string()); });
  EXPECT_EQ(e.code(), ErrorCode::FileNotRegular) << e.what();
  EXPECT_EQ(e.value("path"), files.dir.string());

  const std::string nowhere = (files.dir / "no-such.safetensors").string();
  e = error_of([&] { load_model(nowhere); });
  EXPECT_EQ(e.code(), ErrorCode::FileCannotOpen) << e.what();
  EXPECT_EQ(e.value("path"), nowhere);
  EXPECT_FALSE(e.value("reason").empty());
}

TEST(ErrorCodes, AModelOfAnotherShapeAndTooLongASentence) {
  const Model gpt = load_model(kGpt);
  Error e = error_of([&] { require_encoder_decoder(gpt.config, "the app's views"); });
  EXPECT_EQ(e.code(), ErrorCode::ModelShapeUnsupported) << e.what();
  EXPECT_EQ(e.value("shape"), "decoder_only");

  const Model tiny = load_model(kTiny);
  const std::string sentence(kMaxSentenceBytes + 1, 'a');
  e = error_of([&] { encode_text(tiny, sentence, Side::Source); });
  EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
  EXPECT_EQ(e.code(), ErrorCode::SentenceTooLong) << e.what();
  EXPECT_EQ(values_of(e), (std::map<std::string, std::string>{{"bytes", std::to_string(kMaxSentenceBytes + 1)},
                                                              {"limit", std::to_string(kMaxSentenceBytes)}}));
}

TEST(ErrorCodes, NoGpuSaysWhy) {
  if (backend_info().cuda_available) GTEST_SKIP() << "a GPU is usable here";
  const Model tiny = load_model(kTiny);
  const Error e = error_of([&] { CudaModel gpu(tiny.config, tiny.weights); });
  EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
  EXPECT_EQ(e.code(), backend_info().cuda_built ? ErrorCode::CudaNoDevice : ErrorCode::CudaNotBuilt) << e.what();
}

}  // namespace
}  // namespace sf
