// The app run as a user runs it, under a virtual display (xvfb-run -a), and what it writes read back: its
// screenshots (PNG) and layout dumps (JSON). For the screen tests; STEPFORMER_XVFB_RUN, STEPFORMER_APP_PATH and
// STEPFORMER_TEST_OUTPUT_DIR come from tests/CMakeLists.txt.
#pragma once
#include <stb/stb_image.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace sf::gui::testing {

// The app's command line under xvfb-run with a `screen` of that size (1600x1000 unless given), `args` after it;
// "" without xvfb-run.
// Each run gets its own X authority file under the test output directory (-f): without one, xvfb-run makes a
// folder in /tmp and, when removing it fails at exit (seen once in 300 runs on a loaded machine), replaces the
// app's exit code with its own 5, which a test would read as the app's.
inline std::string headless_app_command(const std::string& args, const std::string& screen = "1600x1000") {
  const std::string xvfb = STEPFORMER_XVFB_RUN;
  if (xvfb.empty()) return "";
  static std::atomic<int> runs{0};
  const std::filesystem::path auth_dir = std::filesystem::path(STEPFORMER_TEST_OUTPUT_DIR) / "xauthority";
  std::filesystem::create_directories(auth_dir);
  const std::string auth =
      (auth_dir / (std::to_string(::getpid()) + "-" + std::to_string(runs.fetch_add(1)))).string();
  return xvfb + " -a -f '" + auth + "' -s '-screen 0 1600x1000x24' " + STEPFORMER_APP_PATH + " " + args;
}

// An empty folder of that name under the test output directory (emptied if it was there).
inline std::filesystem::path fresh_output_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(STEPFORMER_TEST_OUTPUT_DIR) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs the app from `dir` on `script` (its lines; `quit` is added) with `args`, at `screen` (the window that size,
// no settings read or written). Returns the exit status as std::system gives it; the log is dir/log.txt.
inline int run_app_script(const std::filesystem::path& dir, const std::string& script, const std::string& args = "",
                          const std::string& screen = "1600x1000") {
  std::ofstream(dir / "script.txt") << script << "quit\n";
  const std::string cmd = "cd '" + dir.string() + "' && " +
                          headless_app_command("--no-settings --size " + screen + " " + args + " --script script.txt", screen) +
                          " > log.txt 2>&1";
  return std::system(cmd.c_str());
}

// A file's bytes ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An RGB image; no pixels when the file was missing or unreadable.
struct Image {
  int width = 0, height = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
  const unsigned char* at(int x, int y) const { return pixels.get() + (static_cast<size_t>(y) * width + x) * 3; }
  // The mean luma (Rec. 709) of the rectangle [x0, x1) x [y0, y1), 0..255.
  float mean_luma(int x0, int y0, int x1, int y1) const {
    double sum = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) sum += 0.2126 * at(x, y)[0] + 0.7152 * at(x, y)[1] + 0.0722 * at(x, y)[2];
    return static_cast<float>(sum / ((x1 - x0) * (y1 - y0)));
  }
};

inline Image load_png(const std::filesystem::path& path) {
  Image image;
  int channels = 0;
  image.pixels.reset(stbi_load(path.c_str(), &image.width, &image.height, &channels, 3));
  return image;
}

// The parsed file; null when it is missing.
inline nlohmann::json load_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return in ? nlohmann::json::parse(in) : nlohmann::json();
}

}  // namespace sf::gui::testing
