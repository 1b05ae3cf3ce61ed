// The app as a user starts it: under xvfb-run -a, with --screenshot. Checks the PNG itself: the size asked
// for, not blank, and the heatmap area shows the colormap's colours where the data put them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "app_under_xvfb.h"
#include "util/paths.h"
#include "gui/render/colormap.h"
#include "gui/script/script.h"
#include "gui/stages.h"
#include "nn/positional_encoding.h"
#include "../unit/command_run.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

using RunResult = sf::testing::CommandRun;
RunResult run(const std::string& command) { return sf::testing::run_command(command + " 2>&1"); }

std::string output_path(const std::string& name) {
  fs::create_directories(STEPFORMER_TEST_OUTPUT_DIR);
  return std::string(STEPFORMER_TEST_OUTPUT_DIR) + "/" + name;
}

// --no-settings: the user's last session must not change what the tests see.
std::string headless(const std::string& args) { return testing::headless_app_command("--no-settings " + args); }

using testing::Image;
using testing::load_png;

TEST(AppSmoke, HelpAndVersionExitZero) {
  RunResult help = run(std::string(STEPFORMER_APP_PATH) + " --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--screenshot PATH"), std::string::npos) << help.output;
  // Every stage the parser accepts (the table stage_from_name reads) is listed.
  std::string name;
  const std::string all = stage_names();
  const std::string last = all.substr(all.rfind(' ') + 1);
  for (std::istringstream names(all); std::getline(names, name, ',');) {
    if (name.front() == ' ') name.erase(0, 1);
    // (the last is followed by the end of the line, or the note on the stages a decoder-only model lacks)
    const bool listed = name == last ? help.output.find(" " + name + "\n") != std::string::npos ||
                                           help.output.find(" " + name + " (") != std::string::npos
                                     : help.output.find(" " + name + ",") != std::string::npos;
    EXPECT_TRUE(listed) << "--help does not list the stage '" << name << "':\n" << help.output;
  }
  // And every command a script may use (the table parse_script reads), each as a whole word of the list.
  for (std::istringstream names(script_command_names()); std::getline(names, name, ',');) {
    if (name.front() == ' ') name.erase(0, 1);
    const bool listed = help.output.find(" " + name + ",") != std::string::npos ||
                        help.output.find(" " + name + "\n") != std::string::npos;
    EXPECT_TRUE(listed) << "--help does not list the script command '" << name << "':\n" << help.output;
  }
  RunResult version = run(std::string(STEPFORMER_APP_PATH) + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("stepformer "), std::string::npos) << version.output;
}

TEST(AppSmoke, BadOptionsAreNamed) {
  RunResult r = run(std::string(STEPFORMER_APP_PATH) + " --size 12by34");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--size needs WIDTHxHEIGHT"), std::string::npos) << r.output;
  r = run(std::string(STEPFORMER_APP_PATH) + " --frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown option '--frobnicate'"), std::string::npos) << r.output;
}

// --device cuda where no GPU is usable is an error naming why (exit 1), before any window; auto and cpu then
// compute on the CPU. With a GPU the option is taken (the views' device: test_app_state's ViewDevice test).
TEST(AppSmoke, DeviceCudaWithoutAGpuIsAnErrorNamingWhy) {
  if (backend_info().cuda_available) GTEST_SKIP() << "a GPU is usable here: --device cuda is taken";
  const RunResult r = run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + STEPFORMER_APP_PATH +
                          " --no-settings --device cuda --screenshot " + output_path("never-cuda.png"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--device cuda: no usable GPU (" + backend_info().description + ")"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("cannot open a display"), std::string::npos) << "checked before the window:\n" << r.output;
  EXPECT_FALSE(fs::exists(output_path("never-cuda.png")));
  const RunResult automatic = run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + STEPFORMER_APP_PATH +
                                  " --no-settings --device auto --screenshot " + output_path("never-auto.png"));
  EXPECT_EQ(automatic.exit_code, 3) << "auto goes on to open the window:\n" << automatic.output;
}

