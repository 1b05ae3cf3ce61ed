// Nothing on screen may mislead: the screens a lecturer found false in version 0.1, each checked where the app
// says it. The output stage's bars are the distribution the token was chosen from (the causal mask off
// included); a hovered cell marks one query row and one key column in every view; the languages are the
// model's; a key and the label it shows agree on a head's number; probabilities too small for three decimals
// keep two significant digits and the rest of the vocabulary's mass; teacher forcing shows the cross-entropy
// training lowers; the formulas use the paper's symbols; Model info sets the model beside the paper's; the
// all-heads grid names its rows and columns; the Training stage without Multi30k says where it looked.
//
// Headless (Dear ImGui without a window: the app's own frame, its recorded items) where the test needs the
// app's state; under xvfb-run -a with the layout dump where it needs a real screen.
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "util/paths.h"
#include "gui/app.h"
#include "gui/render/item_placements.h"
#include "gui/widgets.h"
#include "headless_imgui.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFrenchModel = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/fr-en.safetensors";

// The items a frame recorded under `name`.
std::vector<ItemPlacement> items(const std::string& name) {
  std::vector<ItemPlacement> out;
  for (const ItemPlacement& item : item_placements())
    if (item.name == name) out.push_back(item);
  return out;
}

// -log softmax(logits)[id] in double, the log-sum-exp taken about the row's largest logit: computed here from
// the trace's logits, apart from the panels' own arithmetic.
double cross_entropy(const RowVec& logits, int id) {
  const double top = logits.maxCoeff();
  double sum = 0;
  for (Eigen::Index j = 0; j < logits.size(); ++j) sum += std::exp(static_cast<double>(logits(j)) - top);
  return -(static_cast<double>(logits(id)) - top - std::log(sum));
}

