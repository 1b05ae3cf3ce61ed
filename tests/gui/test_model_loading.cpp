// Loading model files off the frame thread: the loader on good and bad files (each error names its problem),
// the app swapping a model in between frames while the old one stays for any failure (a bad file, or a
// sentence the new model cannot read), files dropped onto the window, a model of other dimensions in every
// stage, and the model-info rows checked against the fixture's expected values.
#include <gtest/gtest.h>

#include <tuple>
#include <unistd.h>

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // the open popups, to check the dialog is a modal

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/model_loader.h"
#include "gui/panels/model_info_panel.h"
#include "gui/render/heatmap.h"
#include "io/safetensors.h"
#include "../unit/model_file_edit.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/";
const std::string kTiny = kFixtures + "pytorch_tutorial_tiny.safetensors";
const std::string kSeq2Seq = kFixtures + "seq2seq_tutorial_tiny.safetensors";

// [SECTION] broken copies of a good file

struct BadFiles {
  fs::path dir;
  std::string truncated, not_safetensors, nan_weight, wrong_shape, missing;

  BadFiles() {
    dir = fs::temp_directory_path() / ("stepformer-loading-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    truncated = (dir / "truncated.safetensors").string();
    fs::copy_file(kTiny, truncated, fs::copy_options::overwrite_existing);
    fs::resize_file(truncated, fs::file_size(truncated) - 100);
    not_safetensors = (dir / "notes.safetensors").string();
    std::ofstream(not_safetensors) << "These are my lecture notes, not a model.\n";
    nan_weight = rewrite("nan.safetensors", [](const std::string& name, std::vector<int64_t>&, std::vector<float>& v) {
      if (name == "transformer.encoder.layers.1.linear1.weight") v[5] = std::nanf("");
    });
    wrong_shape = rewrite("shape.safetensors", [](const std::string& name, std::vector<int64_t>& shape, std::vector<float>&) {
      if (name == "transformer.encoder.layers.0.linear1.weight") std::swap(shape[0], shape[1]);
    });
    missing = (dir / "no-such-file.safetensors").string();
  }
  ~BadFiles() { fs::remove_all(dir); }

  using Edit = sf::testing::TensorEdit;
  std::string rewrite(const std::string& name, const Edit& edit) const {
    return sf::testing::rewrite_model_file(kTiny, (dir / name).string(), edit);
  }
};

// [SECTION] the loader on its own

TEST(ModelLoader, LoadsAGoodFileOnAWorkerThread) {
  ModelLoader loader;
  EXPECT_FALSE(loader.busy());
  loader.start(kTiny);
  EXPECT_TRUE(loader.busy()) << "busy until the frame thread takes the result";
  EXPECT_EQ(loader.path(), kTiny);
  std::optional<LoadedModel> r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(r = loader.poll()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // what the frame loop does, without frames
  ASSERT_TRUE(r);
  EXPECT_FALSE(loader.busy());
  ASSERT_TRUE(r->model) << r->error;
  EXPECT_EQ(r->error, "");
  EXPECT_EQ(r->path, kTiny);
  EXPECT_EQ(r->model->config.d_model, 16);
  EXPECT_EQ(r->model->config.n_heads, 4);
  EXPECT_EQ(r->model->parameter_count(), 12458);
}

TEST(ModelLoader, EachBadFileNamesItsProblem) {
  const BadFiles bad;
  struct Case {
    std::string path;
    ErrorKind kind;
    std::string needle;
  };
  const Case cases[] = {
      {bad.truncated, ErrorKind::Format, "the file is truncated"},
      {bad.not_safetensors, ErrorKind::Format, "notes.safetensors"},
      {bad.nan_weight, ErrorKind::Value, "tensor 'transformer.encoder.layers.1.linear1.weight' holds NaN"},
      {bad.wrong_shape, ErrorKind::Shape, "expected (32, 16), found (16, 32)"},
      {bad.missing, ErrorKind::File, "cannot open"},
  };
  for (const Case& c : cases) {
    ModelLoader loader;
    loader.start(c.path);
    const std::optional<LoadedModel> r = loader.wait();
    ASSERT_TRUE(r) << c.path;
    EXPECT_FALSE(r->model) << c.path;
    ASSERT_TRUE(r->error_kind) << c.path;
    EXPECT_EQ(*r->error_kind, c.kind) << r->error;
    EXPECT_NE(r->error.find(c.needle), std::string::npos) << r->error;
  }
}

TEST(ModelLoader, ANewerRequestWinsOverOneStillWaiting) {
  ModelLoader loader;
  loader.start(kTiny);
  loader.start(kFixtures + "pytorch_tutorial_tiny_norm_first.safetensors");  // waits for the first
  loader.start(kSeq2Seq);                                                    // replaces the one waiting
  const std::optional<LoadedModel> r = loader.wait();
  ASSERT_TRUE(r && r->model);
  EXPECT_EQ(r->path, kSeq2Seq);
  EXPECT_EQ(r->model->family, "seq2seq-tutorial");
  EXPECT_FALSE(loader.busy());
}

// [SECTION] the app, headless (ImGui without a window)

class AppLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::start_headless_imgui();
  }
  void TearDown() override {
    app_.reset();
    ImGui::DestroyContext();
  }
  void start(const std::string& model, const std::string& sentence = "Ein Mann mit einer Frau.") {
    AppOptions options;
    options.model_path = model;
    options.sentence = sentence;
    app_ = std::make_unique<App>(options, &settings_);
    app_->finish_loading();
  }
  void frame() {
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
  }
  // Frames until the background load is in (the UI keeps drawing meanwhile).
  int frames_until_loaded() {
    int frames = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (app_->loading() && std::chrono::steady_clock::now() < deadline) {
      frame();
      ++frames;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    frame();
    return frames;
  }
  SettingsStore settings_;  // in memory only
  std::unique_ptr<App> app_;
};

TEST_F(AppLoading, OpensAModelInTheBackgroundAndListsItAsRecent) {
  start(kTiny);
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  EXPECT_EQ(settings_.settings().recent_models, (std::vector<std::string>{kTiny}));
  ASSERT_TRUE(app_->open_model(kSeq2Seq));
  EXPECT_TRUE(app_->loading());
  frames_until_loaded();
  EXPECT_EQ(app_->state().model_path(), kSeq2Seq);
  EXPECT_EQ(app_->state().model()->family, "seq2seq-tutorial");
  EXPECT_TRUE(app_->state().ready());
  EXPECT_EQ(app_->last_load_error(), "");
  EXPECT_FALSE(app_->dialog().open());
  EXPECT_EQ(settings_.settings().recent_models, (std::vector<std::string>{kSeq2Seq, kTiny}));
  EXPECT_EQ(settings_.settings().last_model, kSeq2Seq);
}

TEST_F(AppLoading, ABadFileShowsTheDialogAndTheModelStays) {
  const BadFiles bad;
  start(kTiny);
  const std::shared_ptr<const Model> before = app_->state().model();
  const std::vector<int> translation = app_->state().translation();
  // Each file, what its problem says, and the hint that says what that kind of problem means.
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {bad.truncated, "the file is truncated", "it is damaged"},
      {bad.nan_weight, "holds NaN", "A weight is NaN or infinite"},
      {bad.wrong_shape, "expected (32, 16), found (16, 32)", "a shape that does not fit the configuration"},
      {bad.not_safetensors, "notes.safetensors", "This is not a Stepformer model file"},
  };
  for (const auto& [path, needle, kind_hint] : cases) {
    app_->open_model(path);
    frames_until_loaded();
    EXPECT_EQ(app_->state().model(), before) << path;
    EXPECT_EQ(app_->state().model_path(), kTiny);
    EXPECT_EQ(app_->state().translation(), translation);
    EXPECT_NE(app_->last_load_error().find(needle), std::string::npos) << app_->last_load_error();
    ASSERT_TRUE(app_->dialog().open());
    const DialogMessage& m = *app_->dialog().current();
    EXPECT_EQ(m.title, "Cannot open the model");
    EXPECT_EQ(m.file, path);
    EXPECT_NE(m.problem.find(needle), std::string::npos) << m.problem;
    EXPECT_NE(m.hint.find(kind_hint), std::string::npos) << path << ": " << m.hint;
    EXPECT_NE(m.hint.find("The current model, pytorch_tutorial_tiny.safetensors, stays loaded."), std::string::npos) << m.hint;
    // Drawn as a modal popup, its title in the window's name.
    const ImGuiContext& g = *ImGui::GetCurrentContext();
    ASSERT_EQ(g.OpenPopupStack.Size, 1);
    const ImGuiWindow* popup = g.OpenPopupStack[0].Window;
    ASSERT_TRUE(popup);
    EXPECT_TRUE(popup->Flags & ImGuiWindowFlags_Modal);
    EXPECT_EQ(std::string(popup->Name).rfind("Cannot open the model", 0), 0u) << popup->Name;
    app_->show("stage");  // what OK does
    frame();
    frame();
    EXPECT_FALSE(app_->dialog().open());
    EXPECT_EQ(ImGui::GetCurrentContext()->OpenPopupStack.Size, 0);
  }
  // Still usable: a new sentence translates with the model that stayed.
  EXPECT_TRUE(app_->set_sentence("Zwei Frauen."));
  EXPECT_EQ(settings_.settings().recent_models, (std::vector<std::string>{kTiny})) << "bad files are not listed";
}

