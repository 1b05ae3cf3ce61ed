// Export: the file formats (NPY 1.0, CSV), the atomic no-clobber write, default names, and the app exporting
// the heatmap a panel shows (headless ImGui on a real model): the files hold exactly the values on screen.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "export_readers.h"
#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/export.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/heatmap.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using test::parse_csv;
using test::parse_npy;
using test::read_bytes;
using test::same_bits;

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

// A fresh, empty folder for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(STEPFORMER_TEST_OUTPUT_DIR) / "export" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(ExportFormat, NpyIsVersion1LittleEndianFloat32InRowMajorOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {1.5f, -2.0f, nan, 0.1f, 1e-30f, 3.0f};  // (2, 3)
  const std::string bytes = npy_bytes(values.data(), 2, 3);
  const test::Npy npy = parse_npy(bytes);
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  EXPECT_EQ(npy.header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << npy.header;
  EXPECT_EQ(bytes.size(), 128u + 6 * 4);  // magic, version, length and dict padded to a multiple of 64 bytes
  EXPECT_EQ(npy.rows, 2);
  EXPECT_EQ(npy.cols, 3);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_TRUE(same_bits(npy.values[i], values[i])) << i;
  // The first value's bytes as a little-endian float32: 1.5f is 0x3FC00000.
  EXPECT_EQ(bytes.substr(128, 4), std::string("\x00\x00\xC0\x3F", 4));
  // Byte for byte what NumPy 1.24 writes for the same array (np.save, committed as a fixture).
  EXPECT_EQ(bytes, read_bytes(std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/export/numpy_2x3_float32.npy"));
}

TEST(ExportFormat, NpyHeaderStaysAlignedForLargeShapes) {
  const std::vector<float> values(12345 * 2, 0.25f);
  const test::Npy npy = parse_npy(npy_bytes(values.data(), 12345, 2));
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  EXPECT_EQ(npy.rows, 12345);
  EXPECT_EQ(npy.values.back(), 0.25f);
}

TEST(ExportFormat, CsvNamesTheTensorQuotesLabelsAndKeepsEveryFloatExact) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {0.1f, 1.0f / 3.0f, -7.25e-12f, nan, 123456.789f, 0.0f};
  TensorView t;
  t.name = "attention";
  t.description = "decoder, layer 1, head 0";
  t.rows = 2;
  t.cols = 3;
  t.values = values.data();
  t.row_labels = {",", "say \"hi\""};
  t.col_labels = {"a", "b,c", "d"};
  const std::string text = csv_text(t);
  const test::Csv csv = parse_csv(text);
  EXPECT_EQ(csv.comment, "# attention (decoder, layer 1, head 0), shape (2, 3), float32; nan = blocked by the mask");
  EXPECT_EQ(csv.col_labels, (std::vector<std::string>{"a", "b,c", "d"}));
  EXPECT_EQ(csv.row_labels, (std::vector<std::string>{",", "say \"hi\""}));
  EXPECT_NE(text.find("\"say \"\"hi\"\"\""), std::string::npos) << text;
  ASSERT_EQ(csv.values.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_TRUE(same_bits(csv.values[i], values[i])) << i << ": " << csv.values[i];

  t.row_labels.clear();  // no labels: rows and columns are numbered
  t.col_labels.clear();
  const test::Csv numbered = parse_csv(csv_text(t));
  EXPECT_EQ(numbered.col_labels, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(numbered.row_labels, (std::vector<std::string>{"0", "1"}));
}

// How the export popup writes: replace only when the user answered Replace (io/user_files.h).
std::string write_export(const std::string& path, const std::string& bytes, bool replace) {
  return write_user_file(path, bytes, WriteRules{replace, {}, {}});
}

TEST(AtomicWrite, NeverReplacesAnExistingFileUnlessAsked) {
  const fs::path dir = scratch("no_clobber");
  const fs::path path = dir / "tensor.npy";
  write_text(path, "the student's own notes");
  const std::string error = write_export(path.string(), "new bytes", false);
  EXPECT_NE(error.find("exists: not replaced"), std::string::npos) << error;
  EXPECT_EQ(read_bytes(path.string()), "the student's own notes");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"tensor.npy"})) << "a temporary file was left behind";

  EXPECT_EQ(write_export(path.string(), "new bytes", true), "");  // the user answered Replace
  EXPECT_EQ(read_bytes(path.string()), "new bytes");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"tensor.npy"}));

  EXPECT_EQ(write_export((dir / "fresh.csv").string(), "a,b\n", false), "");
  EXPECT_EQ(read_bytes((dir / "fresh.csv").string()), "a,b\n");
}

