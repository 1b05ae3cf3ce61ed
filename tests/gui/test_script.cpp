// Scripts: parsing (every mistake named with its line) and a scripted walk through every stage of the app
// under xvfb-run -a, one screenshot per stage, each checked for the heatmaps that stage must show.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <tuple>
#include <algorithm>
#include <functional>

#include "app_under_xvfb.h"
#include "gui/app_state.h"
#include "gui/script/script.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

TEST(ScriptParse, CommandsAndArguments) {
  std::string error;
  const auto s = parse_script("# comment\n\nmodel a b.safetensors\nsentence Ein Mann .\nstage tokens\nhover 1 2\nquit\n",
                              "t", error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->commands.size(), 5u);
  EXPECT_EQ(s->commands[0].args[0], "a b.safetensors");
  EXPECT_EQ(s->commands[1].args[0], "Ein Mann .");
  EXPECT_EQ(s->commands[3].args, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s->commands[4].line, 7);
}

TEST(ScriptParse, MistakesAreNamedWithTheirLine) {
  std::string error;
  EXPECT_FALSE(parse_script("stage tokens\nfly away\n", "lesson.txt", error));
  EXPECT_NE(error.find("lesson.txt:2: unknown command 'fly'"), std::string::npos) << error;
  EXPECT_FALSE(parse_script("hover 1\n", "x", error));
  EXPECT_NE(error.find("x:1: 'hover' takes 2 argument(s)"), std::string::npos) << error;
  EXPECT_FALSE(parse_script("wait soon\n", "x", error));
  EXPECT_NE(error.find("needs whole numbers"), std::string::npos) << error;
  EXPECT_FALSE(parse_script("sentence\n", "x", error));
  EXPECT_NE(error.find("'sentence' needs an argument"), std::string::npos) << error;
  EXPECT_FALSE(parse_script_file("/nonexistent/lesson.txt", error));
  EXPECT_NE(error.find("cannot open '/nonexistent/lesson.txt': No such file"), std::string::npos) << error;
}

// Each stage and the heatmaps it must draw.
const std::vector<std::pair<std::string, std::vector<std::string>>> kStages = {
    {"tokens", {}},
    {"embedding", {"embedding", "encoder_input"}},
    {"positional", {"positional_encoding", "positional_similarity"}},
    {"encoder-qkv", {"q", "k", "v"}},
    {"encoder-attention", {"attention"}},
    {"concat-heads", {"heads_concat", "attention_output"}},
    {"encoder-add-norm", {"residual_sum", "layer_norm"}},
    {"encoder-feed-forward", {"ffn_hidden_pre", "ffn_hidden"}},
    {"decoder-attention", {"attention"}},
    {"cross-attention", {"attention"}},
    {"decoder-add-norm", {"residual_sum", "layer_norm"}},
    {"decoder-feed-forward", {"ffn_hidden_pre", "ffn_hidden"}},
    {"all-heads", {"head_1_1", "head_3_8"}},  // layer and head numbered from 1
    {"output", {}},
};

// The shipped model on a sentence with one word its vocabulary does not hold.
const std::string kWalkModel = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";
const std::string kWalkSentence = "Ein Quantenphysiker mit einer Frau.";

bool near_colour(const unsigned char* p, int r, int g, int b, int tolerance = 3) {
  return std::abs(p[0] - r) <= tolerance && std::abs(p[1] - g) <= tolerance && std::abs(p[2] - b) <= tolerance;
}

std::vector<nlohmann::json> items_named(const nlohmann::json& layout, const std::string& prefix) {
  std::vector<nlohmann::json> out;
  for (const auto& item : layout["items"])
    if (item["name"].get<std::string>().rfind(prefix, 0) == 0) out.push_back(item);
  return out;
}

// The tokens stage: one box per source token, in order, with the word as typed (lowercased: the model's
// tokenizer), an unknown word's box red, special tokens grey, words blue; and one box per translated token.
void check_tokens_stage(const testing::Image& shot, const nlohmann::json& layout, const AppState& state) {
  const std::vector<std::string> want = {"<bos>", "ein", "quantenphysiker", "mit", "einer", "frau", ".", "<eos>"};
  const auto boxes = items_named(layout, "token.source");
  ASSERT_EQ(boxes.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(boxes[i]["index"], static_cast<int>(i));
    EXPECT_EQ(boxes[i]["text"], want[i]) << "source token " << i;
    // The fill colour just inside the box's left edge, halfway down (clear of the centred text).
    const int x = static_cast<int>(boxes[i]["x0"].get<float>()) + 2;
    const int y = static_cast<int>((boxes[i]["y0"].get<float>() + boxes[i]["y1"].get<float>()) / 2);
    const unsigned char* p = shot.at(x, y);
    if (i == 2) EXPECT_TRUE(near_colour(p, 170, 40, 40)) << "the unknown word's box is not red";
    else if (want[i][0] == '<') EXPECT_TRUE(near_colour(p, 90, 90, 90)) << want[i] << "'s box is not grey";
    else EXPECT_TRUE(near_colour(p, 40, 90, 150)) << want[i] << "'s box is not blue";
  }
  const auto targets = items_named(layout, "token.target");
  ASSERT_EQ(targets.size(), state.translation().size());
  for (size_t t = 0; t < targets.size(); ++t)
    EXPECT_EQ(targets[t]["text"], state.target_token(state.translation()[t])) << "translated token " << t;
}

