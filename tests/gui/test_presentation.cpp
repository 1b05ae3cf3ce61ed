// Presentation mode, full screen, captions and export, as a teacher's script drives them: the app under
// xvfb-run -a, checked through its PNGs, its layout dumps and the exported files. Plus the view logic
// headless: F5 / Esc, and fonts rebuilt at the presentation size.
#include <gtest/gtest.h>
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "app_under_xvfb.h"
#include "gui/app_state.h"
#include "export_readers.h"
#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/view.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

using testing::fresh_output_dir;
using testing::load_json;
using testing::load_png;

int run_script(const fs::path& dir, const std::string& script, const std::string& args = "") {
  std::ofstream(dir / "script.txt") << script;
  const std::string cmd = testing::headless_app_command("--no-settings --size 1280x800 " + args + " --script " +
                                                        (dir / "script.txt").string() + " > " +
                                                        (dir / "log.txt").string() + " 2>&1");
  return std::system(cmd.c_str());
}

class Scripted : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  }
};

TEST_F(Scripted, ExportsTheWindowThePanelAndTheTensorAndNeverReplacesAFile) {
  const fs::path dir = fresh_output_dir("scripted_export");
  std::ofstream(dir / "existing.npy") << "a student's file";
  const std::string d = dir.string() + "/";
  ASSERT_EQ(run_script(dir, "model " + kModel + "\nsentence Ein Mann mit einer Frau.\nattention enc.2.3\n"
                             "layout " + d + "layout.json\n"
                             "export-png " + d + "window.png\nexport-panel " + d + "panel.png\n"
                             "export-csv " + d + "attention.csv\nexport-npy " + d + "attention.npy\n"
                             "export-npy " + d + "existing.npy\nexport-png " + d + "no/such/dir/w.png\n"
                             "quit\n"),
            0)
      << "see " << dir / "log.txt";
  const std::string log = test::read_bytes((dir / "log.txt").string());
  EXPECT_NE(log.find("'" + d + "existing.npy' exists: not replaced"), std::string::npos) << log;
  EXPECT_NE(log.find("the folder '" + d + "no/such/dir' does not exist"), std::string::npos) << log;
  EXPECT_EQ(test::read_bytes((dir / "existing.npy").string()), "a student's file");

  const testing::Image window = load_png(dir / "window.png");
  ASSERT_TRUE(window.pixels) << log;
  EXPECT_EQ(window.width, 1280);
  EXPECT_EQ(window.height, 800);
  // The panel PNG is the stage child's rectangle, and holds the same pixels as the window there.
  const nlohmann::json layout = load_json(dir / "layout.json");
  ASSERT_TRUE(layout.contains("panels")) << layout.dump();
  const nlohmann::json stage = layout["panels"]["stage"];
  const int x0 = stage["x0"], y0 = stage["y0"], x1 = stage["x1"], y1 = stage["y1"];
  const testing::Image panel = load_png(dir / "panel.png");
  ASSERT_TRUE(panel.pixels);
  EXPECT_EQ(panel.width, x1 - x0);
  EXPECT_EQ(panel.height, y1 - y0);
  EXPECT_LT(panel.width, window.width - 200) << "the pipeline map is not part of the panel";
  EXPECT_LT(panel.height, window.height - 40) << "the top bar is not part of the panel";
  int same = 0, total = 0;
  for (int y = 0; y < panel.height; y += 3)
    for (int x = 0; x < panel.width; x += 3, ++total)
      same += std::equal(panel.at(x, y), panel.at(x, y) + 3, window.at(x0 + x, y0 + y));
  EXPECT_GE(same, total * 99 / 100) << same << " of " << total << " sampled pixels match the window";

  // The tensor files: the attention heatmap of the layout, probabilities whose rows sum to 1.
  nlohmann::json attention;
  for (const auto& h : layout["heatmaps"])
    if (h["name"] == "attention") attention = h;
  ASSERT_FALSE(attention.is_null());
  const test::Npy npy = test::parse_npy(test::read_bytes((dir / "attention.npy").string()));
  ASSERT_TRUE(npy.error.empty()) << npy.error;
  EXPECT_EQ(npy.rows, attention["rows"]);
  EXPECT_EQ(npy.cols, attention["cols"]);
  for (int r = 0; r < npy.rows; ++r) {
    float sum = 0;
    for (int c = 0; c < npy.cols; ++c) sum += npy.values[static_cast<size_t>(r) * npy.cols + c];
    EXPECT_NEAR(sum, 1.0f, 1e-5f) << "row " << r;
  }
  // ...and they are the model's own probabilities of encoder layer 1, head 2 (computed here), bit for bit.
  AppState state;
  ASSERT_TRUE(state.load_model(kModel)) << state.error();
  ASSERT_TRUE(state.set_sentence("Ein Mann mit einer Frau.")) << state.error();
  const Mat& probs = state.trace().encoder[1].self_attn.probs[2];
  ASSERT_EQ(npy.rows, probs.rows());
  for (int r = 0; r < npy.rows; ++r)
    for (int c = 0; c < npy.cols; ++c)
      EXPECT_TRUE(test::same_bits(npy.values[static_cast<size_t>(r) * npy.cols + c], probs(r, c))) << r << "," << c;
  const test::Csv csv = test::parse_csv(test::read_bytes((dir / "attention.csv").string()));
  EXPECT_EQ(csv.row_labels, state.source_labels());
  EXPECT_EQ(csv.col_labels, state.source_labels());
  ASSERT_EQ(csv.values.size(), npy.values.size());
  for (size_t i = 0; i < npy.values.size(); ++i) EXPECT_TRUE(test::same_bits(csv.values[i], npy.values[i])) << i;
  for (const auto& name : {"window.png", "panel.png", "attention.csv", "attention.npy", "existing.npy"})
    EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 8)
      << "only the script, its log, the layout and the five files: no temporary files left";
}

