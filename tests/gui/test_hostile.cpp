// The app under careless and hostile input (issue #15): damaged settings, FIFOs and devices where files belong,
// scripts and lessons that try to write where the user did not allow or to replace files, absurd counts and
// sizes. Each case: a clear message, the app keeps running (or starts), nothing the user made is lost.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "app_under_xvfb.h"
#include "export_readers.h"
#include "../unit/sentencepiece_bytes.h"
#include "../unit/sparse_model.h"
#include "gui/settings.h"
#include "io/safetensors.h"
#include "model/config.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// [SECTION] settings

TEST(HostileSettings, DeeplyNestedJsonIsMovedAsideNotACrash) {
  const fs::path dir = testing::fresh_output_dir("hostile_settings_nested");
  const std::string path = (dir / "settings.json").string();
  const std::string nested = std::string(400000, '[') + std::string(400000, ']');
  std::ofstream(path) << nested;
  const SettingsRead r = read_settings(path);
  EXPECT_TRUE(r.settings == Settings{});
  EXPECT_TRUE(contains(r.problem, "nest deeper than")) << r.problem;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(fs::file_size(dir / "settings.json.bad"), nested.size());
}

TEST(HostileSettings, AFifoOrAHugeFileIsMovedAsideWithoutHanging) {
  const fs::path dir = testing::fresh_output_dir("hostile_settings_fifo");
  const std::string path = (dir / "settings.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto read = std::async(std::launch::async, [&] { return read_settings(path); });
  ASSERT_EQ(read.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "a FIFO as settings.json hangs";
  const SettingsRead r = read.get();
  EXPECT_TRUE(contains(r.problem, "is a FIFO (named pipe), not a regular file")) << r.problem;
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir / "settings.json.bad")));

  // 50 MB of sentence: over the file limit, refused before it is read; a 20 kB sentence: over the text limit.
  {
    std::ofstream f(path);
    f << "{\"last_sentence\": \"" << std::string(50 << 20, 'a') << "\"}";
  }
  const SettingsRead huge = read_settings(path);
  EXPECT_TRUE(contains(huge.problem, "the limit for the settings file is 1.0 MB")) << huge.problem;
  EXPECT_TRUE(contains(huge.problem, "moved to '" + path + ".bad.2'")) << huge.problem;
  std::ofstream(path) << "{\"last_sentence\": \"" << std::string(20000, 'a') << "\"}";
  const SettingsRead long_text = read_settings(path);
  EXPECT_TRUE(contains(long_text.problem, "'last_sentence' is 20000 bytes; the limit is 16384")) << long_text.problem;
  EXPECT_TRUE(fs::exists(dir / "settings.json.bad.3"));
}

// [SECTION] the app itself

class HostileApp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  }
  // Runs the app in `dir` (its current folder: where scripts may write) with `args`; the exit code, or -1.
  int run(const fs::path& dir, const std::string& args, const std::string& env = "") {
    const std::string cmd = "cd '" + dir.string() + "' && " + env + " timeout 120 " +
                            testing::headless_app_command(args) + " > log.txt 2>&1";
    const int status = std::system(cmd.c_str());
    log = test::read_bytes((dir / "log.txt").string());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int run_script(const fs::path& dir, const std::string& script, const std::string& args = "") {
    std::ofstream(dir / "script.txt") << script;
    return run(dir, "--no-settings --size 1280x800 --model " + kModel + " " + args + " --script script.txt");
  }
  std::string log;
};

