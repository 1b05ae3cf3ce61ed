// A core error in the app's words (gui/app_state.h error_text): every code of util/error_codes.inc has its entry
// error_<id> in the string table with exactly the code's value names as placeholders, an error of the generic
// code keeps its kind's sentence with the core's English text, and real failures read through the app's loader
// (a truncated file, a wrong shape, a NaN weight, a FIFO) come out with their values and no "{placeholder}".
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "gui/app_state.h"
#include "gui/model_loader.h"
#include "gui/text/text.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "../unit/model_file_edit.h"

namespace sf {
// gtest prints a code by its id ("tensor_wrong_shape"), not as a byte.
void PrintTo(ErrorCode code, std::ostream* os) { *os << error_code_id(code); }
}  // namespace sf

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

TEST(ErrorText, EveryCodeHasAnEntryWithExactlyItsValues) {
  for (size_t i = 1; i < kErrorCodeCount; ++i) {  // 0: Generic, worded by its kind
    const ErrorCode code = static_cast<ErrorCode>(i);
    SCOPED_TRACE(std::string(error_code_id(code)));
    const std::optional<T> entry = error_code_entry(code);
    ASSERT_TRUE(entry);
    EXPECT_EQ(text_id_name(*entry), "error_" + std::string(error_code_id(code)));
    const std::span<const std::string_view> names = error_value_names(code);
    EXPECT_TRUE(text_arguments_match(*entry, names))
        << "the entry '" << english_text(*entry) << "' and the code's values differ";
  }
  EXPECT_FALSE(error_code_entry(ErrorCode::Generic));
}

TEST(ErrorText, AGenericErrorKeepsItsKindAndTheCoreText) {
  const Error e(ErrorKind::Input, "[parse_head_ref] 'x': needs KIND.L.H");
  EXPECT_EQ(error_text(e), error_text(ErrorKind::Input, e.what()));
  EXPECT_NE(error_text(e).find("[parse_head_ref] 'x'"), std::string::npos) << error_text(e);
}

// The text the app shows for the model file at `path`, read as the app reads it (gui/model_loader.h), and the
// error's code.
struct Shown {
  ErrorCode code = ErrorCode::Generic;
  std::string text;
};
Shown shown_for(const std::string& path) {
  const LoadedModel r = read_model_file(path, nullptr);
  EXPECT_FALSE(r.model) << path;
  if (!r.core_error) {
    ADD_FAILURE() << path << ": no core error: " << r.error;
    return {};
  }
  return {r.core_error->code(), error_text(*r.core_error)};
}

void expect_worded(const Shown& s, ErrorCode code, const std::vector<std::string>& needles) {
  SCOPED_TRACE(std::string(error_code_id(code)));
  EXPECT_EQ(s.code, code) << s.text;
  for (const std::string& needle : needles) EXPECT_NE(s.text.find(needle), std::string::npos) << s.text;
  EXPECT_EQ(s.text.find('{'), std::string::npos) << "a placeholder left: " << s.text;
  EXPECT_EQ(s.text.find("[load_model]"), std::string::npos) << "the table's words, not the core's: " << s.text;
}

TEST(ErrorText, RealFailuresAreWordedWithTheirValues) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer-error-text-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  reset_text_argument_errors();
  using Edit = sf::testing::TensorEdit;
  auto rewrite = [&](const std::string& name, const Edit& edit) {
    return sf::testing::rewrite_model_file(kTiny, (dir / name).string(), edit);
  };

  const std::string stub = (dir / "stub.safetensors").string();
  fs::copy_file(kTiny, stub);
  fs::resize_file(stub, 5);
  expect_worded(shown_for(stub), ErrorCode::SafetensorsTruncated, {"'" + stub + "'", "5 bytes"});

  const std::string shape = rewrite("shape.safetensors", [](const std::string& name, std::vector<int64_t>& s,
                                                             std::vector<float>&) {
    if (name == "transformer.encoder.layers.0.linear1.weight") std::swap(s[0], s[1]);
  });
  expect_worded(shown_for(shape), ErrorCode::TensorWrongShape,
                {"'transformer.encoder.layers.0.linear1.weight'", "expected (32, 16), found (16, 32)"});

  const std::string nan = rewrite("nan.safetensors", [](const std::string& name, std::vector<int64_t>&,
                                                         std::vector<float>& v) {
    if (name == "transformer.encoder.layers.1.linear1.weight") v[5] = std::nanf("");
  });
  expect_worded(shown_for(nan), ErrorCode::WeightNotFinite,
                {"'transformer.encoder.layers.1.linear1.weight'", "NaN", "index 5"});

  const std::string fifo = (dir / "fifo.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  expect_worded(shown_for(fifo), ErrorCode::FileNotRegular, {"'" + fifo + "'", "FIFO", "not a regular file"});

  EXPECT_EQ(text_argument_errors(), 0);
  fs::remove_all(dir);
}

// AppState's own boundary (load_model, the sentence setters) words the error the same way.
TEST(ErrorText, TheAppStateShowsTheWordedError) {
  AppState state;
  EXPECT_FALSE(state.load_model("/no/such/model.safetensors"));
  EXPECT_NE(state.error().find("Cannot open '/no/such/model.safetensors'"), std::string::npos) << state.error();
  EXPECT_EQ(state.error().find('{'), std::string::npos) << state.error();
}

}  // namespace
}  // namespace sf::gui