TEST_F(Scripted, PresentationModeShowsTheStageAloneInLargeTypeOnBlackWithACaption) {
  const fs::path dir = fresh_output_dir("scripted_present");
  const std::string d = dir.string() + "/";
  const std::string caption = "Each row shows where one word looks.";
  ASSERT_EQ(run_script(dir, "model " + kModel + "\nsentence Ein Mann mit einer Frau.\nattention enc.1.2\n"
                             "screenshot " + d + "normal.png\nlayout " + d + "normal.json\n"
                             "present on\ncaption " + caption + "\n"
                             "screenshot " + d + "present.png\nlayout " + d + "present.json\n"
                             "caption\nui-scale 1.5\nscreenshot " + d + "scaled.png\nlayout " + d + "scaled.json\n"
                             "quit\n"),
            0)
      << "see " << dir / "log.txt";
  const nlohmann::json normal = load_json(dir / "normal.json"), present = load_json(dir / "present.json"),
                       scaled = load_json(dir / "scaled.json");
  ASSERT_TRUE(normal.contains("panels") && present.contains("panels") && scaled.contains("panels"));
  // The pipeline map is gone, the stage takes the window's width, the text is larger.
  EXPECT_FALSE(normal["panels"]["pipeline"].is_null());
  EXPECT_TRUE(present["panels"]["pipeline"].is_null());
  EXPECT_LT(static_cast<int>(present["panels"]["stage"]["x0"]), 40);
  EXPECT_GT(static_cast<int>(normal["panels"]["stage"]["x0"]), 200);
  const float normal_font = normal["panels"]["font_size"], present_font = present["panels"]["font_size"];
  EXPECT_EQ(normal_font, 18.0f);
  EXPECT_EQ(present_font, 32.0f);  // 18 px x 1.75, rasterised at that size
  // UI scale 1.5 on top would be 18 x 1.5 x 1.75 = 47 px: presentation mode's type stops at 1/25 of the window's
  // height (32 px at 800), so that the stage keeps its room for the maps (view.h kPresentScreenLines).
  EXPECT_EQ(static_cast<float>(scaled["panels"]["font_size"]), 32.0f);
  EXPECT_EQ(present["panels"]["caption"], caption);
  // The caption is set in the body text, which presentation mode makes projector-sized already.
  nlohmann::json caption_item;
  for (const auto& item : present["items"])
    if (item["name"] == "caption") caption_item = item;
  ASSERT_FALSE(caption_item.is_null()) << "no caption drawn";
  EXPECT_EQ(caption_item["text"], caption);
  EXPECT_EQ(caption_item["value"].get<float>(), present_font) << "the caption is in the body text's size";
  EXPECT_GE(caption_item["y0"].get<float>(), static_cast<float>(present["panels"]["stage"]["y1"].get<int>()))
      << "the caption sits below the stage";
  // The caption's strip is kept free below the stage.
  const int normal_bottom = normal["panels"]["stage"]["y1"], present_bottom = present["panels"]["stage"]["y1"];
  EXPECT_LT(present_bottom, normal_bottom - 60);
  const int scaled_bottom = scaled["panels"]["stage"]["y1"];
  EXPECT_GT(scaled_bottom, present_bottom) << "no caption: no strip";

  const testing::Image shot = load_png(dir / "present.png"), before = load_png(dir / "normal.png");
  ASSERT_TRUE(shot.pixels && before.pixels);
  // Pure black background (the normal style is a dark grey).
  const unsigned char* corner = shot.at(5, shot.height / 2);
  EXPECT_EQ(corner[0] + corner[1] + corner[2], 0);
  const unsigned char* grey = before.at(5, before.height / 2);
  EXPECT_GT(grey[0] + grey[1] + grey[2], 0);
  // The caption box below the stage: its yellow border and white text.
  int yellow = 0, white = 0;
  for (int y = present_bottom; y < shot.height; ++y)
    for (int x = 0; x < shot.width; ++x) {
      const unsigned char* p = shot.at(x, y);
      yellow += p[0] > 240 && p[1] > 200 && p[1] < 235 && p[2] < 60;
      white += p[0] > 240 && p[1] > 240 && p[2] > 240;
    }
  EXPECT_GT(yellow, 1000) << "no caption border";
  EXPECT_GT(white, 500) << "no caption text";
}

