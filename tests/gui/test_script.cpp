// Scripts: parsing (every mistake named with its line) and a scripted walk through every stage of the app
// under xvfb-run -a, one screenshot per stage, each checked for the heatmaps that stage must show.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "app_under_xvfb.h"
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
  EXPECT_NE(error.find("cannot open the script"), std::string::npos) << error;
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
    {"all-heads", {"head_0_0", "head_1_3"}},
    {"output", {}},
};

TEST(ScriptRun, WalksEveryStageAndScreenshotsIt) {
  const fs::path dir = fs::path(STEPFORMER_TEST_OUTPUT_DIR) / "script";
  fs::create_directories(dir);
  const fs::path script = dir / "walk.txt";
  {
    std::ofstream out(script);
    out << "model " << STEPFORMER_SOURCE_DIR << "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors\n"
        << "sentence Ein Mann mit einer Frau.\n";
    for (const auto& [stage, maps] : kStages)
      out << "stage " << stage << "\nscreenshot " << (dir / (stage + ".png")).string() << "\nlayout "
          << (dir / (stage + ".json")).string() << "\n";
    out << "quit\n";
  }
  for (const auto& [stage, maps] : kStages) fs::remove(dir / (stage + ".png"));
  const std::string cmd = testing::headless_app_command("--no-settings --size 1280x800 --script " + script.string() +
                                                        " > " + (dir / "log.txt").string() + " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "see " << (dir / "log.txt");

  for (const auto& [stage, maps] : kStages) {
    const testing::Image shot = testing::load_png(dir / (stage + ".png"));
    ASSERT_TRUE(shot.pixels) << stage << ": no screenshot";
    EXPECT_EQ(shot.width, 1280);
    EXPECT_EQ(shot.height, 800);
    const unsigned char* pixels = shot.pixels.get();
    std::set<int> colours;
    for (int i = 0; i < shot.width * shot.height; i += 7)
      colours.insert(pixels[3 * i] << 16 | pixels[3 * i + 1] << 8 | pixels[3 * i + 2]);
    EXPECT_GT(colours.size(), 20u) << stage << " looks blank";

    std::ifstream in(dir / (stage + ".json"));
    ASSERT_TRUE(in) << stage << ": no layout";
    const nlohmann::json layout = nlohmann::json::parse(in);
    std::set<std::string> drawn;
    for (const auto& m : layout["heatmaps"]) {
      drawn.insert(m["name"]);
      EXPECT_GT(static_cast<float>(m["x1"]) - static_cast<float>(m["x0"]), 8.0f) << stage << " " << m["name"];
    }
    for (const std::string& m : maps) EXPECT_TRUE(drawn.count(m)) << stage << " does not draw '" << m << "'";
  }
}

}  // namespace
}  // namespace sf::gui