TEST_F(HostileApp, DamagedSettingsNeverStopTheAppFromStarting) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_settings");
  fs::create_directories(dir / "config" / "stepformer");
  std::ofstream(dir / "config" / "stepformer" / "settings.json") << std::string(200000, '[');
  ASSERT_EQ(run(dir, "--size 800x600 --model " + kModel + " --screenshot shot.png", "XDG_CONFIG_HOME=" + (dir / "config").string()), 0)
      << log;
  EXPECT_TRUE(contains(log, "is damaged")) << log;
  EXPECT_TRUE(fs::exists(dir / "config" / "stepformer" / "settings.json.bad"));
  EXPECT_TRUE(fs::exists(dir / "shot.png"));
  // The next start finds the fresh settings the first one wrote, and says nothing.
  ASSERT_EQ(run(dir, "--size 800x600 --model " + kModel + " --screenshot shot2.png", "XDG_CONFIG_HOME=" + (dir / "config").string()), 0)
      << log;
  EXPECT_FALSE(contains(log, "is damaged")) << log;
}

TEST_F(HostileApp, AScriptMayNotWriteOutsideItsFolderReplaceAFileOrFollowALink) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_writes");
  const fs::path outside = testing::fresh_output_dir("hostile_app_writes_outside");
  std::ofstream(dir / "mine.png") << "the user's picture";
  fs::create_directory_symlink(outside, dir / "escape");
  std::ofstream(outside / "target.json") << "kept";
  fs::create_symlink(outside / "target.json", dir / "link.json");
  ASSERT_EQ(run_script(dir, "screenshot ok.png\n"
                            "screenshot mine.png\n"
                            "screenshot " + (outside / "abs.png").string() + "\n"
                            "screenshot ../hostile_app_writes_outside/dots.png\n"
                            "export-png escape/through_link.png\n"
                            "layout link.json\n"
                            "quit\n"),
            0)
      << log;
  EXPECT_TRUE(fs::exists(dir / "ok.png")) << log;
  EXPECT_EQ(test::read_bytes((dir / "mine.png").string()), "the user's picture");
  EXPECT_TRUE(contains(log, "'mine.png' exists: not replaced")) << log;
  EXPECT_TRUE(contains(log, "abs.png' is outside the folder this may write to")) << log;
  EXPECT_TRUE(contains(log, "dots.png' is outside the folder")) << log;
  EXPECT_TRUE(contains(log, "through_link.png' is outside the folder")) << log;
  EXPECT_TRUE(contains(log, "'link.json' is a symbolic link")) << log;
  EXPECT_EQ(test::read_bytes((outside / "target.json").string()), "kept");
  EXPECT_EQ(std::distance(fs::directory_iterator(outside), fs::directory_iterator()), 1) << "only target.json";

  // --allow-write names the one other folder the script may write to.
  ASSERT_EQ(run_script(dir, "screenshot " + (outside / "allowed.png").string() + "\nquit\n",
                       "--allow-write " + outside.string()),
            0)
      << log;
  EXPECT_TRUE(fs::exists(outside / "allowed.png")) << log;
  EXPECT_FALSE(fs::exists(dir / "ok2.png"));
}