TEST_F(AppLoading, ASentenceTheNewModelCannotReadKeepsTheOldModel) {
  // 70 words: the shipped model reads up to 256 positions, the tiny fixture 64.
  std::string sentence;
  for (int i = 0; i < 70; ++i) sentence += "Mann ";
  start(default_model_path(), sentence);
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  const auto before = app_->state().model();
  app_->open_model(kTiny);
  frames_until_loaded();
  EXPECT_EQ(app_->state().model(), before);
  EXPECT_EQ(app_->state().model_path(), default_model_path());
  EXPECT_NE(app_->last_load_error().find("kept the previous model"), std::string::npos) << app_->last_load_error();
  EXPECT_NE(app_->last_load_error().find("this model reads at most 64"), std::string::npos) << app_->last_load_error();
  ASSERT_TRUE(app_->dialog().open());
  EXPECT_NE(app_->dialog().current()->hint.find("The current sentence does not work with this model"), std::string::npos);
}

TEST_F(AppLoading, AFirstModelTooShortForTheSentenceOpensWithTheExample) {
  // No model to keep, and without one the sentence could not be changed: the model comes in with the example.
  std::string sentence;
  for (int i = 0; i < 70; ++i) sentence += "Mann ";
  start(kTiny, sentence);
  frame();
  EXPECT_EQ(app_->state().model_path(), kTiny);
  EXPECT_TRUE(app_->state().ready());
  EXPECT_EQ(app_->state().sentence(), kDefaultSentence);
  ASSERT_TRUE(app_->dialog().open());
  EXPECT_EQ(app_->dialog().current()->title, "The sentence does not fit this model");
  EXPECT_NE(app_->dialog().current()->problem.find("this model reads at most 64"), std::string::npos);
  EXPECT_EQ(settings_.settings().recent_models, (std::vector<std::string>{kTiny}));
}