// What a class sees on a 1920x1080 projector: the shipped model, the default sentence (13 tokens), a two-line
// caption. The attention map's rows must stay at least as tall as the text, so its token labels keep full size.
TEST_F(Scripted, AttentionStaysReadableAt1080pWithACaption) {
  const fs::path dir = fresh_output_dir("scripted_projector");
  std::ofstream(dir / "script.txt")
      << "present on\nattention cross.3.1\ncaption Cross-attention joins the two halves: English queries, German "
         "keys. Each row shows which German words the decoder read while writing one English word.\n"
      << "layout " << (dir / "layout.json").string() << "\nquit\n";
  const std::string cmd = std::string(STEPFORMER_XVFB_RUN) + " -a -s '-screen 0 1920x1080x24' " + STEPFORMER_APP_PATH + " --no-settings" +
                          " --size 1920x1080 --script " + (dir / "script.txt").string() + " > " +
                          (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "see " << dir / "log.txt";
  const nlohmann::json layout = load_json(dir / "layout.json");
  ASSERT_TRUE(layout.contains("panels"));
  const float font = layout["panels"]["font_size"];
  EXPECT_EQ(font, 32.0f);
  nlohmann::json attention;
  for (const auto& h : layout["heatmaps"])
    if (h["name"] == "attention") attention = h;
  ASSERT_FALSE(attention.is_null());
  EXPECT_EQ(attention["rows"], 13);
  const float row_height = (static_cast<float>(attention["y1"]) - static_cast<float>(attention["y0"])) / 13.0f;
  EXPECT_GE(row_height, font) << "rows lower than the text: the labels shrink";
}

// A 1280x800 projector without a caption: the sentence strip on top, the explanation folded behind "Explain",
// the map keeps most of the height and every row its label. Opened ("explain on"), the attention stage's five
// lines of explanation, in large type, go beside the map instead of above it (above it, the map was 206 px
// high and its rows half the text's height: every other label was left out).
TEST_F(Scripted, AttentionMapKeepsTheHeightAt1280x800WithItsExplanationBeside) {
  const fs::path dir = fresh_output_dir("scripted_projector_small");
  const std::string d = dir.string() + "/";
  ASSERT_EQ(run_script(dir, "present on\nattention dec.1.1\nlayout " + d + "folded.json\nexplain on\nlayout " + d +
                                "layout.json\nscreenshot " + d + "shot.png\nexplain off\nquit\n"),
            0)
      << "see " << dir / "log.txt";
  const nlohmann::json folded = load_json(dir / "folded.json");
  bool toggle = false;
  for (const auto& item : folded["items"]) toggle |= item["name"] == "explain" && item["text"] == "folded";
  EXPECT_TRUE(toggle) << "presentation mode folds the explanation behind its toggle";
  for (const auto& h : folded["heatmaps"]) {
    if (h["name"] == "attention") {
      EXPECT_GE((h["y1"].get<float>() - h["y0"].get<float>()) / 13.0f, 0.75f * folded["panels"]["font_size"].get<float>())
          << "folded, the rows keep most of the text's height";
    }
  }
  const nlohmann::json layout = load_json(dir / "layout.json");
  ASSERT_TRUE(layout.contains("panels"));
  const float font = layout["panels"]["font_size"];
  nlohmann::json attention;
  for (const auto& h : layout["heatmaps"])
    if (h["name"] == "attention") attention = h;
  ASSERT_FALSE(attention.is_null());
  ASSERT_EQ(attention["rows"], 13);
  const float y0 = attention["y0"], y1 = attention["y1"], x1 = attention["x1"];
  EXPECT_GE(y1 - y0, 0.4f * 800) << "the map lost the height to the text (and the sentence strip above)";
  EXPECT_GE((y1 - y0) / 13.0f, 0.75f * font) << "rows much lower than the text: labels are left out";
  // The explanation (pale blue text) is on the right of the map and its colour bar, level with the map.
  const testing::Image shot = load_png(dir / "shot.png");
  ASSERT_TRUE(shot.pixels);
  int explanation_pixels = 0;
  for (int y = static_cast<int>(y0); y < static_cast<int>(y1); ++y)
    for (int x = static_cast<int>(x1 + 3 * font); x < shot.width; ++x) {
      const unsigned char* p = shot.at(x, y);
      explanation_pixels += p[0] > 170 && p[0] < 225 && p[1] > 215 && p[2] > 245;
    }
  EXPECT_GT(explanation_pixels, 2000) << "no explanation beside the map";

  // With a lesson's caption (three lines of large type below the stage, the explanation hidden) the key labels
  // above the map shrink with its cells, so the rows keep at least half the text's height: every row is still
  // labelled (before, with the labels' room fixed at five lines, the rows were 12.7 px and every other label
  // was left out).
  ASSERT_EQ(run_script(dir, "present on\nattention enc.1.4\ncaption Self-attention: compare each query with every "
                            "key, scale by the square root of 32, softmax. Each row shows where one word looks; "
                            "every row adds up to 1.\nlayout " + d + "caption.json\nquit\n"),
            0)
      << "see " << dir / "log.txt";
  const nlohmann::json with_caption = load_json(dir / "caption.json");
  ASSERT_FALSE(std::string(with_caption["panels"]["caption"]).empty());
  nlohmann::json map;
  for (const auto& h : with_caption["heatmaps"])
    if (h["name"] == "attention") map = h;
  ASSERT_FALSE(map.is_null());
  EXPECT_GE((static_cast<float>(map["y1"]) - static_cast<float>(map["y0"])) / map["window"][3].get<float>(),
            0.5f * font - 0.01f);
}

// Nothing of any stage runs off the right edge of a 1280x800 window, in large type (presentation mode) or not:
// rows of controls wrap, formulas and notes wrap, grids and maps share the width (the layout dump gives how far
// right the stage panel laid out its widgets, and the room it had: widgets and wrapped text, not what a panel
// draws straight into its draw list, like the colour bars' numbers, which the screenshots were looked at for).
// Before: the decoding stage's step counter ended 424 px past the edge in presentation mode, the
// cross-attention head grid was cut at head 4, the add & norm block choice, the tokens stage's notes and the
// maps' colour bars ran off by 6 to 380 px.
TEST_F(Scripted, EveryStageFitsTheWidthOfA1280x800Window) {
  const std::vector<std::string> stages = {
      "tokens", "embedding", "positional", "encoder-qkv", "encoder-attention", "concat-heads", "encoder-add-norm",
      "encoder-feed-forward", "decoder-attention", "cross-attention", "decoder-add-norm", "decoder-feed-forward",
      "all-heads", "output", "decoding", "interventions"};
  for (const bool present : {true, false}) {
    const fs::path dir = fresh_output_dir(present ? "scripted_fit_present" : "scripted_fit_normal");
    std::string script = present ? "present on\n" : "";
    for (const std::string& stage : stages)
      script += "stage " + stage + "\nwait 2\nlayout " + (dir / (stage + ".json")).string() + "\n";
    ASSERT_EQ(run_script(dir, script + "quit\n"), 0) << "see " << dir / "log.txt";
    for (const std::string& stage : stages) {
      const nlohmann::json layout = load_json(dir / (stage + ".json"));
      ASSERT_TRUE(layout.contains("panels")) << stage;
      EXPECT_EQ(static_cast<bool>(layout["panels"]["present"]), present) << stage;
      const float right = layout["panels"]["stage_content_right"], room = layout["panels"]["stage_room_right"];
      EXPECT_GT(right, 0.5f * room) << stage;  // the panel laid out something
      EXPECT_LE(right, room + 1) << stage << (present ? " in presentation mode" : "") << ": " << right - room
                                 << " px past the right edge";
      if (!present) continue;
      // Presentation mode: the sentence strip is there (the source and the translation's words, in the window).
      std::vector<nlohmann::json> source, words;
      for (const auto& item : layout["items"]) {
        if (item["name"] == "strip.source") source.push_back(item);
        if (item["name"] == "strip.translation") words.push_back(item);
      }
      ASSERT_EQ(source.size(), 1u) << stage << ": no sentence strip";
      EXPECT_EQ(source[0]["text"], "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.") << stage;
      EXPECT_EQ(words.size(), 12u) << stage << ": the translation's words (\"a man in an orange shirt is standing on the street .\")";
      for (const auto& w : words) EXPECT_LE(w["x1"].get<float>(), 1280.0f) << stage << " " << w["text"];
      // Every attention row in view keeps its label, in type that follows the presentation font.
      for (const auto& h : layout["heatmaps"]) {
        if (h["name"] != "attention") continue;
        const float row_h = (h["y1"].get<float>() - h["y0"].get<float>()) / h["window"][3].get<float>();
        int labels = 0;
        for (const auto& item : layout["items"])
          if (item["name"] == "attention.row") {
            ++labels;
            EXPECT_GE(item["value"].get<float>(), 0.5f * layout["panels"]["font_size"].get<float>() - 0.5f) << stage;
          }
        EXPECT_GE(labels, static_cast<int>(std::floor(h["window"][3].get<float>()))) << stage << ": row labels left out";
        EXPECT_GE(row_h, 0.5f * layout["panels"]["font_size"].get<float>() - 0.5f) << stage;
      }
      // The attention stages' step maps lie inside the window.
      if (stage.find("attention") != std::string::npos && stage != "all-heads")
        for (const char* step : {"attention_scores", "attention_masked_scores", "attention_head_output"}) {
          bool found = false;
          for (const auto& h : layout["heatmaps"])
            if (h["name"] == step) {
              found = true;
              EXPECT_LE(h["x1"].get<float>(), 1280.0f) << stage << " " << step;
              EXPECT_LE(h["y1"].get<float>(), 800.0f) << stage << " " << step << " below the window";
              EXPECT_GE(h["y1"].get<float>() - h["y0"].get<float>(), 20.0f) << stage << " " << step;
            }
          EXPECT_TRUE(found) << stage << ": no step map " << step << " at 1280x800";
        }
    }
  }
}

// A lecture's moving parts at 1280x800 in presentation mode: decoding step by step shows the next token's bars
// in the window, beam search's tree shows its newest column, and the output stage follows the step just taken.
TEST_F(Scripted, DecodingBarsAndTheBeamTreesNewestColumnStayInTheWindow) {
  const fs::path dir = fresh_output_dir("scripted_decoding");
  const std::string d = dir.string() + "/";
  // (and with a lesson's four-line caption over the bottom: the candidates beside the timeline, above it)
  const std::string caption =
      "caption Mask back on. Decoding word by word, the words after position 3 do not exist yet: there is nothing "
      "to copy. The mask makes training look exactly like this moment, so what was learned still works.\n";
  ASSERT_EQ(run_script(dir, "present on\nstage decoding\nrestart\nstep 3\nlayout " + d + "greedy.json\n" + caption +
                            "layout " + d + "captioned.json\ncaption\n"
                            "decode beam 4\nrestart\nstep 6\nlayout " + d + "beam.json\nscreenshot " + d +
                            "beam.png\nquit\n"),
            0)
      << "see " << dir / "log.txt";
  const nlohmann::json greedy = load_json(dir / "greedy.json"), beam = load_json(dir / "beam.json");
  int bars = 0;
  for (const auto& item : greedy["items"])
    if (item["name"] == "next_bar") {
      ++bars;
      EXPECT_LE(item["y1"].get<float>(), 800.0f) << "a next-token bar below the window";
      EXPECT_LE(item["x1"].get<float>(), 1280.0f);
    }
  EXPECT_EQ(bars, 5) << "the five likeliest next tokens";
  const nlohmann::json captioned = load_json(dir / "captioned.json");
  float caption_top = 0;
  for (const auto& item : captioned["items"])
    if (item["name"] == "caption") caption_top = item["y0"].get<float>();
  ASSERT_GT(caption_top, 400.0f) << "no caption in the layout";
  int above = 0;
  for (const auto& item : captioned["items"])
    if (item["name"] == "next_bar" && item["y1"].get<float>() <= caption_top) ++above;
  EXPECT_GE(above, 3) << "the caption covers the next token's candidates";
  int newest = 0;
  for (const auto& item : beam["items"])
    if (item["name"] == "beam.newest") {
      ++newest;
      EXPECT_EQ(item["index"], 6) << "the newest column is step 6";
      EXPECT_GE(item["x0"].get<float>(), 0.0f);
      EXPECT_LE(item["x1"].get<float>(), 1280.0f) << "the newest column is scrolled into view";
      EXPECT_LE(item["y1"].get<float>(), 800.0f);
    }
  EXPECT_GE(newest, 1) << "no box of the newest column in view";
}

// An intervention in presentation mode: a red badge names it, and the translation before it stands beside the
// new one with the words that changed marked (causal mask off: "is" is lost).
TEST_F(Scripted, TheStripNamesTheInterventionAndMarksWhatItChanged) {
  const fs::path dir = fresh_output_dir("scripted_strip");
  const std::string d = dir.string() + "/";
  // (the word model: the subword default keeps "is" with the mask off)
  ASSERT_EQ(run_script(dir, "present on\nattention dec.2.4\ncausal-mask off\nlayout " + d + "off.json\nscreenshot " +
                            d + "off.png\nreset\nlayout " + d + "reset.json\nquit\n",
                       "--model " + shipped_model_path("de-en")),
            0)
      << "see " << dir / "log.txt";
  const nlohmann::json off = load_json(dir / "off.json"), reset = load_json(dir / "reset.json");
  std::string badge, before, now;
  std::vector<std::string> lost, gained;
  for (const auto& item : off["items"]) {
    const std::string name = item["name"], text = item["text"];
    if (name == "strip.badge") badge = text;
    if (name == "strip.before") {
      before += (before.empty() ? "" : " ") + text;
      if (item["value"].get<float>() > 0.5f) lost.push_back(text);
    }
    if (name == "strip.translation") {
      now += (now.empty() ? "" : " ") + text;
      if (item["value"].get<float>() > 0.5f) gained.push_back(text);
    }
  }
  EXPECT_EQ(badge, "causal mask off");
  EXPECT_EQ(before, "a man in an orange shirt is standing on the street .");
  EXPECT_EQ(now, "a man in an orange shirt standing on the street .");
  EXPECT_EQ(lost, (std::vector<std::string>{"is"}));
  EXPECT_TRUE(gained.empty());
  // The header's title follows the state.
  EXPECT_NE(off["app"]["translation"].get<std::string>().find("shirt standing"), std::string::npos);
  // The badge is drawn red in the picture.
  const testing::Image shot = load_png(dir / "off.png");
  ASSERT_TRUE(shot.pixels);
  for (const auto& item : off["items"])
    if (item["name"] == "strip.badge") {
      const unsigned char* p = shot.at(static_cast<int>(item["x0"].get<float>()) + 3,
                                       static_cast<int>((item["y0"].get<float>() + item["y1"].get<float>()) / 2));
      EXPECT_GT(p[0], 180);
      EXPECT_LT(p[1], 60);
    }
  // After "reset": no badge, nothing marked.
  for (const auto& item : reset["items"]) {
    EXPECT_NE(item["name"], "strip.badge");
    EXPECT_NE(item["name"], "strip.before");
  }
}

TEST_F(Scripted, FullScreenTakesTheMonitorAndGivesTheWindowBack) {
  const fs::path dir = fresh_output_dir("scripted_fullscreen");
  const std::string d = dir.string() + "/";
  ASSERT_EQ(run_script(dir, "model " + kModel + "\nfullscreen on\nscreenshot " + d + "on.png\n"
                             "fullscreen off\nscreenshot " + d + "off.png\nquit\n"),
            0)
      << "see " << dir / "log.txt";
  const testing::Image on = load_png(dir / "on.png"), off = load_png(dir / "off.png");
  ASSERT_TRUE(on.pixels && off.pixels);
  EXPECT_EQ(on.width, 1600);  // the virtual screen of xvfb-run -s '-screen 0 1600x1000x24'
  EXPECT_EQ(on.height, 1000);
  EXPECT_EQ(off.width, 1280);
  EXPECT_EQ(off.height, 800);
}

TEST_F(Scripted, PresentOptionStartsInPresentationMode) {
  const fs::path dir = fresh_output_dir("present_option");
  const std::string cmd = std::string(STEPFORMER_XVFB_RUN) + " -a " + STEPFORMER_APP_PATH + " --no-settings --model " + kModel +
                          " --present --stage positional --size 1024x640 --screenshot " + (dir / "p.png").string() +
                          " --layout-json " + (dir / "p.json").string() + " > " + (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const nlohmann::json layout = load_json(dir / "p.json");
  EXPECT_TRUE(layout["panels"]["present"]);
  EXPECT_TRUE(layout["panels"]["pipeline"].is_null());
  EXPECT_EQ(static_cast<float>(layout["panels"]["font_size"]), 32.0f);
}

// Headless: keys, layout and fonts without a window.
class HeadlessView : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::start_headless_imgui(/*default_font=*/false);
    rebuild_fonts(body_font_pixels(ViewSettings{}), false);
    AppOptions options;
    options.model_path = kModel;
    options.sentence = "Ein Mann mit einer Frau.";
    options.stage = "encoder-attention";
    app_ = std::make_unique<App>(options);
    app_->finish_loading();  // the model loads in the background
  }
  void TearDown() override {
    app_.reset();
    ImGui::DestroyContext();
  }
  void frame(int key = -1) { testing::headless_frame(*app_, key); }
  std::unique_ptr<App> app_;
};