TEST_F(HostileApp, FilesThatAreNotFilesAreRefusedAndTheAppQuits) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_inputs");
  ASSERT_EQ(::mkfifo((dir / "fifo.safetensors").c_str(), 0644), 0);
  // A FIFO opened as a model: an error dialog, and `quit` still ends the app (the loader does not hang on it).
  ASSERT_EQ(run_script(dir, "model fifo.safetensors\nlayout after.json\nquit\n"), 0) << log;
  EXPECT_TRUE(contains(log, "is a FIFO (named pipe), not a regular file")) << log;
  const nlohmann::json after = testing::load_json(dir / "after.json");
  ASSERT_FALSE(after.is_null()) << log;
  EXPECT_EQ(after["app"]["dialog"]["title"], "Cannot open the model");
  EXPECT_EQ(after["app"]["model_path"], kModel) << "the model it had stays";

  EXPECT_EQ(run(dir, "--no-settings --script " + dir.string()), 2);
  EXPECT_TRUE(contains(log, "is a folder, not a regular file (a script must be a file)")) << log;
  EXPECT_EQ(run(dir, "--no-settings --script /dev/zero"), 2);
  EXPECT_TRUE(contains(log, "'/dev/zero' is a character device")) << log;
  EXPECT_EQ(run(dir, "--no-settings --lesson fifo.safetensors"), 2);
  EXPECT_TRUE(contains(log, "is a FIFO")) << log;
  {
    std::ofstream big(dir / "big.script");
    for (int i = 0; i < 70000; ++i) big << "# a comment line of some length\n";
  }
  EXPECT_EQ(run(dir, "--no-settings --script big.script"), 2);
  EXPECT_TRUE(contains(log, "the limit for a script is 1.0 MB")) << log;
  EXPECT_EQ(run(dir, "--no-settings --size 16384x16384 --screenshot s.png"), 2);
  EXPECT_TRUE(contains(log, "--size needs WIDTHxHEIGHT from 320x240 to 7680x4320")) << log;
  // --screenshot never replaces the model it shows.
  fs::copy_file(kModel, dir / "m.safetensors");
  const auto size = fs::file_size(dir / "m.safetensors");
  EXPECT_EQ(run(dir, "--no-settings --size 800x600 --model m.safetensors --screenshot m.safetensors"), 1);
  EXPECT_TRUE(contains(log, "is the same file as the input")) << log;
  EXPECT_EQ(fs::file_size(dir / "m.safetensors"), size);
}

TEST_F(HostileApp, AbsurdCountsAreRefusedWithTheirLimitAndTheAppGoesOn) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_counts");
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(run_script(dir, "sentence Ein Mann mit einem Hut.\n"
                            "decode beam 100000\n"
                            "force 5000 a\n"
                            "stage encoder-attention\n"
                            "expand 999 999\n"
                            "stage decoding\n"
                            "layout counts.json\n"
                            "quit\n"),
            0)
      << log;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << "a beam of 100000 was searched";
  EXPECT_TRUE(contains(log, "the beam width must be from 1 to 64, got 100000")) << log;
  EXPECT_TRUE(contains(log, "cannot force a word at position 5000")) << log;
  EXPECT_TRUE(contains(log, "expand: no cell (999, 999) in the attention map of")) << log;
  const nlohmann::json after = testing::load_json(dir / "counts.json");
  ASSERT_FALSE(after.is_null()) << log;
  EXPECT_FALSE(after["app"]["translation"].get<std::string>().empty()) << "the translation it had stays";

  // Counts past a command's ceiling are named when the script is read; the script does not run.
  EXPECT_EQ(run_script(dir, "wait 99999999\nstep 50000\nforce 999999 a\nmask enc.1.1 0 999999\nquit\n"), 2);
  EXPECT_TRUE(contains(log, "'wait' needs whole numbers from 0 to 36000, got '99999999'")) << log;
  EXPECT_TRUE(contains(log, "'step' needs whole numbers from 0 to 10000, got '50000'")) << log;
  EXPECT_TRUE(contains(log, "'force' takes a position (a whole number from 0 to 100000) and a word, got '999999'")) << log;
  EXPECT_TRUE(contains(log, "'mask' takes KIND.L.H ROW COL with whole numbers from 0 to 100000, got '999999'")) << log;
}

TEST_F(HostileApp, AHeadTheModelDoesNotHaveIsSaidNotSilentlyChanged) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_attention");
  ASSERT_EQ(run(dir, "--no-settings --size 1280x800 --model " + kModel +
                         " --stage encoder-attention --attention enc.10.8 --screenshot a.png --layout-json a.json"),
            0)
      << log;
  const nlohmann::json shown = testing::load_json(dir / "a.json");
  ASSERT_FALSE(shown.is_null()) << log;
  EXPECT_EQ(shown["app"]["dialog"]["title"], "This model has no such head") << shown["app"].dump();
  EXPECT_TRUE(contains(shown["app"]["dialog"]["problem"].get<std::string>(), "asks for layer 10, head 8"));
  EXPECT_TRUE(contains(shown["app"]["dialog"]["hint"].get<std::string>(), "Showing enc.")) << shown["app"].dump();
}

