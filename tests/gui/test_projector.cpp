// Legible on a projector: presentation mode at 1280x800 and 1920x1080, UI scale 1 and 1.5, on every stage with a
// map and at every pause of the shipped lessons, checked through the layout dumps (--layout-json, the script's
// `layout`): the stage's main map meets the room on one side (70% of the stage's height or width), its labels
// are at least half the body text, nothing runs past the stage (no scrolling away what a caption names), and the
// caption has its own band under the stage. The app runs as a class would see it, under xvfb-run -a.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "layout_checks.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::num;
using testing::items_named;
using testing::problems_of;

struct Screen {
  std::string size;  // "1280x800"
  std::string scale;  // "1", "1.5"
};
const Screen kScreens[] = {{"1280x800", "1"}, {"1280x800", "1.5"}, {"1920x1080", "1"}, {"1920x1080", "1.5"}};

// The stages whose main picture is a map (the others show tokens, bars and switches).
const char* kMapStages[] = {"embedding",      "positional",       "encoder-qkv",     "encoder-attention",
                            "concat-heads",   "encoder-add-norm", "encoder-feed-forward", "decoder-attention",
                            "cross-attention", "all-heads",       "training"};

int run_app(const fs::path& dir, const Screen& screen, const std::string& script, const std::string& args = "") {
  return testing::run_app_script(dir, script, "--ui-scale " + screen.scale + " " + args, screen.size);
}

class Projector : public ::testing::TestWithParam<Screen> {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  }
};

std::string screen_name(const ::testing::TestParamInfo<Screen>& info) {
  std::string name = info.param.size + "_scale_" + info.param.scale;
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

// Every stage with a map, in presentation mode with a two-line caption (what a lesson leaves the stage), as the
// class sees it at this screen and scale.
TEST_P(Projector, EveryMapStageMeetsTheRoomWithReadableLabels) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_stages_" + screen_name({screen, 0}));
  std::string script = "present on\nunhover\ncaption The small maps on the right are the steps: raw scores, scores "
                       "with the mask, and the head's output, the values mixed by these weights.\n";
  for (const char* stage : kMapStages)
    script += std::string("stage ") + stage + "\nlayout " + stage + ".json\n";
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const char* stage : kMapStages) {
    const json layout = testing::load_json(dir / (std::string(stage) + ".json"));
    ASSERT_TRUE(layout.contains("panels")) << stage;
    EXPECT_TRUE(layout["panels"]["present"].get<bool>());
    problems += problems_of(layout, true);
  }
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

// The same for a decoder-only (GPT) model's stages with a map: its one stack, learned positions beside the
// sinusoids.
TEST_P(Projector, EveryMapStageOfADecoderOnlyModelMeetsTheRoom) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_gpt_stages_" + screen_name({screen, 0}));
  const char* stages[] = {"embedding",    "positional",       "encoder-qkv",          "decoder-attention",
                          "concat-heads", "decoder-add-norm", "decoder-feed-forward", "all-heads"};
  std::string script = "model " + std::string(STEPFORMER_SOURCE_DIR) +
                       "/tests/fixtures/shapes/gpt_pre.model.safetensors\nsentence the dog runs\npresent on\nunhover\n"
                       "caption The small maps on the right are the steps: raw scores, scores with the mask, and the "
                       "head's output.\n";
  for (const char* stage : stages) script += std::string("stage ") + stage + "\nlayout " + stage + ".json\n";
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const char* stage : stages) {
    const json layout = testing::load_json(dir / (std::string(stage) + ".json"));
    ASSERT_TRUE(layout.contains("panels")) << stage;
    problems += problems_of(layout, true);
  }
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

// A GPT's interventions stage (the shipped GPT: 4 layers x 4 heads) in every language under a two-line caption:
// its head grid used to be sized by its lines alone and ran 9-11 pixels past the stage in Chinese.
TEST_P(Projector, ADecoderOnlyModelsInterventionsFitInEveryLanguage) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_gpt_interventions_" + screen_name({screen, 0}));
  std::string script = "model " + std::string(STEPFORMER_SOURCE_DIR) +
                       "/assets/models/gpt-en.safetensors\nsentence a man in an orange\npresent on\nunhover\n"
                       "caption Switch a head off and watch the continuation change; the causal mask off lets every "
                       "word see the words after it.\nstage interventions\n";
  for (const char* language : {"en", "ko", "zh"})
    script += std::string("language ") + language + "\nlayout " + language + ".json\n";
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const char* language : {"en", "ko", "zh"}) {
    const json layout = testing::load_json(dir / (std::string(language) + ".json"));
    ASSERT_TRUE(layout.contains("panels")) << language;
    const std::string found = problems_of(layout, false);
    if (!found.empty()) problems += std::string(language) + ": " + found;
  }
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

