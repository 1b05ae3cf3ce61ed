// The app's command line as a file manager gives it: a bare path (the desktop entry's `Exec=stepformer %f`,
// packaging/stepformer.desktop). A `.lesson` runs as with --lesson, anything else opens as with --model; given
// beside the option it stands for, it is that option given twice. Parsed (gui/options.h), then run under xvfb-run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "gui/options.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using namespace sf::gui::testing;

const std::string kAssets = std::string(STEPFORMER_SOURCE_DIR) + "/assets";

ParsedOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "stepformer");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_app_options(static_cast<int>(argv.size()), argv.data());
}

TEST(AppOptions, ABareLessonRunsAsTheLesson) {
  const ParsedOptions p = parse({"/home/teacher/walkthrough.lesson"});
  ASSERT_FALSE(p.exit_now);
  EXPECT_EQ(p.options.lesson_path, "/home/teacher/walkthrough.lesson");
  EXPECT_EQ(p.options.model_path, "");
  EXPECT_FALSE(p.options.model_given);
  EXPECT_EQ(p.options.script_path, "");
}

TEST(AppOptions, ABareModelFileOrFolderOpensAsTheModel) {
  for (const std::string path : {"/tmp/de-en.safetensors", "relative/fr-en.safetensors", "/models/opus-mt-de-en",
                                 "walkthrough.lesson.safetensors"}) {
    const ParsedOptions p = parse({path});
    ASSERT_FALSE(p.exit_now) << path;
    EXPECT_EQ(p.options.model_path, path);
    EXPECT_TRUE(p.options.model_given) << path << ": the last session's model must not replace it";
    EXPECT_EQ(p.options.lesson_path, "") << path;
  }
}

TEST(AppOptions, ABareLessonAndABareModelTogether) {
  const ParsedOptions p = parse({"--size", "800x600", "a.lesson", "m.safetensors"});
  ASSERT_FALSE(p.exit_now);
  EXPECT_EQ(p.options.lesson_path, "a.lesson");
  EXPECT_EQ(p.options.model_path, "m.safetensors");
  EXPECT_EQ(p.options.width, 800);
}

TEST(AppOptions, ABarePathBesideItsOptionIsThatOptionGivenTwice) {
  ::testing::internal::CaptureStderr();
  const ParsedOptions lesson = parse({"--lesson", "one.lesson", "two.lesson"});
  const std::string lesson_error = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(lesson.exit_now);
  EXPECT_EQ(lesson.exit_code, 2);
  EXPECT_NE(lesson_error.find("--lesson is given twice ('one.lesson', then 'two.lesson')"), std::string::npos)
      << lesson_error;

  ::testing::internal::CaptureStderr();
  const ParsedOptions model = parse({"a.safetensors", "--model", "b.safetensors"});
  const std::string model_error = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(model.exit_now);
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model_error.find("--model is given twice ('a.safetensors', then 'b.safetensors')"), std::string::npos)
      << model_error;

  ::testing::internal::CaptureStderr();
  const ParsedOptions two = parse({"a.safetensors", "b.safetensors"});
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(two.exit_now) << "two models: one would be dropped silently";
  EXPECT_EQ(two.exit_code, 2);
}

TEST(AppOptions, ABareLessonIsALessonForTheRules) {
  ::testing::internal::CaptureStderr();
  const ParsedOptions p = parse({"--script", "s.txt", "a.lesson"});
  const std::string error = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(p.exit_now);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(error.find("--script and --lesson cannot be combined"), std::string::npos) << error;
}

TEST(AppOptions, AnUnknownDashedWordIsStillRefused) {
  for (const std::string word : {"-x", "--modle", "-"}) {
    ::testing::internal::CaptureStderr();
    const ParsedOptions p = parse({word});
    const std::string error = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(p.exit_now) << word;
    EXPECT_EQ(p.exit_code, 2) << word;
    EXPECT_NE(error.find("unknown option '" + word + "'"), std::string::npos) << error;
  }
}

// What the desktop entry does: `stepformer FILE`. The app opens the model given bare, and runs the lesson given
// bare up to its first pause, where its first caption shows.
TEST(AppOptions, TheAppOpensABareModelAndRunsABareLesson) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const fs::path dir = fresh_output_dir("options_bare_path");
  const std::string model = kAssets + "/models/fr-en.safetensors";
  const std::string model_run = "cd '" + dir.string() + "' && " +
                                headless_app_command("--no-settings '" + model + "' --screenshot model.png "
                                                     "--layout-json model.json") + " > model.log 2>&1";
  ASSERT_EQ(std::system(model_run.c_str()), 0) << read_text(dir / "model.log");
  const nlohmann::json opened = load_json(dir / "model.json");
  ASSERT_FALSE(opened.is_null()) << read_text(dir / "model.log");
  EXPECT_EQ(opened["app"]["model_path"], model);

  const std::string lesson = kAssets + "/lessons/walkthrough.lesson";
  const std::string lesson_run = "cd '" + dir.string() + "' && " +
                                 headless_app_command("--no-settings '" + lesson + "' --frames 10 --screenshot "
                                                      "lesson.png --layout-json lesson.json") + " > lesson.log 2>&1";
  ASSERT_EQ(std::system(lesson_run.c_str()), 0) << read_text(dir / "lesson.log");
  const nlohmann::json ran = load_json(dir / "lesson.json");
  ASSERT_FALSE(ran.is_null()) << read_text(dir / "lesson.log");
  EXPECT_NE(ran["panels"]["caption"].get<std::string>().find("Today we watch a Transformer translate"),
            std::string::npos) << ran["panels"]["caption"];
  EXPECT_TRUE(ran["panels"]["present"].get<bool>()) << "the lesson's `present on` ran";
}

}  // namespace
}  // namespace sf::gui