TEST_F(AppLoading, ADroppedFileOpens) {
  start(kTiny);
  app_->open_dropped({kSeq2Seq, kTiny});  // several: the first
  frames_until_loaded();
  EXPECT_EQ(app_->state().model_path(), kSeq2Seq);
}

TEST_F(AppLoading, AFailedFirstModelFallsBackToTheShippedOne) {
  const BadFiles bad;
  AppOptions options;
  options.model_path = bad.truncated;  // the last session's model, damaged since
  options.fallback_model_path = kTiny;
  options.sentence = "Ein Mann.";
  app_ = std::make_unique<App>(options, &settings_);
  frames_until_loaded();  // the failure: dialog, then the fallback starts
  frames_until_loaded();
  EXPECT_EQ(app_->state().model_path(), kTiny);
  EXPECT_TRUE(app_->state().ready());
  ASSERT_TRUE(app_->dialog().open());
  EXPECT_NE(app_->dialog().current()->hint.find("Opening the shipped model instead."), std::string::npos);
}

TEST_F(AppLoading, ASmallerModelWorksInEveryStage) {
  // The shipped model (6 layers? more than the fixture's 2, and 8 heads), on its last layer and head; then
  // the fixture (d_model 16, 4 heads, 2+2 layers): every stage draws its maps within the new dimensions.
  start(default_model_path());
  const Config& big = app_->state().model()->config;
  ASSERT_GT(big.n_heads, 4);
  app_->select_head({AttentionKind::Cross, big.n_decoder_layers - 1, big.n_heads - 1});
  frame();
  app_->open_model(kTiny);
  frames_until_loaded();
  ASSERT_EQ(app_->state().model_path(), kTiny);
  const int s = static_cast<int>(app_->state().source_tokens().size());
  const int t = static_cast<int>(app_->state().trace().tgt.ids.size());
  for (const char* stage : {"tokens", "embedding", "positional", "encoder-qkv", "encoder-attention", "concat-heads",
                            "encoder-add-norm", "encoder-feed-forward", "decoder-attention", "cross-attention",
                            "decoder-add-norm", "decoder-feed-forward", "all-heads", "output"}) {
    ASSERT_TRUE(app_->go_to(stage));
    frame();
    frame();
    for (const auto& p : heatmap_placements()) {
      const bool keys_are_source = std::string(stage) != "decoder-attention";  // encoder self, cross
      if (p.name == "attention") {
        EXPECT_EQ(p.cols, keys_are_source ? s : t) << stage;
      }
      if (p.name == "embedding") {
        EXPECT_EQ(p.cols, 16) << stage;
      }
      if (p.name == "ffn_hidden") {
        EXPECT_EQ(p.cols, 32) << stage;
      }
    }
  }
  int heads = 0;
  ASSERT_TRUE(app_->go_to("all-heads"));
  frame();
  for (const auto& p : heatmap_placements()) heads += p.name.rfind("head_", 0) == 0;
  EXPECT_EQ(heads, 2 * 4);
}

