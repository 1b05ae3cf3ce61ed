// The app under xvfb-run -a, driven by scripts: the model-info panel and the error dialog of a bad model file
// as screenshots (the layout JSON says what the app showed: view, dialog, model), the model kept after the
// failure (the screen after closing the dialog equals the one before), and the settings file remembering the
// session, restoring it at the next start, and a damaged one moved aside.
#include <gtest/gtest.h>

#include <map>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "app_under_xvfb.h"
#include "model/model.h"
#include "export_readers.h"
#include "io/safetensors.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

using testing::fresh_output_dir;
using testing::Image;
using testing::load_json;
using testing::load_png;

// Runs the app headless; `env` goes before it (e.g. XDG_CONFIG_HOME=...). Output to dir/NAME.log.
int run_app(const fs::path& dir, const std::string& name, const std::string& env, const std::string& args) {
  const std::string cmd = "env " + env + " " +
                          testing::headless_app_command("--size 1280x800 " + args + " > " +
                                                        (dir / (name + ".log")).string() + " 2>&1");
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string nan_model(const fs::path& dir) {
  const SafetensorsFile file = SafetensorsFile::open(kTiny);
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (const auto& t : file.tensors()) values.push_back(t.to_floats());
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    if (file.tensors()[i].name == "transformer.decoder.layers.0.linear2.weight") values[i][3] = std::nanf("");
    tensors.push_back({file.tensors()[i].name, file.tensors()[i].shape, values[i]});
  }
  const std::string path = (dir / "diverged.safetensors").string();
  write_safetensors(path, tensors, file.metadata());
  return path;
}