TEST(AtomicWrite, FailuresAreNamedAndLeaveNothingBehind) {
  const fs::path dir = scratch("failures");
  std::string error = write_export("/nonexistent-stepformer-dir/x.npy", "x", false);
  EXPECT_NE(error.find("the folder '/nonexistent-stepformer-dir' does not exist"), std::string::npos) << error;
  write_text(dir / "plain_file", "x");  // a file where a folder should be (fails even for root)
  error = write_export((dir / "plain_file" / "x.npy").string(), "x", true);
  EXPECT_NE(error.find("plain_file' is not a folder"), std::string::npos) << error;
  error = write_export(dir.string(), "x", true);
  EXPECT_NE(error.find("is a folder, not a regular file"), std::string::npos) << error;
  EXPECT_NE(write_export("", "x", false), "");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"plain_file"}));
}

TEST(ExportNames, DefaultIsTheFirstFreeNumber) {
  const fs::path dir = scratch("names");
  EXPECT_EQ(default_export_path(dir.string(), "encoder-attention", ExportKind::WindowPng),
            (dir / "stepformer-encoder-attention-1.png").string());
  write_text(dir / "stepformer-encoder-attention-1.png", "x");
  write_text(dir / "stepformer-encoder-attention-2.png", "x");
  EXPECT_EQ(default_export_path(dir.string(), "encoder-attention", ExportKind::WindowPng),
            (dir / "stepformer-encoder-attention-3.png").string());
  EXPECT_EQ(default_export_path(dir.string(), "embedding", ExportKind::Npy, "encoder input"),
            (dir / "stepformer-embedding-encoder_input-1.npy").string());
  EXPECT_EQ(default_export_path("", "output", ExportKind::Csv, "x").find('/'), std::string::npos);
}

