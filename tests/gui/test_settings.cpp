// Settings and the last session: the JSON round trip, the recent-files list, a damaged file moved aside (never
// lost, never overwritten) with the defaults used, atomic writes that leave no temporary file, the once-a-second
// debounce, and how the last session fills in the command line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "gui/options.h"
#include "gui/settings.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("stepformer-settings-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Settings example() {
  Settings s;
  s.recent_models = {"/models/b.safetensors", "/models/a.safetensors"};
  s.last_model = "/models/b.safetensors";
  s.last_sentence = "Zwei Hunde spielen im Schnee.";
  s.last_stage = "cross-attention";
  s.ui_scale = 1.5f;
  return s;
}

TEST(Settings, RoundTripThroughTheFile) {
  TempDir dir;
  const std::string path = dir.file("stepformer/settings.json");  // the folder does not exist yet
  ASSERT_EQ(write_settings(example(), path), "");
  const nlohmann::json j = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["last_stage"], "cross-attention");
  EXPECT_EQ(j["recent_models"][0], "/models/b.safetensors");
  EXPECT_FLOAT_EQ(j["ui_scale"].get<float>(), 1.5f);
  const SettingsRead r = read_settings(path);
  EXPECT_EQ(r.problem, "");
  EXPECT_TRUE(r.settings == example());
  EXPECT_EQ(r.settings.last_sentence, "Zwei Hunde spielen im Schnee.");
}

TEST(Settings, MissingFileGivesDefaultsQuietly) {
  TempDir dir;
  const SettingsRead r = read_settings(dir.file("settings.json"));
  EXPECT_EQ(r.problem, "");
  EXPECT_TRUE(r.settings == Settings{});
  EXPECT_FALSE(fs::exists(dir.file("settings.json")));
}

TEST(Settings, RecentFilesMostRecentFirstAtMostEight) {
  Settings s;
  for (int i = 0; i < 10; ++i) add_recent_model(s, "/m/" + std::to_string(i) + ".safetensors");
  ASSERT_EQ(s.recent_models.size(), 8u);
  EXPECT_EQ(s.recent_models.front(), "/m/9.safetensors");
  EXPECT_EQ(s.recent_models.back(), "/m/2.safetensors");
  add_recent_model(s, "/m/5.safetensors");  // opened again: moves to the front, not listed twice
  ASSERT_EQ(s.recent_models.size(), 8u);
  EXPECT_EQ(s.recent_models[0], "/m/5.safetensors");
  EXPECT_EQ(s.recent_models[1], "/m/9.safetensors");
  EXPECT_EQ(std::count(s.recent_models.begin(), s.recent_models.end(), "/m/5.safetensors"), 1);
  remove_recent_model(s, "/m/9.safetensors");
  EXPECT_EQ(s.recent_models.size(), 7u);
  EXPECT_EQ(s.recent_models[1], "/m/8.safetensors");

  // A file with duplicates and more than eight entries is read back cleaned, order kept.
  nlohmann::json j = {{"recent_models", {"/a", "/b", "/a", "/c", "/d", "/e", "/f", "/g", "/h", "/i"}}};
  const Settings read = settings_from_json(j);
  EXPECT_EQ(read.recent_models, (std::vector<std::string>{"/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h"}));
}

TEST(Settings, BadJsonIsMovedAsideAndTheDefaultsUsed) {
  TempDir dir;
  const std::string path = dir.file("settings.json");
  const std::string damaged = "{\"recent_models\": [\"/a.safetensors\",";  // cut off mid-write by an old editor
  write_text(path, damaged);
  const SettingsRead r = read_settings(path);
  EXPECT_TRUE(r.settings == Settings{});
  EXPECT_NE(r.problem.find("is damaged: not valid JSON"), std::string::npos) << r.problem;
  EXPECT_NE(r.problem.find("moved to '" + path + ".bad'"), std::string::npos) << r.problem;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(slurp(path + ".bad"), damaged) << "the damaged file must be kept as it was";
}