TEST(ModelScreens, ModelInfoAndTheErrorDialogOfABadFile) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const fs::path dir = fresh_output_dir("model_screens");
  const std::string bad = nan_model(dir);
  {
    std::ofstream script(dir / "script.txt");
    script << "model " << kTiny << "\n"                                       // 1
           << "sentence Ein Mann mit einer Frau.\n"                          // 2
           << "stage encoder-attention\n"                                    // 3
           << "screenshot " << (dir / "before.png").string() << "\n"         // 4
           << "layout " << (dir / "before.json").string() << "\n"            // 5
           << "show model-info\n"                                            // 6
           << "screenshot " << (dir / "info.png").string() << "\n"           // 7
           << "layout " << (dir / "info.json").string() << "\n"              // 8
           << "show stage\n"                                                 // 9
           << "model " << bad << "\n"                                        // 10
           << "screenshot " << (dir / "dialog.png").string() << "\n"         // 11
           << "layout " << (dir / "dialog.json").string() << "\n"            // 12
           << "show stage\n"                                                 // 13
           << "wait 3\n"                                                     // 14
           << "screenshot " << (dir / "after.png").string() << "\n"          // 15
           << "layout " << (dir / "after.json").string() << "\n"             // 16
           << "quit\n";
  }
  ASSERT_EQ(run_app(dir, "run", "", "--no-settings --script " + (dir / "script.txt").string()), 0)
      << test::read_bytes(dir / "run.log");
  const std::string log = test::read_bytes(dir / "run.log");
  EXPECT_NE(log.find("script line 10: Tensor 'transformer.decoder.layers.0.linear2.weight' holds NaN at index 3"),
            std::string::npos) << log;  // the table's words for the core's WeightNotFinite (gui/app_state.h error_text)

  const nlohmann::json before = load_json(dir / "before.json"), info = load_json(dir / "info.json"),
                       dialog = load_json(dir / "dialog.json"), after = load_json(dir / "after.json");
  ASSERT_FALSE(before.is_null() || info.is_null() || dialog.is_null() || after.is_null()) << log;

  // The model-info view: no stage maps, the tiny model's file.
  EXPECT_EQ(info["app"]["view"], "model-info");
  EXPECT_EQ(info["app"]["model_path"], kTiny);
  EXPECT_TRUE(info["heatmaps"].empty());
  // Its configuration table: one row per config key, within the window's width (the panel scrolls down), with
  // the file's values.
  const nlohmann::json config = config_to_json(load_model(kTiny).config);
  std::map<std::string, std::string> rows;
  for (const auto& item : info["items"]) {
    if (item["name"] != "model_info.config") continue;
    const std::string text = item["text"];
    rows[text.substr(0, text.find(" = "))] = text.substr(text.find(" = ") + 3);
    EXPECT_GE(item["x0"].get<float>(), 0.0f);
    EXPECT_LE(item["x1"].get<float>(), 1280.0f) << text;
  }
  EXPECT_EQ(rows.size(), config.size()) << "every config key is a row";
  EXPECT_EQ(rows["d_model"], config["d_model"].dump());
  EXPECT_EQ(rows["n_heads"], config["n_heads"].dump());
  EXPECT_EQ(rows["activation"], config["activation"].get<std::string>());

  // The dialog names the file and the problem; the model behind it is the one before.
  EXPECT_EQ(dialog["app"]["dialog"]["title"], "Cannot open the model");
  EXPECT_EQ(dialog["app"]["dialog"]["file"], bad);
  EXPECT_NE(dialog["app"]["dialog"]["problem"].get<std::string>().find("holds NaN at index 3"), std::string::npos);
  EXPECT_NE(dialog["app"]["dialog"]["hint"].get<std::string>().find("pytorch_tutorial_tiny.safetensors, stays loaded"),
            std::string::npos);
  EXPECT_EQ(dialog["app"]["model_path"], kTiny);
  EXPECT_TRUE(after["app"]["dialog"].is_null());
  EXPECT_EQ(after["app"]["view"], "stage");
  EXPECT_EQ(after["heatmaps"], before["heatmaps"]) << "the same maps, at the same places, with the same ranges";

  const Image b = load_png(dir / "before.png"), i = load_png(dir / "info.png"), d = load_png(dir / "dialog.png"),
              a = load_png(dir / "after.png");
  ASSERT_TRUE(b.pixels && i.pixels && d.pixels && a.pixels);
  ASSERT_EQ(b.width, 1280);
  ASSERT_EQ(b.height, 800);
  // After the dialog: the same picture as before it (the kept model, the same sentence and head).
  int differing = 0;
  for (int y = 0; y < b.height; ++y)
    for (int x = 0; x < b.width; ++x)
      differing += std::abs(b.at(x, y)[0] - a.at(x, y)[0]) + std::abs(b.at(x, y)[1] - a.at(x, y)[1]) > 6;
  EXPECT_LT(differing, b.width * b.height / 200) << "after.png differs from before.png in " << differing << " pixels";
  // The dialog sits in the middle: down the centre column runs its title bar, in the style's colour for an
  // active title (ImGui's dark style: 0.16, 0.29, 0.48), which the stage itself never uses there.
  const auto title_rows = [](const Image& image) {
    int rows = 0;
    for (int y = 0; y < image.height; ++y) {
      const unsigned char* p = image.at(image.width / 2, y);
      rows += std::abs(p[0] - 41) <= 3 && std::abs(p[1] - 74) <= 3 && std::abs(p[2] - 122) <= 3;
    }
    return rows;
  };
  EXPECT_GE(title_rows(d), 15) << "no dialog title bar in dialog.png";
  // The problem is drawn, in its light red (1, 0.55, 0.5), where the dialog says it put it.
  nlohmann::json problem;
  for (const auto& item : dialog["items"])
    if (item["name"] == "dialog.problem") problem = item;
  ASSERT_FALSE(problem.is_null()) << "the dialog drew no problem text";
  EXPECT_EQ(problem["text"], dialog["app"]["dialog"]["problem"]);
  int red_text = 0;
  for (int y = static_cast<int>(problem["y0"].get<float>()); y < static_cast<int>(problem["y1"].get<float>()); ++y)
    for (int x = static_cast<int>(problem["x0"].get<float>()); x < static_cast<int>(problem["x1"].get<float>()); ++x) {
      const unsigned char* p = d.at(x, y);
      red_text += p[0] > 200 && std::abs(p[1] - 140) <= 30 && std::abs(p[2] - 128) <= 30;
    }
  EXPECT_GT(red_text, 100) << "the problem's text is not in the picture";
  EXPECT_EQ(title_rows(b), 0);
  EXPECT_GT(std::abs(d.mean_luma(440, 330, 840, 470) - b.mean_luma(440, 330, 840, 470)), 8.0f);
  // The info panel replaces the stage: most of the stage area changes, and it is not blank.
  std::set<int> colours;
  for (int y = 120; y < i.height; y += 3)
    for (int x = 340; x < i.width; x += 3) colours.insert(i.at(x, y)[0] << 16 | i.at(x, y)[1] << 8 | i.at(x, y)[2]);
  EXPECT_GT(colours.size(), 30u);
}