TEST_F(AppLoading, ModelInfoViewFromTheScriptAndBack) {
  start(kTiny);
  EXPECT_TRUE(app_->show("model-info"));
  frame();
  EXPECT_TRUE(app_->showing_model_info());
  EXPECT_TRUE(heatmap_placements().empty()) << "the panel replaces the stage";
  EXPECT_TRUE(app_->go_to("embedding"));  // picking a stage leaves the panel
  EXPECT_FALSE(app_->showing_model_info());
  EXPECT_FALSE(app_->show("teleport"));
}

// [SECTION] what the model-info panel lists

TEST(ModelInfo, RowsMatchTheFixture) {
  std::ifstream in(kFixtures + "pytorch_tutorial_tiny.expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const Model model = load_model(kTiny);
  const ModelInfo info = describe_model(model, kTiny);
  EXPECT_EQ(info.parameters, expected["parameter_count"].get<int64_t>());
  EXPECT_EQ(info.config.size(), expected["config"].size()) << "every config key is listed";
  for (const auto& [key, value] : info.config) {
    ASSERT_TRUE(expected["config"].contains(key)) << key;
    const nlohmann::json& e = expected["config"][key];
    if (e.is_string()) EXPECT_EQ(value, e.get<std::string>()) << key;
    else if (e.is_number_float()) EXPECT_FLOAT_EQ(std::stof(value), e.get<float>()) << key;
    else EXPECT_EQ(value, e.dump()) << key;
    EXPECT_STRNE(config_key_meaning(key), "") << key << " has no explanation";
  }
  // The first words after the four special tokens, each from its own vocabulary (the fixture's two differ from
  // id 4 on: "ein" against "a").
  ASSERT_GE(info.src_samples.size(), 3u);
  ASSERT_EQ(info.src_samples.size(), info.tgt_samples.size());
  for (size_t i = 0; i < info.src_samples.size(); ++i) {
    EXPECT_EQ(info.src_samples[i], unescape_token(expected["src_vocab"][4 + i].get<std::string>())) << i;
    EXPECT_EQ(info.tgt_samples[i], unescape_token(expected["tgt_vocab"][4 + i].get<std::string>())) << i;
  }
  // Provenance: every stored key, nested objects flattened ("scores.bleu"), values as text.
  std::map<std::string, std::string> provenance(info.provenance.begin(), info.provenance.end());
  EXPECT_EQ(provenance["dataset"], expected["provenance"]["dataset"].get<std::string>());
  EXPECT_EQ(provenance["converted_from.converter"], "tools/convert_pytorch.py");
  EXPECT_EQ(provenance["scores.bleu"], "0");
  size_t leaves = 0;
  std::function<void(const nlohmann::json&)> count = [&](const nlohmann::json& j) {
    for (const auto& [k, v] : j.items()) {
      if (v.is_object() && !v.empty()) count(v);
      else ++leaves;
    }
  };
  count(model.provenance);
  EXPECT_EQ(info.provenance.size(), leaves);
  EXPECT_TRUE(info.provenance_tables.empty());
  EXPECT_EQ(with_thousands(12458), "12,458");
  EXPECT_EQ(with_thousands(3712512), "3,712,512");
  EXPECT_EQ(with_thousands(999), "999");
}

TEST(ModelInfo, ShippedModelProvenanceHasTheTrainingCommandScoresAndHistory) {
  const Model model = load_model(default_model_path());
  const ModelInfo info = describe_model(model, default_model_path());
  std::map<std::string, std::string> rows(info.provenance.begin(), info.provenance.end());
  EXPECT_EQ(rows["command"], model.provenance["command"].get<std::string>());
  EXPECT_NE(rows["command"].find("stepformer-cli train"), std::string::npos);
  EXPECT_EQ(rows["epochs_run"], model.provenance["epochs_run"].dump());
  char bleu[32];
  std::snprintf(bleu, sizeof(bleu), "%g", model.provenance["test_bleu_greedy"].get<double>());
  EXPECT_EQ(rows["test_bleu_greedy"], bleu);
  // The per-epoch history is a table: one row per epoch, its columns the record's keys.
  ASSERT_EQ(info.provenance_tables.size(), 1u);
  const ProvenanceTable& history = info.provenance_tables[0];
  EXPECT_EQ(history.name, "history");
  EXPECT_EQ(history.rows.size(), model.provenance["history"].size());
  const auto epoch = std::find(history.columns.begin(), history.columns.end(), "epoch") - history.columns.begin();
  ASSERT_LT(static_cast<size_t>(epoch), history.columns.size());
  EXPECT_EQ(history.rows.front()[static_cast<size_t>(epoch)], "1");
  EXPECT_EQ(rows.count("history"), 0u);
  EXPECT_EQ(info.parameters, model.parameter_count());
  EXPECT_GT(info.parameters, 1000000);
}

}  // namespace
}  // namespace sf::gui