class HeadlessApp : public ::testing::Test {
 protected:
  void start(const std::string& model = shipped_model_path("de-en")) {  // (the word model: its words are named)
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = model;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
    ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  void frames(int n = 3, int key = -1) {
    for (int i = 0; i < n; ++i) {
      testing::headless_frame(*app_, i == 0 ? key : -1);
      app_->mutable_state().finish_background();
    }
  }
  // The whole translation decoded (a full run), as Run does.
  void run_to_end() {
    AppState& state = app_->mutable_state();
    state.finish_background();
    if (!state.decoding_finished()) {
      ASSERT_TRUE(state.run_to_end()) << state.error();
    }
    state.finish_background();
    ASSERT_TRUE(state.decoding_finished());
  }
  std::unique_ptr<App> app_;
};

// [SECTION] the output stage

// Version 0.1: with the causal mask off and a full run, position 1 read "a, predicts man" with "man 0.90", while
// the bars under "the distribution it was chosen from" showed street 0.806 and road 0.100, the last pass over
// the finished translation, whose row 1 reads the words after it.
TEST_F(HeadlessApp, TheOutputBarsAreTheDistributionTheTokenWasChosenFromWithTheCausalMaskOff) {
  start();
  Interventions off = app_->state().interventions();
  off.causal_mask = false;
  ASSERT_TRUE(app_->set_interventions(off));
  run_to_end();
  const std::vector<int> translation = app_->state().translation();
  ASSERT_GE(translation.size(), 3u);
  const int man = translation[1];
  ASSERT_EQ(app_->state().target_token(man), "man");

  // The independent reference: the same model and interventions stepped once from the start, its last row
  // the distribution the second token was chosen from (nothing after it exists yet).
  AppState stepped;
  ASSERT_TRUE(stepped.load_model(shipped_model_path("de-en"))) << stepped.error();
  ASSERT_TRUE(stepped.set_sentence(kDefaultSentence));
  ASSERT_TRUE(stepped.set_interventions(off));
  ASSERT_TRUE(stepped.restart());
  ASSERT_TRUE(stepped.step(1));
  stepped.finish_background();
  ASSERT_EQ(stepped.translation().size(), 1u);
  ASSERT_EQ(stepped.trace().logits.rows(), 2);
  const double p_man = std::exp(-cross_entropy(stepped.trace().logits.row(1), man));
  EXPECT_NEAR(p_man, 0.896, 0.01) << "the figure the issue measured by stepping";
  // ... and the last full pass's row 1, which reads the words after it, says something else.
  const double p_man_last_pass = std::exp(-cross_entropy(app_->state().trace().logits.row(1), man));
  ASSERT_GT(std::abs(p_man - p_man_last_pass), 0.1) << "the case the issue reported no longer differs";

  ASSERT_TRUE(app_->go_to("output"));
  app_->set_output_position(1);
  frames();
  const std::vector<ItemPlacement> chosen = items("output_bar.chosen");
  ASSERT_EQ(chosen.size(), 1u) << "the chosen token is among the bars";
  EXPECT_EQ(chosen[0].text, "man");
  EXPECT_EQ(chosen[0].index, 0) << "the likeliest bar, as it was when chosen";
  EXPECT_NEAR(chosen[0].value, p_man, 1e-5);
  ASSERT_EQ(items("output.chosen_from").size(), 1u);
  EXPECT_TRUE(items("output.last_pass").empty());
  // The last pass's row is one switch away, and says what it is.
  EXPECT_EQ(items("output.last_pass_switch").size(), 1u);

  // With the causal mask on the two are one: no switch.
  ASSERT_TRUE(app_->set_interventions(Interventions{}));
  run_to_end();
  app_->set_output_position(1);  // (a new translation shows its newest token)
  frames();
  EXPECT_TRUE(items("output.last_pass_switch").empty());
  const std::vector<ItemPlacement> on = items("output_bar.chosen");
  ASSERT_EQ(on.size(), 1u);
  EXPECT_EQ(on[0].text, "man");
  EXPECT_NEAR(on[0].value, std::exp(-cross_entropy(app_->state().trace().logits.row(1), app_->state().translation()[1])), 1e-5);
}

// [SECTION] keys and labels

// Version 0.1: pressing 5 showed "head 4" (keys from 1, labels from 0). Key 5 is the paper's head 5 (index 4 in
// the trace), and the header says so.
TEST_F(HeadlessApp, KeyFiveShowsHeadFiveAndItsLabelSaysFive) {
  start();
  app_->view().present = true;
  ASSERT_TRUE(app_->go_to("encoder-attention"));
  frames();
  frames(3, GLFW_KEY_5);
  const std::vector<ItemPlacement> detail = items("header.detail");
  ASSERT_EQ(detail.size(), 1u);
  EXPECT_EQ(detail[0].text, "layer 1, head 5");
  const Heatmap* map = testing::drawn_heatmap("attention");
  ASSERT_NE(map, nullptr);
  const Mat& head5 = app_->state().trace().encoder[0].self_attn.probs[4];
  ASSERT_EQ(map->rows(), head5.rows());
  for (Eigen::Index i = 0; i < head5.rows(); ++i)
    for (Eigen::Index j = 0; j < head5.cols(); ++j) ASSERT_EQ(map->value(static_cast<int>(i), static_cast<int>(j)), head5(i, j));
  frames(3, GLFW_KEY_1);
  EXPECT_EQ(items("header.detail").at(0).text, "layer 1, head 1");
}

// [SECTION] numbers that say something

TEST(ProbabilityText, TwoSignificantDigitsWhereThreeDecimalsReadZero) {
  EXPECT_EQ(probability_text(0.896), "0.90");
  EXPECT_EQ(probability_text(0.0123), "0.012");
  EXPECT_EQ(probability_text(0.00017), "0.00017");
  EXPECT_EQ(probability_text(0.000123), "0.00012");
  EXPECT_EQ(probability_text(3.4e-6), "3.4e-06");
  EXPECT_EQ(probability_text(0.9973), "0.997") << "two digits would round it to 1";
  EXPECT_EQ(probability_text(1.0), "1");
  EXPECT_EQ(probability_text(0.0), "0");
  EXPECT_NE(probability_text(0.0004), "0.000");
}

// Teacher forcing: under each forced token its cross-entropy -log p, and the mean, the loss training lowers.
TEST_F(HeadlessApp, TeacherForcingShowsEachPositionsCrossEntropyAndTheMean) {
  start();
  AppState& state = app_->mutable_state();
  ASSERT_TRUE(state.set_reference("a man in an orange shirt is standing on the street ."));
  state.finish_background();
  const std::vector<int> forced = state.interventions().forced_prefix;
  ASSERT_GE(forced.size(), 10u);
  ASSERT_TRUE(app_->go_to("decoding"));
  frames();
  const std::vector<ItemPlacement> boxes = items("timeline.cross_entropy");
  ASSERT_EQ(boxes.size(), forced.size());
  double sum = 0;
  for (size_t i = 0; i < forced.size(); ++i) {
    const double expected = cross_entropy(state.trace().logits.row(static_cast<Eigen::Index>(i)), forced[i]);
    EXPECT_NEAR(boxes[i].value, expected, 1e-3 * std::max(1.0, expected)) << "position " << i;
    sum += expected;
  }
  const std::vector<ItemPlacement> mean = items("forcing.mean_cross_entropy");
  ASSERT_EQ(mean.size(), 1u);
  const std::string& text = mean[0].text;
  const size_t at = text.find("positions: ");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NEAR(std::strtod(text.c_str() + at + 11, nullptr), sum / static_cast<double>(forced.size()), 1e-3) << text;
  EXPECT_NE(text.find("over " + std::to_string(forced.size()) + " positions"), std::string::npos) << text;
}

// [SECTION] screens under xvfb-run

class OnScreen : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  }
  // Runs `script` at 1600x1000 from the test's own folder (`layout NAME` writes NAME there; layout() reads it).
  void run(const std::string& test, const std::string& script, const std::string& args = "") {
    dir_ = testing::fresh_output_dir("true_screens_" + test);
    ASSERT_EQ(testing::run_app_script(dir_, script, args), 0) << testing::read_text(dir_ / "log.txt");
  }
  json layout(const std::string& name) const { return testing::load_json(dir_ / (name + ".json")); }
  static std::vector<json> named(const json& layout, const std::string& name) {
    std::vector<json> out;
    for (const json& item : layout["items"])
      if (item["name"] == name) out.push_back(item);
    return out;
  }
  fs::path dir_;
};