TEST(ModelScreens, SettingsRememberTheSessionAndSurviveDamage) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const fs::path dir = fresh_output_dir("settings_session");
  const fs::path config = dir / "config";
  const fs::path settings = config / "stepformer" / "settings.json";
  const std::string env = "XDG_CONFIG_HOME=" + config.string() + " STEPFORMER_NO_SETTINGS=";

  // --no-settings writes nothing.
  {
    std::ofstream(dir / "quit.txt") << "quit\n";
    ASSERT_EQ(run_app(dir, "none", env, "--no-settings --script " + (dir / "quit.txt").string()), 0);
    EXPECT_FALSE(fs::exists(config));
  }
  // A session: open the tiny model, type a sentence, go to cross-attention; on exit the settings hold it.
  {
    std::ofstream(dir / "session.txt") << "model " << kTiny << "\nsentence Zwei Hunde.\nstage cross-attention\nwait 2\nquit\n";
    ASSERT_EQ(run_app(dir, "session", env, "--script " + (dir / "session.txt").string()), 0) << test::read_bytes(dir / "session.log");
    const nlohmann::json s = load_json(settings);
    ASSERT_FALSE(s.is_null()) << "no " << settings;
    EXPECT_EQ(s["last_model"], kTiny);
    EXPECT_EQ(s["last_sentence"], "Zwei Hunde.");
    EXPECT_EQ(s["last_stage"], "cross-attention");
    ASSERT_GE(s["recent_models"].size(), 2u);  // the shipped model opened at start, then the tiny one
    EXPECT_EQ(s["recent_models"][0], kTiny);
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(settings.parent_path())) files.push_back(e.path().filename().string());
    EXPECT_EQ(files, (std::vector<std::string>{"settings.json"})) << "no temporary files left";
  }
  // The next start, with no options, comes back to it.
  {
    ASSERT_EQ(run_app(dir, "restore", env, "--screenshot " + (dir / "restore.png").string() + " --layout-json " +
                                               (dir / "restore.json").string()), 0) << test::read_bytes(dir / "restore.log");
    const nlohmann::json j = load_json(dir / "restore.json");
    EXPECT_EQ(j["app"]["model_path"], kTiny);
    EXPECT_EQ(j["app"]["sentence"], "Zwei Hunde.");
    EXPECT_EQ(j["app"]["stage"], "cross-attention");
    bool attention = false;
    for (const auto& h : j["heatmaps"]) attention |= h["name"] == "attention" && h["rows"] > 0;
    EXPECT_TRUE(attention) << "the cross-attention stage is back";
  }
  // A damaged file: reported, moved aside as it was, the defaults used, the app runs; a fresh file follows.
  {
    std::ofstream(settings) << "{\"last_stage\": \"cross-att";
    ASSERT_EQ(run_app(dir, "damaged", env, "--screenshot " + (dir / "damaged.png").string() + " --layout-json " +
                                               (dir / "damaged.json").string()), 0) << test::read_bytes(dir / "damaged.log");
    const std::string log = test::read_bytes(dir / "damaged.log");
    EXPECT_NE(log.find("is damaged: not valid JSON"), std::string::npos) << log;
    EXPECT_EQ(test::read_bytes(settings.string() + ".bad"), "{\"last_stage\": \"cross-att");
    const nlohmann::json j = load_json(dir / "damaged.json");
    EXPECT_EQ(j["app"]["dialog"]["title"], "Settings file");
    EXPECT_NE(j["app"]["dialog"]["problem"].get<std::string>().find(settings.string() + ".bad"), std::string::npos);
    EXPECT_NE(j["app"]["model_path"], kTiny) << "the defaults: the shipped model";
    const nlohmann::json fresh = load_json(settings);
    ASSERT_FALSE(fresh.is_null());
    EXPECT_EQ(fresh["last_stage"], "tokens");
  }
}

}  // namespace
}  // namespace sf::gui