// The same for an encoder-only (BERT) model's stages with a map, a word masked (its attention stage carries the
// sentence that each token sees both sides); and its output stage, fill in the blank, runs past nothing.
TEST_P(Projector, EveryMapStageOfAnEncoderOnlyModelMeetsTheRoom) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_bert_stages_" + screen_name({screen, 0}));
  const char* stages[] = {"embedding",        "positional",           "encoder-qkv", "encoder-attention", "concat-heads",
                          "encoder-add-norm", "encoder-feed-forward", "all-heads"};
  std::string script = "model " + std::string(STEPFORMER_SOURCE_DIR) +
                       "/tests/fixtures/shapes/bert_mlm.model.safetensors\nsentence the dog sees a red ball\n"
                       "mask-token 2\npresent on\nunhover\n"
                       "caption The small maps on the right are the steps: raw scores, scores with the mask, and the "
                       "head's output.\n";
  for (const char* stage : stages) script += std::string("stage ") + stage + "\nlayout " + stage + ".json\n";
  script += "stage output\nlayout output.json\n";
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const char* stage : stages) {
    const json layout = testing::load_json(dir / (std::string(stage) + ".json"));
    ASSERT_TRUE(layout.contains("panels")) << stage;
    problems += problems_of(layout, true);
  }
  const json output = testing::load_json(dir / "output.json");
  ASSERT_TRUE(output.contains("panels"));
  problems += problems_of(output, false);
  EXPECT_FALSE(items_named(output, "fill.bar_hidden").empty() && items_named(output, "fill.bar").empty())
      << "the output stage shows no bars";
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

// The output stage's "each layer's guess" (the logit lens) for the three shipped shapes, in English and Chinese: the
// layers x positions grid and the bars under it run past nothing (its type shrinks where the room is short: 4
// layers of 14 positions at 1280x800, scale 1.5).
TEST_P(Projector, TheLogitLensFitsForEveryShippedShape) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_lens_" + screen_name({screen, 0}));
  const std::string models = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/";
  const struct {
    const char* name;
    const char* setup;
  } cases[] = {{"de-en", "sentence Ein Mann in einem orangefarbenen Hemd steht auf der Straße.\n"},
               {"gpt-en", "sentence a man in an orange\nrun\n"},
               {"bert-en", "sentence a man in an orange shirt is standing on the street .\nmask-token 6\n"}};
  std::string script = "present on\nunhover\ncaption Each row is what the model would say if it stopped after that "
                       "layer: the top row is its real output.\n";
  for (const auto& c : cases) {
    script += "model " + models + c.name + ".safetensors\n" + c.setup + "stage output\noutput-view lens\n";
    for (const char* language : {"en", "zh"})
      script += std::string("language ") + language + "\nwait 30\nlayout " + c.name + "_" + language + ".json\n";
  }
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const auto& c : cases)
    for (const char* language : {"en", "zh"}) {
      const std::string name = std::string(c.name) + "_" + language;
      const json layout = testing::load_json(dir / (name + ".json"));
      ASSERT_TRUE(layout.contains("panels")) << name;
      EXPECT_FALSE(items_named(layout, "lens.cell").empty()) << name << ": no grid";
      EXPECT_FALSE(items_named(layout, "lens.chosen").empty()) << name << ": no bars";
      const std::string found = problems_of(layout, false);
      if (!found.empty()) problems += name + ": " + found;
    }
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