// Version 0.1: hovering cell (8, 2) of encoder layer 1, head 2 outlined key column "mann" in the map, while the
// column header and both score maps lit "auf", the query's own column.
TEST_F(OnScreen, AHoveredCellMarksOneQueryRowAndOneKeyColumnInEveryView) {
  run("hover", "attention enc.1.2\nhover 8 2\nlayout hover.json\nexpand 4 5\nunhover\nlayout opened.json\n",
      "--model " + shipped_model_path("de-en"));  // (the word model: its words are named below)
  const json hover = layout("hover");
  int rows = 0, cols = 0;
  for (const json& item : hover["items"]) {
    const std::string name = item["name"];
    if (name.ends_with(".outlined_row")) {
      EXPECT_EQ(item["index"], 8) << name;
      ++rows;
    }
    if (name.ends_with(".outlined_col")) {
      EXPECT_EQ(item["index"], 2) << name;
      ++cols;
    }
    if (name.ends_with(".col_lit")) {
      EXPECT_EQ(item["index"], 2) << name;
      EXPECT_EQ(item["text"], "mann") << name;
    }
  }
  EXPECT_GE(rows, 4) << "the attention map, both score maps and the head's output";
  EXPECT_GE(cols, 3) << "the attention map and both score maps";
  EXPECT_EQ(named(hover, "attention.col_lit").size(), 1u) << "the column header";
  // An opened cell stays marked on the main map while its computation is open.
  const json opened = layout("opened");
  ASSERT_EQ(named(opened, "attention.marked_row").size(), 1u);
  EXPECT_EQ(named(opened, "attention.marked_row")[0]["index"], 4);
  EXPECT_EQ(named(opened, "attention.marked_col")[0]["index"], 5);
}

// Version 0.1: with the French model the strip read "German: Un homme ..." and cross-attention spoke of "the
// German sentence".
TEST_F(OnScreen, TheLanguagesAreTheModelsOwn) {
  run("languages", "present on\nexplain on\nsentence Un homme en chemise orange est debout dans la rue.\n"
                   "stage cross-attention\nlayout french.json\n",
      "--model '" + kFrenchModel + "'");
  const json french = layout("french");
  ASSERT_EQ(named(french, "strip.source_language").size(), 1u);
  EXPECT_EQ(named(french, "strip.source_language")[0]["text"], "French");
  EXPECT_EQ(named(french, "strip.target_language")[0]["text"], "English");
  const std::vector<json> explanation = named(french, "explanation");
  ASSERT_FALSE(explanation.empty());
  const std::string text = explanation[0]["text"];
  EXPECT_NE(text.find("French"), std::string::npos) << text;
  EXPECT_EQ(text.find("German"), std::string::npos) << text;
}