TEST(AppSmoke, WithoutDisplayItSaysSoAndNamesXvfb) {
  RunResult r = run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + STEPFORMER_APP_PATH + " --no-settings --screenshot " +
                    output_path("never.png"));
  EXPECT_EQ(r.exit_code, 3) << "docs/user-guide.md documents exit code 3 without a display";
  EXPECT_NE(r.output.find("cannot open a display"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("xvfb-run -a"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(output_path("never.png")));
}

TEST(AppSmoke, FrameLogTimesEveryFrameAndNamesWhatItRecomputed) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const std::string script = output_path("frame_log.script"), log = output_path("frames.log");
  std::ofstream(script) << "wait 3\nhead-off dec.2.3\nwait 2\nreset\nwait 2\nquit\n";
  fs::remove(log);
  // (the word model, whose translation the head changes: the subword default's keeps its words)
  const RunResult r = run(headless("--stage decoder-attention --model " + shipped_model_path("de-en") + " --frame-log " + log +
                                   " --script " + script));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("# frame  frame_ms  build_ms  draw_ms  recompute_ms", 0), 0u) << line;
  int frames = 0;
  std::vector<std::string> recomputed;  // "what" of the frames that recomputed
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int frame = 0;
    double total = 0, build = 0, draw = 0;
    std::string recompute;
    ASSERT_TRUE(fields >> frame >> total >> build >> draw >> recompute) << line;
    EXPECT_EQ(frame, ++frames);
    EXPECT_NEAR(total, build + draw, 0.02) << line;
    if (recompute == "-") continue;
    // The decoding's own time, on the frame that shows its result: it ran on a worker, possibly across frames
    // (a frame waits for it at most 16 ms), so it is not part of this frame's build.
    EXPECT_GT(std::stod(recompute), 0.0) << line;
    std::string what;
    std::getline(fields, what);
    recomputed.push_back(what);
  }
  EXPECT_GE(frames, 8);
  // The first translation, the head switched off (the translation loses "is"), the reset.
  ASSERT_EQ(recomputed.size(), 3u) << r.output;
  EXPECT_NE(recomputed[1].find("1 head off | a man in an orange shirt standing on the street."), std::string::npos)
      << recomputed[1];
  EXPECT_NE(recomputed[2].find("as trained | a man in an orange shirt is standing on the street."), std::string::npos)
      << recomputed[2];
  // A log that cannot be written is named, and the app stops before it opens a window (no display needed).
  const RunResult bad = run(std::string("env -u DISPLAY ") + STEPFORMER_APP_PATH +
                            " --no-settings --frame-log /nonexistent-dir/frames.log --frames 1 --screenshot " +
                            output_path("never2.png"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("cannot write the frame log: cannot write '/nonexistent-dir/frames.log'"), std::string::npos) << bad.output;
}

TEST(AppSmoke, ScreenshotShowsTheHeatmapInColormapColours) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const std::string png = output_path("smoke.png"), layout = output_path("smoke.json");
  fs::remove(png);
  const RunResult r = run(headless("--stage positional --size 1100x720 --frames 3 --screenshot " + png + " --layout-json " + layout));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const Image image = load_png(png);
  ASSERT_TRUE(image.pixels) << "cannot read " << png;
  EXPECT_EQ(image.width, 1100);
  EXPECT_EQ(image.height, 720);

  // Not blank: a real frame has many distinct colours.
  std::set<int> colours;
  for (int y = 0; y < image.height; y += 3)
    for (int x = 0; x < image.width; x += 3) {
      const unsigned char* p = image.at(x, y);
      colours.insert(p[0] << 16 | p[1] << 8 | p[2]);
    }
  EXPECT_GT(colours.size(), 50u);

  std::ifstream in(layout);
  ASSERT_TRUE(in) << "no layout file";
  const nlohmann::json j = nlohmann::json::parse(in);
  nlohmann::json h;
  for (const auto& placed : j.at("heatmaps"))
    if (placed["name"] == "positional_encoding") h = placed;
  ASSERT_FALSE(h.is_null()) << "no positional-encoding heatmap on screen";
  const int rows = h["rows"], cols = h["cols"];
  const float x0 = h["x0"], y0 = h["y0"], x1 = h["x1"], y1 = h["y1"];
  // sin and cos lie in [-1, 1]: the map's colours span exactly that (not the app's own idea of the range), on
  // the diverging scale for signed values.
  EXPECT_EQ(h["colormap"], "diverging");
  const float lo = -1.0f, hi = 1.0f;
  EXPECT_EQ(h["lo"].get<float>(), lo);
  EXPECT_EQ(h["hi"].get<float>(), hi);
  ASSERT_GT(x1 - x0, 100.0f);
  ASSERT_GT(y1 - y0, 100.0f);

  // Every sampled cell's centre pixel is the colormap colour of the value the data put there.
  const Mat pe = sinusoidal_positional_encoding(rows, cols);
  int checked = 0, matched = 0;
  for (int row = 0; row < rows; row += 5)
    for (int col = 0; col < cols; col += 7) {
      const int x = static_cast<int>(x0 + (col + 0.5f) * (x1 - x0) / cols);
      const int y = static_cast<int>(y0 + (row + 0.5f) * (y1 - y0) / rows);
      const Rgb expect = colormap_rgb(Colormap::Diverging, colormap_position(pe(row, col), lo, hi));
      const unsigned char* p = image.at(x, y);
      const float err = std::max({std::abs(p[0] / 255.0f - expect.r), std::abs(p[1] / 255.0f - expect.g),
                                  std::abs(p[2] / 255.0f - expect.b)});
      ++checked;
      if (err <= 3.0f / 255.0f) ++matched;
    }
  // Cells at most one pixel wide can land on a neighbour at a rounding edge; all others must match.
  EXPECT_GE(matched, checked * 97 / 100) << matched << " of " << checked << " cells have the colormap colour";
}

}  // namespace
}  // namespace sf::gui