TEST(Settings, WrongTypesAreNamed) {
  TempDir dir;
  const std::string path = dir.file("settings.json");
  const std::pair<std::string, std::string> cases[] = {
      {R"({"recent_models": "/a.safetensors"})", "'recent_models' must be a list of paths, found \"/a.safetensors\""},
      {R"({"recent_models": ["/a", 3]})", "'recent_models' must be a list of paths, found 3"},
      {R"({"last_sentence": 12})", "'last_sentence' must be a string, found 12"},
      {R"({"ui_scale": "big"})", "'ui_scale' must be a number from 0.5 to 4, found \"big\""},
      {R"({"ui_scale": 40})", "'ui_scale' must be a number from 0.5 to 4, found 40"},
      {R"([1, 2])", "the file holds array, not a JSON object"},
  };
  // Each damaged file goes to the first free name, .bad, .bad.2, ...: the earlier copies are all kept.
  int n = 0;
  for (const auto& [text, message] : cases) {
    write_text(path, text);
    const SettingsRead r = read_settings(path);
    EXPECT_TRUE(r.settings == Settings{}) << text;
    EXPECT_NE(r.problem.find(message), std::string::npos) << text << " -> " << r.problem;
    const std::string aside = path + ".bad" + (++n == 1 ? "" : "." + std::to_string(n));
    EXPECT_NE(r.problem.find("moved to '" + aside + "'"), std::string::npos) << r.problem;
    EXPECT_FALSE(fs::exists(path));
  }
  n = 0;
  for (const auto& [text, message] : cases)
    EXPECT_EQ(slurp(path + ".bad" + (++n == 1 ? "" : "." + std::to_string(n))), text) << "an earlier copy was lost";
}

TEST(Settings, UnknownKeysAreIgnored) {
  const Settings s = settings_from_json({{"version", 7}, {"colour", "teal"}, {"last_stage", "output"}});
  EXPECT_EQ(s.last_stage, "output");
}

TEST(Settings, TheStoreNeverWritesOverTheDamagedFile) {
  TempDir dir;
  const std::string path = dir.file("settings.json");
  write_text(path, "not json");
  {
    SettingsStore store(path);
    const std::string problem = store.problem();
    EXPECT_NE(problem.find("The settings file '" + path + "' is damaged"), std::string::npos) << problem;
    EXPECT_NE(problem.find(path + ".bad"), std::string::npos) << "names where the damaged file went: " << problem;
    EXPECT_EQ(store.take_problem(), problem) << "the first take is the problem";
    EXPECT_EQ(store.take_problem(), "") << "reported once";
    EXPECT_EQ(store.problem(), problem) << "the problem stays readable after it was taken";
    Settings s = store.settings();
    s.last_stage = "embedding";
    store.update(s);
  }  // the destructor flushes
  EXPECT_EQ(slurp(path + ".bad"), "not json");
  EXPECT_EQ(nlohmann::json::parse(slurp(path))["last_stage"], "embedding");
}

TEST(Settings, AtomicWriteLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.file("settings.json");
  Settings s = example();
  ASSERT_EQ(write_settings(s, path), "");
  s.last_stage = "output";
  ASSERT_EQ(write_settings(s, path), "");  // replaces the file
  EXPECT_EQ(entries(dir.path), (std::vector<std::string>{"settings.json"}));
  EXPECT_EQ(read_settings(path).settings.last_stage, "output");

  // A folder where the file should go: reported, no temporary file left, nothing touched.
  const std::string blocked = dir.file("blocked.json");
  fs::create_directories(fs::path(blocked) / "inside");
  const std::string error = write_settings(s, blocked);
  EXPECT_NE(error.find("is a folder"), std::string::npos) << error;
  EXPECT_EQ(entries(dir.path), (std::vector<std::string>{"blocked.json", "settings.json"}));
  EXPECT_TRUE(fs::exists(fs::path(blocked) / "inside"));

  // A folder that cannot be created (a file is in the way).
  write_text(dir.file("plain"), "x");
  EXPECT_NE(write_settings(s, dir.file("plain/settings.json")).find("cannot create the folder"), std::string::npos);
}

TEST(Settings, WritesAtMostOncePerIntervalAndOnFlush) {
  TempDir dir;
  const std::string path = dir.file("settings.json");
  using namespace std::chrono_literals;
  SettingsStore store(path, 1s);
  const auto t0 = SettingsStore::Clock::now();
  EXPECT_FALSE(store.save_if_due(t0)) << "nothing changed";
  EXPECT_FALSE(fs::exists(path));
  Settings s;
  s.last_stage = "embedding";
  store.update(s);
  EXPECT_TRUE(store.save_if_due(t0));
  s.last_stage = "positional";
  store.update(s);
  EXPECT_FALSE(store.save_if_due(t0 + 500ms)) << "too soon after the last write";
  EXPECT_EQ(read_settings(path).settings.last_stage, "embedding");
  s.last_stage = "output";
  store.update(s);
  EXPECT_TRUE(store.save_if_due(t0 + 1100ms));
  EXPECT_EQ(read_settings(path).settings.last_stage, "output");
  s.last_stage = "tokens";
  store.update(s);
  store.flush();
  EXPECT_EQ(store.writes(), 3);
  EXPECT_EQ(read_settings(path).settings.last_stage, "tokens");
  store.flush();
  EXPECT_EQ(store.writes(), 3) << "flush without a change writes nothing";
  // A change of any one field is a change to save: each alone makes the next flush write.
  const std::vector<std::function<void(Settings&)>> changes = {
      [](Settings& x) { x.last_sentence = "Ein Hund."; },
      [](Settings& x) { x.last_model = "/m.safetensors"; },
      [](Settings& x) { x.recent_models = {"/m.safetensors"}; },
      [](Settings& x) { x.ui_scale = 2.0f; },
      [](Settings& x) { x.last_stage = "output"; }};
  int writes = store.writes();
  for (const auto& change : changes) {
    change(s);
    store.update(s);
    store.flush();
    EXPECT_EQ(store.writes(), ++writes);
  }
  EXPECT_TRUE(read_settings(path).settings == s);
  EXPECT_EQ(read_settings(path).settings.last_sentence, "Ein Hund.");
}