TEST_F(HeadlessView, F5TogglesPresentationAndEscapeLeavesIt) {
  frame();
  EXPECT_GT(app_->frame_layout().pipeline.width, 100);
  const int normal_stage_x = app_->frame_layout().stage.x;
  frame(GLFW_KEY_F5);
  EXPECT_TRUE(app_->view().present);
  frame();
  EXPECT_EQ(app_->frame_layout().pipeline.width, 0) << "the pipeline map is hidden";
  EXPECT_LT(app_->frame_layout().stage.x, normal_stage_x - 200);
  frame(GLFW_KEY_RIGHT);  // arrow keys still step
  EXPECT_EQ(app_->stage(), Stage::EncoderConcat);
  frame(GLFW_KEY_F11);
  EXPECT_TRUE(app_->view().fullscreen);
  frame(GLFW_KEY_ESCAPE);
  EXPECT_FALSE(app_->view().present);
  EXPECT_FALSE(app_->view().fullscreen);
}

// A head the model does not have never reaches a panel: a selection left from a model with more heads (or
// layers) is brought inside the one on show before anything draws, and a number key past the model's heads does
// nothing. In presentation mode the Q/K/V panel read q[head] unchecked: the ASan monkey found it reading past
// the trace's heads (head 7 of a 4-head model).
TEST_F(HeadlessView, AHeadOrLayerPastTheModelNeverReachesAPanel) {
  const int heads = app_->state().model()->config.n_heads;
  const int layers = app_->state().model()->config.n_encoder_layers;
  ASSERT_LT(heads, 9) << "this test needs a number key past the model's heads";
  app_->view().present = true;
  app_->go_to("encoder-qkv");
  frame();
  frame(GLFW_KEY_1 + heads);  // key heads + 1: no such head
  EXPECT_EQ(app_->attention().head, 0) << "the key past the model's heads changed the head";
  app_->select_head_index(heads + 3);  // as a larger model's selection left behind
  app_->select_layer(layers + 2);
  for (const char* stage : {"encoder-qkv", "concat-heads", "encoder-add-norm", "encoder-attention", "all-heads"}) {
    app_->go_to(stage);
    frame();
    EXPECT_EQ(app_->attention().head, heads - 1) << stage;
    EXPECT_EQ(app_->attention().layer, layers - 1) << stage;
    app_->select_head_index(heads + 3);
    app_->select_layer(layers + 2);
  }
}