// SIGTERM while the app writes a screenshot: its handler removes the temporary file and the app ends as the
// signal would have; no half file at the screenshot's name. The write is held with its temporary file complete
// (STEPFORMER_TEST_WRITE_PAUSE_MS) until the test has seen it and sent the signal.
TEST_F(HostileApp, ASignalWhileTheAppWritesLeavesNoTemporaryFile) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_signal");
  std::ofstream(dir / "script.txt") << "screenshot shot.png\nquit\n";
  const std::string command = testing::headless_app_command("--no-settings --size 800x600 --model " + kModel +
                                                            " --script script.txt") + " > log.txt 2>&1";
  const pid_t child = ::fork();
  if (child == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::setenv("STEPFORMER_TEST_WRITE_PAUSE_MS", "30000", 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto temporary = [&]() {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind(".stepformer-", 0) == 0) return true;
    return false;
  };
  bool seen = false;
  for (int i = 0; i < 1200 && !seen; ++i) {  // up to 60 s: the display, the model, the first frames
    seen = temporary();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(seen) << "the screenshot's write never began: " << test::read_bytes((dir / "log.txt").string());
  // The app itself (xvfb-run's child): the process whose program is the app and whose folder is this one.
  pid_t app = -1;
  const fs::path exe = fs::canonical(STEPFORMER_APP_PATH), here = fs::canonical(dir);
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    if (fs::read_symlink(e.path() / "exe", ec) == exe && fs::read_symlink(e.path() / "cwd", ec) == here)
      app = static_cast<pid_t>(std::stoi(name));
  }
  ASSERT_GT(app, 0);
  ::kill(app, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(temporary()) << "a temporary file stayed";
  EXPECT_FALSE(fs::exists(dir / "shot.png"));
}

// [SECTION] round two (issue 46)

// Mistakes a script can only show when it reaches them were version 0.1's: `stage nosuch` ran everything before
// it and then ended with 0. Every name is checked when the script is read: nothing runs, exit 2.
TEST_F(HostileApp, AScriptsUnknownStageOrViewIsNamedBeforeAnythingRuns) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_names");
  EXPECT_EQ(run_script(dir, "screenshot first.png\nstage nosuch\nshow bogus\nquit\n"), 2) << log;
  EXPECT_TRUE(contains(log, "script.txt:2: 'stage' takes a stage's name (tokens, ")) << log;
  EXPECT_TRUE(contains(log, "got 'nosuch'")) << log;
  EXPECT_TRUE(contains(log, "script.txt:3: 'show' takes model-info, open-model or stage, got 'bogus'")) << log;
  EXPECT_FALSE(fs::exists(dir / "first.png")) << "the script ran before its mistakes were found";
}

// Options: a head the model cannot have is bad usage like a stage that does not exist; an option given twice is
// refused, not silently reduced to its last value.
TEST_F(HostileApp, BadOptionsExitTwoNamingThem) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_options");
  EXPECT_EQ(run(dir, "--no-settings --attention bogus --screenshot a.png"), 2) << log;
  EXPECT_TRUE(contains(log, "--attention takes a head as KIND.L.H")) << log;
  EXPECT_EQ(run(dir, "--no-settings --size 800x600 --screenshot a.png --screenshot b.png"), 2) << log;
  EXPECT_TRUE(contains(log, "--screenshot is given twice ('a.png', then 'b.png'): give it once")) << log;
  EXPECT_FALSE(fs::exists(dir / "a.png"));
  EXPECT_FALSE(fs::exists(dir / "b.png"));
}