// The output stage at the decoder position it follows (the last: the distribution <eos> came from): the ten
// likeliest words, longest bar first, each bar's length its probability (the trace's), the chosen word's bar
// yellow and the others blue.
void check_output_stage(const testing::Image& shot, const nlohmann::json& layout, const AppState& state) {
  const int position = layout["app"]["output_position"];
  EXPECT_EQ(position, static_cast<int>(state.trace().tgt.ids.size()) - 1) << "the output stage follows the decoding";
  const auto bars = items_named(layout, "output_bar");
  ASSERT_EQ(bars.size(), 10u);
  std::vector<std::pair<float, int>> ranked;
  for (Eigen::Index v = 0; v < state.trace().probs.cols(); ++v) ranked.push_back({state.trace().probs(position, v), static_cast<int>(v)});
  std::partial_sort(ranked.begin(), ranked.begin() + 10, ranked.end(), std::greater<>());
  const float px_per_probability = (bars[0]["x1"].get<float>() - bars[0]["x0"].get<float>()) / ranked[0].first;
  int chosen = 0;
  for (size_t r = 0; r < bars.size(); ++r) {
    EXPECT_EQ(bars[r]["text"], state.target_token(ranked[r].second)) << "candidate " << r;
    EXPECT_NEAR(bars[r]["value"].get<float>(), ranked[r].first, 1e-6f) << "candidate " << r;
    const float width = bars[r]["x1"].get<float>() - bars[r]["x0"].get<float>();
    EXPECT_NEAR(width, std::max(1.0f, ranked[r].first * px_per_probability), 1.5f) << "candidate " << r;
    const bool is_chosen = bars[r]["name"] == "output_bar.chosen";
    chosen += is_chosen;
    EXPECT_EQ(is_chosen, ranked[r].second == state.translation()[static_cast<size_t>(position)]) << "candidate " << r;
    if (width < 3) continue;
    const unsigned char* p = shot.at(static_cast<int>(bars[r]["x0"].get<float>()) + 1,
                                     static_cast<int>((bars[r]["y0"].get<float>() + bars[r]["y1"].get<float>()) / 2));
    if (is_chosen) EXPECT_TRUE(near_colour(p, 240, 190, 40)) << "the chosen word's bar is not yellow";
    else EXPECT_TRUE(near_colour(p, 70, 130, 200)) << "candidate " << r << "'s bar is not blue";
  }
  EXPECT_EQ(chosen, 1) << "exactly one bar is the chosen word";
}

TEST(ScriptRun, WalksEveryStageAndScreenshotsIt) {
  const fs::path dir = fs::path(STEPFORMER_TEST_OUTPUT_DIR) / "script";
  fs::create_directories(dir);
  const fs::path script = dir / "walk.txt";
  {
    std::ofstream out(script);
    out << "model " << kWalkModel << "\nsentence " << kWalkSentence << "\nunhover\n";
    for (const auto& [stage, maps] : kStages)
      out << "stage " << stage << "\nscreenshot " << (dir / (stage + ".png")).string() << "\nlayout "
          << (dir / (stage + ".json")).string() << "\n";
    out << "quit\n";
  }
  for (const auto& [stage, maps] : kStages) fs::remove(dir / (stage + ".png")), fs::remove(dir / (stage + ".json"));
  const std::string cmd = testing::headless_app_command("--no-settings --size 1280x800 --script " + script.string() +
                                                        " > " + (dir / "log.txt").string() + " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "see " << (dir / "log.txt");
  AppState state;  // the same model and sentence, computed here
  ASSERT_TRUE(state.load_model(kWalkModel)) << state.error();
  ASSERT_TRUE(state.set_sentence(kWalkSentence)) << state.error();

  for (const auto& [stage, maps] : kStages) {
    const testing::Image shot = testing::load_png(dir / (stage + ".png"));
    ASSERT_TRUE(shot.pixels) << stage << ": no screenshot";
    EXPECT_EQ(shot.width, 1280);
    EXPECT_EQ(shot.height, 800);
    const nlohmann::json layout = testing::load_json(dir / (stage + ".json"));
    ASSERT_FALSE(layout.is_null()) << stage << ": no layout";
    std::set<std::string> drawn;
    for (const auto& m : layout["heatmaps"]) {
      drawn.insert(m["name"]);
      EXPECT_GT(static_cast<float>(m["x1"]) - static_cast<float>(m["x0"]), 8.0f) << stage << " " << m["name"];
    }
    for (const std::string& m : maps) EXPECT_TRUE(drawn.count(m)) << stage << " does not draw '" << m << "'";
    // The attention stages show their own kind of attention, with its shape: queries x keys.
    const int S = static_cast<int>(state.source_tokens().size()), T = static_cast<int>(state.trace().tgt.ids.size());
    const std::map<std::string, std::tuple<std::string, int, int>> attention = {
        {"encoder-attention", {"enc.", S, S}}, {"decoder-attention", {"dec.", T, T}}, {"cross-attention", {"cross.", T, S}}};
    if (const auto it = attention.find(stage); it != attention.end()) {
      const auto& [kind, rows, cols] = it->second;
      EXPECT_EQ(layout["app"]["attention"].get<std::string>().rfind(kind, 0), 0u) << stage << ": " << layout["app"]["attention"];
      for (const auto& m : layout["heatmaps"])
        if (m["name"] == "attention") {
          EXPECT_EQ(m["rows"], rows) << stage;
          EXPECT_EQ(m["cols"], cols) << stage;
        }
    }
    EXPECT_EQ(layout["app"]["stage"], stage);
    if (stage == "tokens") check_tokens_stage(shot, layout, state);
    if (stage == "output") check_output_stage(shot, layout, state);
  }
}

}  // namespace
}  // namespace sf::gui