TEST_F(HeadlessView, FontsAreRasterisedAtThePresentationSize) {
  if (ImGui::GetIO().Fonts->Fonts[0]->FontSize != 18.0f)  // the 13 px bitmap fallback
    GTEST_SKIP() << "DejaVu Sans is not installed (fonts-dejavu-core)";
  frame();
  EXPECT_EQ(ImGui::GetFontSize(), 18.0f);
  ViewSettings present;
  present.present = true;
  rebuild_fonts(body_font_pixels(present), false);
  apply_style(present);
  frame();
  EXPECT_EQ(ImGui::GetFontSize(), 32.0f);  // the atlas holds the glyphs at 32 px: no scaling at draw time
  EXPECT_EQ(ImGui::GetIO().FontGlobalScale, 1.0f);
  ASSERT_NE(large_font(), nullptr);
  EXPECT_EQ(large_font()->FontSize, 43.0f);
  EXPECT_TRUE(high_contrast());
  EXPECT_EQ(ImGui::GetStyle().Colors[ImGuiCol_WindowBg].x, 0.0f);
  // Style sizes follow the font and never compound when applied twice.
  const float padding = ImGui::GetStyle().FramePadding.x;
  apply_style(present);
  EXPECT_EQ(ImGui::GetStyle().FramePadding.x, padding);
  apply_style(ViewSettings{});
  EXPECT_FALSE(high_contrast());
  EXPECT_LT(ImGui::GetStyle().FramePadding.x, padding);
}

}  // namespace
}  // namespace sf::gui