TEST(Settings, AFailedWriteIsReportedOnceAndNotRetriedEverySecond) {
  TempDir dir;
  write_text(dir.file("plain"), "x");  // a file where the settings folder should be
  SettingsStore store(dir.file("plain/settings.json"));
  EXPECT_EQ(store.problem(), "");
  Settings s;
  s.last_stage = "output";
  store.update(s);
  EXPECT_FALSE(store.save_if_due());
  EXPECT_NE(store.problem().find("Cannot save the settings"), std::string::npos) << store.problem();
  EXPECT_NE(store.take_problem(), "");
  s.last_stage = "tokens";
  store.update(s);
  EXPECT_FALSE(store.save_if_due(SettingsStore::Clock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(store.take_problem(), "") << "reported once";
  EXPECT_EQ(store.writes(), 0);
  EXPECT_EQ(slurp(dir.file("plain")), "x");
}

TEST(Settings, DisabledStoreWritesNothing) {
  SettingsStore store;
  Settings s;
  s.last_stage = "output";
  store.update(s);
  EXPECT_FALSE(store.save_if_due());
  store.flush();
  EXPECT_EQ(store.writes(), 0);
  EXPECT_EQ(store.settings().last_stage, "output") << "kept in memory for the session";
}

TEST(Settings, PathFollowsXdgConfigHome) {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CONFIG_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(default_settings_path(), "/tmp/xdg-test/stepformer/settings.json");
  ::unsetenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  if (home) {
    EXPECT_EQ(default_settings_path(), std::string(home) + "/.config/stepformer/settings.json");
  }
  if (old_xdg) ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
}

TEST(Settings, TheLastSessionFillsWhatTheCommandLineLeftOpen) {
  TempDir dir;
  const std::string model = dir.file("m.safetensors");
  write_text(model, "x");
  Settings s = example();
  s.last_model = model;

  AppOptions fresh;
  apply_last_session(s, fresh);
  EXPECT_EQ(fresh.model_path, model);
  EXPECT_FALSE(fresh.fallback_model_path.empty()) << "if the last model fails, the shipped one opens";
  EXPECT_EQ(fresh.sentence, "Zwei Hunde spielen im Schnee.");
  EXPECT_EQ(fresh.stage, "cross-attention");
  EXPECT_FLOAT_EQ(fresh.ui_scale, 1.5f);

  AppOptions given;
  given.model_path = "/given.safetensors";
  given.model_given = true;
  given.stage = "output";
  given.stage_given = true;
  apply_last_session(s, given);
  EXPECT_EQ(given.model_path, "/given.safetensors");
  EXPECT_EQ(given.stage, "output");
  EXPECT_EQ(given.sentence, "Zwei Hunde spielen im Schnee.");
  EXPECT_FLOAT_EQ(given.ui_scale, 1.5f);

  // A sentence and a text size given on the command line win too.
  AppOptions typed;
  typed.sentence = "Ein Hund.";
  typed.sentence_given = true;
  typed.ui_scale = 2.0f;
  typed.ui_scale_given = true;
  apply_last_session(s, typed);
  EXPECT_EQ(typed.sentence, "Ein Hund.");
  EXPECT_FLOAT_EQ(typed.ui_scale, 2.0f);
  EXPECT_EQ(typed.model_path, model);

  // A last model that is gone, and a stage this version does not know, are left out.
  s.last_model = dir.file("gone.safetensors");
  s.last_stage = "teleport";
  AppOptions gone;
  apply_last_session(s, gone);
  EXPECT_EQ(gone.model_path, "");
  EXPECT_EQ(gone.stage, "tokens");
}

}  // namespace
}  // namespace sf::gui