// Version 0.1's formulas were PyTorch's storage (Q = X W_Q^T + b_Q, W_Q head [32 x 256], sqrt(D),
// ReLU(xW1^T+b1)W2^T+b2); the paper's symbols now, on every stage.
TEST_F(OnScreen, TheFormulasUseThePapersNotation) {
  const char* stages[] = {"embedding", "positional", "encoder-qkv", "encoder-attention", "concat-heads",
                          "encoder-add-norm", "encoder-feed-forward", "cross-attention", "output"};
  std::string script = "explain on\n";
  for (const char* stage : stages) script += std::string("stage ") + stage + "\nlayout " + stage + ".json\n";
  run("notation", script);
  const auto formulas = [&](const std::string& stage) {
    std::string all;
    const json shown = layout(stage);
    for (const json& item : shown["items"]) {
      const std::string name = item["name"];
      if (name.starts_with("formula") || name == "explanation") all += item["text"].get<std::string>() + "\n";
    }
    return all;
  };
  for (const char* stage : stages) {
    const std::string text = formulas(stage);
    EXPECT_FALSE(text.empty()) << stage;
    for (const char* storage : {"sqrt(", "W_Q", "W_K", "^T +", "ReLU(", "W1", "W2", "[32 x 256]", "[32 \u00d7 256]"})
      EXPECT_EQ(text.find(storage), std::string::npos) << stage << " writes '" << storage << "': " << text;
  }
  EXPECT_NE(formulas("encoder-qkv").find("Q_{1} = X W_{1}^Q + b_{1}^Q"), std::string::npos) << formulas("encoder-qkv");
  EXPECT_NE(formulas("encoder-qkv").find("[256 \u00d7 32] ($d_{model} \\times d_k$)"), std::string::npos);
  EXPECT_NE(formulas("encoder-attention").find("softmax(Q_{1} K_{1}^T / \\sqrt{d_k} + M) V_{1}"), std::string::npos);
  EXPECT_NE(formulas("concat-heads").find("W^O"), std::string::npos);
  EXPECT_NE(formulas("encoder-feed-forward").find("FFN(x) = max(0, x W_1 + b_1) W_2 + b_2"), std::string::npos);
  EXPECT_NE(formulas("positional").find("PE_{(pos, 2i)} = sin(pos / 10000^{2i/d_{model}})"), std::string::npos);
}

// Model info sets the model beside the paper's base and big models (Vaswani et al. 2017, table 3).
TEST_F(OnScreen, ModelInfoSetsTheModelBesideThePapers) {
  run("model_info", "show model-info\nlayout info.json\n");
  const std::vector<json> cells = named(layout("info"), "model_info.paper");
  ASSERT_EQ(cells.size(), 21u) << "seven rows, three models";
  const auto cell = [&](int row, int model) { return cells[static_cast<size_t>(row * 3 + model)]["text"].get<std::string>(); };
  EXPECT_EQ(cell(0, 0), "256");   // d_model
  EXPECT_EQ(cell(0, 1), "512");
  EXPECT_EQ(cell(0, 2), "1024");
  EXPECT_EQ(cell(1, 0), "3");     // layers
  EXPECT_EQ(cell(2, 0), "512");   // d_ff
  EXPECT_EQ(cell(2, 1), "2048");
  EXPECT_EQ(cell(3, 0), "8");     // h
  EXPECT_EQ(cell(3, 2), "16");
  EXPECT_EQ(cell(6, 1), "65M");
  EXPECT_EQ(cell(6, 2), "213M");
  EXPECT_EQ(named(layout("info"), "model_info.storage").size(), 1u) << "how the file stores W";
}