// The output stage's "Why this word?" for the three shipped shapes, in English and Korean: the method switch, the
// bars over every input word with the attention under them (their type shrinks to fit; the maps under them where
// they fit, else a line pointing to "the whole sentence"), and the whole sentence's two maps (why-part sentence)
// run past nothing.
TEST_P(Projector, TheWhyViewFitsForEveryShippedShape) {
  const Screen screen = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_why_" + screen_name({screen, 0}));
  const std::string models = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/";
  const struct {
    const char* name;
    const char* setup;
  } cases[] = {{"de-en", "sentence Ein Mann in einem orangefarbenen Hemd steht auf der Straße.\n"},
               {"gpt-en", "sentence a man in an orange\nrun\n"},
               {"bert-en", "sentence a man in an orange shirt is standing on the street .\nmask-token 6\n"}};
  std::string script = "present on\nunhover\ncaption Orange pushed the word up, blue pushed it down; under the "
                       "bars, where the last layer looked.\n";
  for (const auto& c : cases) {
    script += "model " + models + c.name + ".safetensors\n" + c.setup +
              "stage output\nposition 4\noutput-view why\nwhy-method ig\n";
    for (const char* language : {"en", "ko"})
      script += std::string("language ") + language + "\nwhy-part word\nwait 2\nlayout " + c.name + "_" + language +
                ".json\nwhy-part sentence\nwait 2\nlayout " + c.name + "_" + language + "_sentence.json\n";
    script += "why-part word\n";
  }
  ASSERT_EQ(run_app(dir, screen, script), 0) << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const auto& c : cases)
    for (const char* language : {"en", "ko"}) {
      const std::string name = std::string(c.name) + "_" + language;
      const json word = testing::load_json(dir / (name + ".json"));
      const json sentence = testing::load_json(dir / (name + "_sentence.json"));
      ASSERT_TRUE(word.contains("panels") && sentence.contains("panels")) << name;
      EXPECT_FALSE(items_named(word, "why.bar").empty()) << name << ": no bars";
      EXPECT_FALSE(items_named(word, "why.attention").empty()) << name << ": no attention under them";
      EXPECT_EQ(items_named(word, "why.completeness").size(), 1u) << name;
      EXPECT_NE(items_named(word, "why.map").empty(), items_named(word, "why.map_elsewhere").empty())
          << name << ": the maps under the bars, or the line saying where they are";
      EXPECT_FALSE(items_named(sentence, "why.map").empty()) << name << ": no map";
      EXPECT_EQ(items_named(sentence, "why.map").size(), items_named(sentence, "why.attention_map").size()) << name;
      EXPECT_TRUE(items_named(sentence, "why.bar").empty()) << name;
      for (const json* layout : {&word, &sentence})
        if (const std::string found = problems_of(*layout, false); !found.empty()) problems += name + ": " + found;
    }
  EXPECT_EQ(problems, "") << "at " << screen.size << ", UI scale " << screen.scale;
}

INSTANTIATE_TEST_SUITE_P(Screens, Projector, ::testing::ValuesIn(kScreens), screen_name);

// The UI scale in presentation mode: the type grows with it only to 1/25 of the window's height (so 1.5 at 800
// pixels is the same screen as 1), and a larger scale never makes the attention map's cells smaller than half its
// body text nor its share of the stage smaller than 70%; at 1280x800 it changes nothing at all.
TEST(ProjectorScale, ALargerUiScaleNeverShrinksTheMap) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  std::map<std::string, json> layouts;
  for (const Screen& screen : kScreens) {
    const fs::path dir = testing::fresh_output_dir("projector_scale_" + screen.size + "_" + screen.scale);
    ASSERT_EQ(run_app(dir, screen, "present on\nunhover\nattention enc.2.3\nlayout a.json\n"), 0);
    layouts[screen.size + "@" + screen.scale] = testing::load_json(dir / "a.json");
  }
  const auto attention = [&](const std::string& key) {
    for (const json& h : layouts[key]["heatmaps"])
      if (h["name"] == "attention") return h;
    return json();
  };
  for (const char* size : {"1280x800", "1920x1080"}) {
    const json small = attention(std::string(size) + "@1"), large = attention(std::string(size) + "@1.5");
    ASSERT_FALSE(small.is_null() || large.is_null()) << size;
    const float small_font = layouts[std::string(size) + "@1"]["panels"]["font_size"];
    const float large_font = layouts[std::string(size) + "@1.5"]["panels"]["font_size"];
    const float small_cell = (num(small, "y1") - num(small, "y0")) / small["window"][3].get<float>();
    const float large_cell = (num(large, "y1") - num(large, "y0")) / large["window"][3].get<float>();
    EXPECT_GE(large_font, small_font) << size;
    EXPECT_GE(large_cell, 0.5f * large_font - 0.5f) << size;
    if (std::string(size) == "1280x800") {
      EXPECT_EQ(large_font, 32.0f) << "1/25 of 800 pixels";
      EXPECT_FLOAT_EQ(large_cell, small_cell) << "the same screen as at scale 1";
    } else {
      EXPECT_EQ(large_font, 43.0f) << "1/25 of 1080 pixels: 43, not 18 x 1.75 x 1.5 = 47";
    }
  }
}

