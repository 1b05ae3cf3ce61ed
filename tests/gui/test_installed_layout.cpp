// The app installed (`cmake --install` into a prefix, the layout of the Debian package: packaging/CMakeLists.txt)
// opens the models installed beside it, PREFIX/share/stepformer/assets, although the source tree it was built from
// is still there (the path is compiled in) and the folder it starts in has an assets/ of its own: an installed
// program must not prefer a source tree that may be gone or out of date (core/util/paths.cpp). The same program
// run from its build folder keeps opening the source tree's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app_under_xvfb.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using namespace sf::gui::testing;

// The app at `app` under xvfb-run, started in `dir` with `args`; its output in dir/NAME.log. Returns the exit status.
int run_in(const fs::path& app, const fs::path& dir, const std::string& name, const std::string& args) {
  const std::string command = "cd '" + dir.string() + "' && " + STEPFORMER_XVFB_RUN + " -a -f '" +
                              (dir / (name + ".xauthority")).string() + "' -s '-screen 0 1280x800x24' '" +
                              app.string() + "' " + args + " > " + name + ".log 2>&1";
  return std::system(command.c_str());
}

TEST(InstalledLayout, TheInstalledAppOpensItsOwnModelsNeitherTheSourceTreesNorTheWorkingFolders) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  // Outside the build folder: a program inside it counts as "run from the build".
  const fs::path prefix = fs::temp_directory_path() / ("stepformer_install_" + std::to_string(::getpid()));
  fs::remove_all(prefix);
  struct RemovedAtTheEnd {
    fs::path path;
    ~RemovedAtTheEnd() { fs::remove_all(path); }
  } removed{prefix};
  const fs::path out = fresh_output_dir("installed_layout");
  const std::string install = std::string(STEPFORMER_CMAKE_COMMAND) + " --install '" + STEPFORMER_BUILD_DIR +
                              "' --prefix '" + prefix.string() + "' > '" + (out / "install.log").string() + "' 2>&1";
  ASSERT_EQ(std::system(install.c_str()), 0) << read_text(out / "install.log");
  for (const char* file : {"bin/stepformer", "bin/stepformer-cli", "share/stepformer/assets/models/de-en.safetensors",
                           "share/stepformer/assets/models/fr-en.safetensors",
                           "share/stepformer/assets/lessons/walkthrough.lesson",
                           "share/stepformer/tools/hf_bin_to_safetensors.py", "share/applications/stepformer.desktop",
                           "share/mime/packages/stepformer.xml", "share/icons/hicolor/scalable/apps/stepformer.svg"})
    EXPECT_TRUE(fs::is_regular_file(prefix / file)) << file << " is not installed";

  // A working folder with a "model" where the shipped one would be, if the working folder were looked in first.
  const fs::path here = out / "here";
  fs::create_directories(here / "assets" / "models");
  std::ofstream(here / "assets" / "models" / "de-en-bpe.safetensors") << "not a model";
  const std::string args = "--no-settings --screenshot shot.png --layout-json layout.json";

  ASSERT_EQ(run_in(prefix / "bin" / "stepformer", here, "installed", args), 0) << read_text(here / "installed.log");
  const nlohmann::json installed = load_json(here / "layout.json");
  ASSERT_FALSE(installed.is_null()) << read_text(here / "installed.log");
  EXPECT_EQ(installed["app"]["model_path"], (prefix / "share/stepformer/assets/models/de-en-bpe.safetensors").string());
  EXPECT_TRUE(installed["app"]["dialog"].is_null()) << installed["app"]["dialog"];

  ASSERT_EQ(run_in(STEPFORMER_APP_PATH, here, "built", args), 0) << read_text(here / "built.log");
  const nlohmann::json built = load_json(here / "layout.json");
  ASSERT_FALSE(built.is_null()) << read_text(here / "built.log");
  EXPECT_EQ(built["app"]["model_path"], std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en-bpe.safetensors");
}

}  // namespace
}  // namespace sf::gui