// One stack, one count: the shipped GPT's model info gave "0 + 4" layers and "0 / 5,921" words, and its
// feed-forward stage explained ReLU's exact zeros under a GELU formula.
TEST_F(OnScreen, AGptsModelInfoCountsItsOneStackAndItsFeedForwardSaysGelu) {
  run("gpt_info",
      "explain on\nshow model-info\nlayout info.json\nstage decoder-feed-forward\nlayout ffn.json\n",
      "--model " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/gpt-en.safetensors");
  const std::vector<json> cells = named(layout("info"), "model_info.paper");
  ASSERT_EQ(cells.size(), 21u);
  EXPECT_EQ(cells[3]["text"], "4") << "layers";
  EXPECT_EQ(cells[15]["text"], "5,921") << "vocabulary";
  const std::vector<json> summary = named(layout("info"), "model_info.summary");
  ASSERT_EQ(summary.size(), 1u);
  const std::string line = summary[0]["text"];
  EXPECT_NE(line.find(", 4 layers, d_ff 1024"), std::string::npos) << line;
  std::string ffn;
  const json shown = layout("ffn");
  for (const json& item : shown["items"])
    if (item["name"] == "explanation" || item["name"].get<std::string>().starts_with("formula"))
      ffn += item["text"].get<std::string>() + "\n";
  EXPECT_NE(ffn.find("GELU(x W_1 + b_1)"), std::string::npos) << ffn;
  EXPECT_NE(ffn.find("GELU, x"), std::string::npos) << ffn;
  EXPECT_EQ(ffn.find("ReLU"), std::string::npos) << ffn;
}

// The candidates at step 0 of the untrained timeline: version 0.1 printed all ten as 0.000.
TEST_F(OnScreen, TheUntrainedModelsCandidatesKeepTheirDigitsAndTheRest) {
  run("untrained", "snapshot 0\nstage output\nlayout output.json\n");
  const json output = layout("output");
  const std::vector<json> bars = named(output, "output.bar_text");
  ASSERT_GE(bars.size(), 3u);
  double shown = 0;
  for (const json& bar : bars) {
    const std::string text = bar["text"];
    const double p = bar["value"], printed = std::strtod(text.c_str(), nullptr);
    EXPECT_GT(printed, 0.0) << text;
    EXPECT_NEAR(printed, p, 0.05 * p) << "two significant digits: " << text;
    shown += p;
  }
  const std::vector<json> rest = named(output, "output.rest");
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_NEAR(rest[0]["value"].get<double>(), 1.0 - shown, 1e-4);
  EXPECT_NE(rest[0]["text"].get<std::string>().find("together"), std::string::npos);
}

// The beam tree's numbers are length-normalised scores: the legend says so, and names log p.
TEST_F(OnScreen, TheBeamTreeSaysItsNumbersAreScores) {
  run("beam", "decode beam 4\nstage decoding\nlayout beam.json\n");
  const std::vector<json> legend = named(layout("beam"), "beam.legend");
  ASSERT_EQ(legend.size(), 1u);
  const std::string text = legend[0]["text"];
  EXPECT_NE(text.find("score"), std::string::npos) << text;
  EXPECT_NE(text.find("\\log p"), std::string::npos) << text;
}

// The all-heads grid: the first map of each row names its query rows, and the columns are named (or the grid
// says why not).
TEST_F(OnScreen, TheAllHeadsGridNamesItsTokens) {
  run("all_heads", "stage all-heads\nlayout grid.json\n");
  const json grid = layout("grid");
  int row_labels = 0;
  for (const json& item : grid["items"])
    if (item["name"].get<std::string>().ends_with(".row")) ++row_labels;
  EXPECT_GE(row_labels, 13) << "a sentence's rows named beside a first map";
  EXPECT_TRUE(named(grid, "all_heads.no_labels").empty());
}

// The Training stage on a machine without Multi30k says where it looked and where the data come from; the
// shipped timeline still plays, its loss curves in view.
TEST_F(OnScreen, TheTrainingStageWithoutDataSaysWhereItLookedAndStillPlays) {
  const fs::path empty = testing::fresh_output_dir("true_screens_no_data_folder");
  run("training", "stage training\nsnapshot 3\nlayout training.json\n", "--data '" + empty.string() + "'");
  const json training = layout("training");
  const std::vector<json> note = named(training, "training.no_data");
  ASSERT_EQ(note.size(), 1u);
  const std::string text = note[0]["text"];
  EXPECT_NE(text.find(empty.string()), std::string::npos) << text;
  EXPECT_NE(text.find("github.com/multi30k/dataset"), std::string::npos) << text;
  for (const char* curve : {"training.loss_curve", "training.valid_curve"}) {
    const std::vector<json> c = named(training, curve);
    ASSERT_EQ(c.size(), 1u) << curve;
    EXPECT_GT(c[0]["index"].get<int>(), 1) << curve << ": the timeline's points";
    EXPECT_LE(c[0]["y1"].get<float>(), training["panels"]["stage"]["y1"].get<float>() + 0.5f) << curve;
  }
}

}  // namespace
}  // namespace sf::gui