// Every pause of the three shipped lessons, as the class sees it at this screen and scale: each pause's screen
// fits (nothing the caption names scrolled away), its labels read, its main map (where the stage has one) meets
// the room. The live training of "watch it learn" is not run here (--data names a folder without Multi30k: the stage says so,
// and the shipped timeline plays).
struct LessonScreen {
  std::string lesson;
  Screen screen;
};

class LessonPauses : public ::testing::TestWithParam<LessonScreen> {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
    if (GetParam().lesson.find('.') != std::string::npos &&
        !std::filesystem::exists("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"))
      GTEST_SKIP() << "no Korean and Chinese font (apt-get install fonts-wqy-microhei): the app would speak English";
  }
};

std::vector<LessonScreen> lesson_screens() {
  std::vector<LessonScreen> out;
  for (const char* lesson : {"walkthrough", "why-masks-matter", "watch-it-learn", "translator-to-gpt", "three-shapes",
                           "attention-is-not-explanation"}) {
    for (const Screen& screen : kScreens) out.push_back({lesson, screen});
    // The Korean and Chinese versions (their `language` line switches the app's words) on the smallest screen
    // and the largest type: the words are shorter but the glyphs taller.
    for (const char* code : {"ko", "zh"})
      for (const Screen& screen : {kScreens[0], kScreens[3]}) out.push_back({std::string(lesson) + "." + code, screen});
  }
  return out;
}

std::string lesson_screen_name(const ::testing::TestParamInfo<LessonScreen>& info) {
  std::string name = info.param.lesson + "_" + info.param.screen.size + "_scale_" + info.param.screen.scale;
  for (char& c : name)
    if (c == '-' || c == '.') c = '_';
  return name;
}

std::string pause_file(int pause) {
  std::string name = "p";
  name += std::to_string(pause);
  return name + ".json";
}

TEST_P(LessonPauses, EveryPauseFitsTheScreen) {
  const LessonScreen& p = GetParam();
  const fs::path dir = testing::fresh_output_dir("projector_" + lesson_screen_name({p, 0}));
  // The lesson with a layout dump at each pause instead of the wait (and presentation mode left on at its end).
  std::ifstream in(std::string(STEPFORMER_SOURCE_DIR) + "/assets/lessons/" + p.lesson + ".lesson");
  ASSERT_TRUE(in);
  std::string script = "unhover\n", line;
  int pauses = 0;
  while (std::getline(in, line)) {
    if (line == "pause") script += "layout " + pause_file(++pauses) + "\n";
    else if (line != "present off") script += line + "\n";
  }
  ASSERT_GT(pauses, 5);  // (every shipped lesson has at least 9)
  fs::create_directories(dir / "no-data");  // (a folder without Multi30k's files)
  ASSERT_EQ(run_app(dir, p.screen, script, "--data '" + (dir / "no-data").string() + "'"), 0)
      << "see " << dir / "log.txt";
  std::string problems;
  const std::set<std::string> map_stages(std::begin(kMapStages), std::end(kMapStages));
  for (int i = 1; i <= pauses; ++i) {
    const json layout = testing::load_json(dir / pause_file(i));
    ASSERT_TRUE(layout.contains("panels")) << "pause " << i;
    EXPECT_TRUE(layout["panels"]["present"].get<bool>()) << "pause " << i;
    const size_t dot = p.lesson.find('.');  // walkthrough.ko: in Korean from its first pause
    EXPECT_EQ(layout["app"]["language"], dot == std::string::npos ? "en" : p.lesson.substr(dot + 1)) << "pause " << i;
    const std::string found = problems_of(layout, map_stages.count(layout["app"]["stage"].get<std::string>()) > 0);
    if (!found.empty()) problems += "pause " + std::to_string(i) + ": " + found + "\n";
  }
  EXPECT_EQ(problems, "") << p.lesson << " at " << p.screen.size << ", UI scale " << p.screen.scale;
}

INSTANTIATE_TEST_SUITE_P(Lessons, LessonPauses, ::testing::ValuesIn(lesson_screens()), lesson_screen_name);

}  // namespace
}  // namespace sf::gui
