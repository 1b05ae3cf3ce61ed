// Every limit of the app that docs/user-guide.md states, at its boundary: the number it gives is accepted, one more
// is refused with a message naming it. The numbers are written out as the guide gives them (not taken from the
// constants), so a limit changed in the code and not in the guide fails here.
//   --size 320x240 to 7680x4320; --ui-scale 0.5 to 4; --frames 1 to 100000; a script or lesson of at most 1 MB
//   (1,048,576 bytes); `wait` at most 36000 frames, `step`/`back` 10000, other counts 100000; the settings file
//   at most 1 MB, nested at most 64 deep, a text in it at most 16 kB (16,384 bytes).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "gui/options.h"
#include "gui/script/script_parse.h"
#include "gui/settings.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

// parse_app_options on these arguments: whether they were taken (no exit asked for).
bool options_taken(std::vector<std::string> args) {
  args.insert(args.begin(), "stepformer");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const ParsedOptions parsed = parse_app_options(static_cast<int>(argv.size()), argv.data());
  return !parsed.exit_now;
}

TEST(AppLimits, TheWindowSizeFrom320x240To7680x4320) {
  EXPECT_TRUE(options_taken({"--size", "320x240"}));
  EXPECT_TRUE(options_taken({"--size", "7680x4320"}));
  EXPECT_FALSE(options_taken({"--size", "319x240"}));
  EXPECT_FALSE(options_taken({"--size", "320x239"}));
  EXPECT_FALSE(options_taken({"--size", "7681x4320"}));
  EXPECT_FALSE(options_taken({"--size", "7680x4321"}));
  EXPECT_FALSE(options_taken({"--size", "800x100000"}));
}

TEST(AppLimits, TheUiScaleFrom0_5To4AndFramesFrom1To100000) {
  EXPECT_TRUE(options_taken({"--ui-scale", "0.5"}));
  EXPECT_TRUE(options_taken({"--ui-scale", "4"}));
  EXPECT_FALSE(options_taken({"--ui-scale", "0.49"}));
  EXPECT_FALSE(options_taken({"--ui-scale", "4.01"}));
  EXPECT_TRUE(options_taken({"--frames", "1"}));
  EXPECT_TRUE(options_taken({"--frames", "100000"}));
  EXPECT_FALSE(options_taken({"--frames", "0"}));
  EXPECT_FALSE(options_taken({"--frames", "100001"}));
}

// A script's counts: the ceiling accepted, one more refused with the command's range.
TEST(AppLimits, AScriptsCountsAtTheirCeilings) {
  struct Case {
    const char* command;
    int ceiling;
  };
  for (const Case& c : {Case{"wait", 36000}, Case{"step", 10000}, Case{"back", 10000}, Case{"pad", 100000},
                        Case{"position", 100000}, Case{"layer", 100000}, Case{"head", 100000}}) {
    std::string error;
    EXPECT_TRUE(parse_script(std::string(c.command) + " " + std::to_string(c.ceiling) + "\n", "s", error)) << error;
    EXPECT_FALSE(parse_script(std::string(c.command) + " " + std::to_string(c.ceiling + 1) + "\n", "s", error)) << c.command;
    EXPECT_NE(error.find("to " + std::to_string(c.ceiling) + ", got '" + std::to_string(c.ceiling + 1) + "'"),
              std::string::npos) << error;
  }
  std::string error;
  EXPECT_TRUE(parse_script("force 100000 a\nsnapshot 100000\nwait-train 100000\nmask enc.1.1 100000 100000\n", "s", error))
      << error;
  EXPECT_FALSE(parse_script("force 100001 a\n", "s", error));
  EXPECT_FALSE(parse_script("snapshot 100001\n", "s", error));
  EXPECT_FALSE(parse_script("wait-train 100001\n", "s", error));
  EXPECT_FALSE(parse_script("mask enc.1.1 0 100001\n", "s", error));
}

TEST(AppLimits, AScriptOf1048576BytesIsReadAndOneByteMoreIsRefused) {
  const fs::path dir = testing::fresh_output_dir("limits_script_size");
  const std::string path = (dir / "big.script").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "quit\n" << std::string(1048576 - 5 - 1, '#') << "\n";
  }
  ASSERT_EQ(fs::file_size(path), 1048576u);
  std::string error;
  EXPECT_TRUE(parse_script_file(path, error)) << error;
  std::ofstream(path, std::ios::app | std::ios::binary) << "#";
  EXPECT_FALSE(parse_script_file(path, error));
  EXPECT_NE(error.find("is 1,048,577 bytes; the limit for a script is 1,048,576 bytes"), std::string::npos) << error;
}

TEST(AppLimits, TheSettingsFileAt1MegabyteNested64DeepWithTextsOf16384Bytes) {
  const fs::path dir = testing::fresh_output_dir("limits_settings");
  const std::string path = (dir / "settings.json").string();
  const auto read = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return read_settings(path);
  };
  // 1 MB: a file of 1,048,576 bytes (spaces after the object) is read; one byte more is moved aside.
  std::string object = "{\"last_sentence\": \"ein mann\"}";
  EXPECT_EQ(read(object + std::string(1048576 - object.size(), ' ')).problem, "");
  EXPECT_NE(read(object + std::string(1048577 - object.size(), ' ')).problem.find("the limit for the settings file is"),
            std::string::npos);
  // 64 levels deep (the object itself and 63 arrays in it) are read; 65 are not.
  const auto nested = [](int arrays) {
    return "{\"x\": " + std::string(static_cast<size_t>(arrays), '[') + std::string(static_cast<size_t>(arrays), ']') + "}";
  };
  EXPECT_EQ(read(nested(63)).problem, "");
  EXPECT_NE(read(nested(64)).problem.find("nest deeper than"), std::string::npos);
  // A text of 16,384 bytes is kept; one byte more is refused.
  const SettingsRead kept = read("{\"last_sentence\": \"" + std::string(16384, 'a') + "\"}");
  EXPECT_EQ(kept.problem, "");
  EXPECT_EQ(kept.settings.last_sentence.size(), 16384u);
  EXPECT_NE(read("{\"last_sentence\": \"" + std::string(16385, 'a') + "\"}").problem.find("is 16385 bytes; the limit is 16384"),
            std::string::npos);
}

}  // namespace
}  // namespace sf::gui