// A lesson just over the size limit: the sizes in bytes (version 0.1: "1.0 MB; the limit is 1.0 MB").
TEST_F(HostileApp, ALessonJustOverTheLimitSaysItsBytes) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_lesson_size");
  {
    std::ofstream big(dir / "big.lesson");
    big << std::string(1048579, '#');
  }
  EXPECT_EQ(run(dir, "--no-settings --lesson big.lesson"), 2) << log;
  EXPECT_TRUE(contains(log, "is 1,048,579 bytes; the limit for a lesson is 1,048,576 bytes")) << log;
}

// The settings' last model is a device: said as that (version 0.1: "is gone"), and the app starts.
TEST_F(HostileApp, ALastModelThatIsADeviceIsNamedAsOne) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_last_device");
  fs::create_directories(dir / "config" / "stepformer");
  std::ofstream(dir / "config" / "stepformer" / "settings.json") << "{\"last_model\": \"/dev/zero\"}";
  ASSERT_EQ(run(dir, "--size 800x600 --screenshot shot.png", "XDG_CONFIG_HOME=" + (dir / "config").string()), 0) << log;
  EXPECT_TRUE(contains(log, "the last model '/dev/zero' is a character device, not a model file")) << log;
  EXPECT_TRUE(fs::exists(dir / "shot.png"));
}

// A Marian folder whose source.spm crashed libsentencepiece 0.1.97: refused with a dialog, the model on show
// stays; as the settings' last model, the app starts on the shipped one (it crashed at every start).
TEST_F(HostileApp, ACraftedSentencePieceModelIsRefusedAndTheAppGoesOn) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_spm");
  fs::copy(std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/marian/tiny-de-en", dir / "marian", fs::copy_options::recursive);
  const std::string base = test::read_bytes((dir / "marian" / "source.spm").string());
  std::ofstream(dir / "marian" / "source.spm", std::ios::binary)
      << base << sf::testing::normalizer_field(sf::testing::hostile_charsmap());
  ASSERT_EQ(run_script(dir, "model marian\nlayout after.json\nquit\n"), 0) << log;
  EXPECT_TRUE(contains(log, "source.spm' is not a SentencePiece model Stepformer can read")) << log;
  const nlohmann::json after = testing::load_json(dir / "after.json");
  ASSERT_FALSE(after.is_null()) << log;
  EXPECT_EQ(after["app"]["model_path"], kModel) << "the model it had stays";
  fs::create_directories(dir / "config" / "stepformer");
  std::ofstream(dir / "config" / "stepformer" / "settings.json") << "{\"last_model\": \"" << (dir / "marian").string() << "\"}";
  ASSERT_EQ(run(dir, "--size 800x600 --screenshot start.png", "XDG_CONFIG_HOME=" + (dir / "config").string()), 0) << log;
  EXPECT_TRUE(fs::exists(dir / "start.png")) << log;
}

// Quitting while a large model loads stops the load (version 0.1 read a sparse 2.8 GB file to its end first: 27 s
// and 8.6 GB after `quit`).
TEST_F(HostileApp, QuittingWhileALargeModelLoadsStopsTheLoad) {
  const fs::path dir = testing::fresh_output_dir("hostile_app_quit_loading");
  const SafetensorsFile small = SafetensorsFile::open(kModel);
  Config big = config_from_json(nlohmann::json::parse(small.metadata().at("config")));
  big.d_model = 2048;
  big.d_ff = 8192;
  big.n_encoder_layers = big.n_decoder_layers = 6;
  const uint64_t bytes = sf::testing::write_sparse_model((dir / "big.safetensors").string(), big, kModel, "pytorch-tutorial");
  ASSERT_GT(bytes, uint64_t{2} << 30);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(run_script(dir, "open big.safetensors\nwait 20\nlayout loading.json\nquit\n"), 0) << log;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 15.0) << log;
  const nlohmann::json loading = testing::load_json(dir / "loading.json");
  ASSERT_FALSE(loading.is_null()) << log;
  EXPECT_EQ(loading["app"]["model_path"], kModel) << "the big model had not loaded when the script quit";
}

}  // namespace
}  // namespace sf::gui