// The app, headless (no window, no GL), exporting what its panels draw.
class HeadlessExport : public ::testing::Test {
 protected:
  void start(const std::string& stage, const std::string& head) {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = kModel;
    options.sentence = "Ein Mann mit einer Frau.";
    options.stage = stage;
    options.attention = head;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();  // the model loads in the background
    frame();
    ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  void frame() {
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
  }
  // Exports on the next frame and returns what the app reported.
  App::Message export_now(ExportKind kind, const fs::path& path, bool replace = false) {
    ExportRequest r;
    r.kind = kind;
    r.path = path.string();
    r.replace = replace;
    app_->request_export(r);
    std::vector<App::Message> messages;
    for (int i = 0; i < 3 && messages.empty(); ++i) {  // a PNG waits one frame with the pointer away
      frame();
      app_->after_render();
      messages = app_->take_messages();
    }
    return messages.empty() ? App::Message{false, "no message"} : messages.back();
  }
  std::unique_ptr<App> app_;
};

TEST_F(HeadlessExport, NpyAndCsvHoldTheAttentionHeatmapOnScreen) {
  start("encoder-attention", "enc.2.3");
  const fs::path dir = scratch("attention");
  const App::Message npy_message = export_now(ExportKind::Npy, dir / "a.npy");
  EXPECT_TRUE(npy_message.ok) << npy_message.text;
  EXPECT_EQ(npy_message.text, "saved " + (dir / "a.npy").string());
  const App::Message csv_message = export_now(ExportKind::Csv, dir / "a.csv");
  EXPECT_TRUE(csv_message.ok) << csv_message.text;

  const Heatmap* heatmap = testing::drawn_heatmap("attention");
  ASSERT_NE(heatmap, nullptr);
  const test::Npy npy = parse_npy(read_bytes((dir / "a.npy").string()));
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  ASSERT_EQ(npy.rows, heatmap->rows());
  ASSERT_EQ(npy.cols, heatmap->cols());
  // The heatmap's values, and the model's own probabilities for encoder layer 1, head 2.
  const Mat& probs = app_->state().trace().encoder[1].self_attn.probs[2];
  ASSERT_EQ(npy.rows, static_cast<int>(probs.rows()));
  for (int r = 0; r < npy.rows; ++r) {
    float row_sum = 0;
    for (int c = 0; c < npy.cols; ++c) {
      const float v = npy.values[static_cast<size_t>(r) * npy.cols + c];
      EXPECT_TRUE(same_bits(v, heatmap->value(r, c))) << r << "," << c;
      EXPECT_TRUE(same_bits(v, probs(r, c))) << r << "," << c;
      row_sum += v;
    }
    EXPECT_NEAR(row_sum, 1.0f, 1e-5f) << "row " << r << " of a softmax";
  }

  const test::Csv csv = parse_csv(read_bytes((dir / "a.csv").string()));
  EXPECT_EQ(csv.comment.rfind("# attention (Multi-head self-attention, layer 2, head 3), shape (" +
                              std::to_string(npy.rows) + ", " + std::to_string(npy.cols) + "), float32", 0), 0u)
      << csv.comment;
  EXPECT_EQ(csv.row_labels, app_->state().source_labels());
  EXPECT_EQ(csv.col_labels, app_->state().source_labels());
  ASSERT_EQ(csv.values.size(), npy.values.size());
  for (size_t i = 0; i < csv.values.size(); ++i) EXPECT_TRUE(same_bits(csv.values[i], npy.values[i])) << i;
}

TEST_F(HeadlessExport, CrossAttentionRowsAreTheDecoderAndColumnsTheSource) {
  // A map that is not square: its rows (queries) are the decoder's input, its columns (keys) the source.
  start("cross-attention", "cross.2.4");
  const fs::path dir = scratch("cross");
  ASSERT_TRUE(export_now(ExportKind::Csv, dir / "c.csv").ok);
  const test::Csv csv = parse_csv(read_bytes((dir / "c.csv").string()));
  const Mat& probs = app_->state().trace().decoder[1].cross_attn.probs[3];  // (T, S)
  ASSERT_NE(probs.rows(), probs.cols()) << "pick a sentence whose source and translation differ in length";
  EXPECT_EQ(csv.row_labels, app_->state().decoder_row_labels()) << "rows: the position's input -> what it predicts";
  EXPECT_EQ(csv.col_labels, app_->state().source_labels());
  ASSERT_EQ(csv.values.size(), static_cast<size_t>(probs.size()));
  for (Eigen::Index r = 0; r < probs.rows(); ++r)
    for (Eigen::Index c = 0; c < probs.cols(); ++c)
      EXPECT_TRUE(same_bits(csv.values[static_cast<size_t>(r * probs.cols() + c)], probs(r, c))) << r << "," << c;
}

TEST_F(HeadlessExport, MaskedCellsAreNaNInBothFormats) {
  start("decoder-attention", "dec.1.2");
  const fs::path dir = scratch("masked");
  ASSERT_TRUE(export_now(ExportKind::Npy, dir / "m.npy").ok);
  ASSERT_TRUE(export_now(ExportKind::Csv, dir / "m.csv").ok);
  const test::Npy npy = parse_npy(read_bytes((dir / "m.npy").string()));
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  const int t = npy.rows;
  ASSERT_EQ(npy.cols, t);
  for (int r = 0; r < t; ++r)
    for (int c = 0; c < t; ++c)  // the causal mask blocks every later position
      EXPECT_EQ(std::isnan(npy.values[static_cast<size_t>(r) * t + c]), c > r) << r << "," << c;
  const test::Csv csv = parse_csv(read_bytes((dir / "m.csv").string()));
  EXPECT_NE(csv.comment.find("nan = blocked by the mask"), std::string::npos) << csv.comment;
  for (size_t i = 0; i < csv.values.size(); ++i) EXPECT_TRUE(same_bits(csv.values[i], npy.values[i])) << i;
}

TEST_F(HeadlessExport, RefusesToReplaceAFileUnlessTheUserSaidReplace) {
  start("embedding", "");
  const fs::path dir = scratch("refuse");
  const fs::path path = dir / "embedding.npy";
  write_text(path, "keep me");
  const App::Message refused = export_now(ExportKind::Npy, path);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.text.find("exists: not replaced"), std::string::npos) << refused.text;
  EXPECT_EQ(read_bytes(path.string()), "keep me");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"embedding.npy"}));

  const App::Message replaced = export_now(ExportKind::Npy, path, true);
  EXPECT_TRUE(replaced.ok) << replaced.text;
  const test::Npy npy = parse_npy(read_bytes(path.string()));
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  const Heatmap* main = testing::drawn_heatmap("embedding");  // the embedding panel's first heatmap: its main tensor
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(npy.rows, main->rows());
  EXPECT_EQ(npy.cols, main->cols());
  EXPECT_TRUE(same_bits(npy.values[5], main->value(0, 5)));
}

TEST_F(HeadlessExport, ProblemsAreReportedAndTheAppGoesOn) {
  start("tokens", "");
  const fs::path dir = scratch("problems");
  const App::Message no_tensor = export_now(ExportKind::Csv, dir / "t.csv");
  EXPECT_FALSE(no_tensor.ok);
  EXPECT_NE(no_tensor.text.find("the tokens stage shows no tensor"), std::string::npos) << no_tensor.text;
  ASSERT_TRUE(app_->go_to("positional"));
  frame();
  const App::Message unwritable = export_now(ExportKind::Npy, "/nonexistent-stepformer-dir/p.npy");
  EXPECT_FALSE(unwritable.ok);
  EXPECT_NE(unwritable.text.find("does not exist"), std::string::npos) << unwritable.text;
  const App::Message no_gl = export_now(ExportKind::WindowPng, dir / "w.png");  // headless: nothing to read
  EXPECT_FALSE(no_gl.ok);
  EXPECT_NE(no_gl.text.find("no OpenGL context"), std::string::npos) << no_gl.text;
  EXPECT_TRUE(files_in(dir).empty());
  frame();
  EXPECT_TRUE(app_->state().ready());
  EXPECT_TRUE(export_now(ExportKind::Csv, dir / "p.csv").ok);  // and the next export works
}

}  // namespace
}  // namespace sf::gui
