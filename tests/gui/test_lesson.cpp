// Lessons: scripts with captions and pauses that a teacher steps through with the keyboard. Parsing (strict
// for --script, lenient for --lesson), the interactive runner against the headless app (Space / Right /
// PageDown go on, Left / PageUp go back), and the shipped walkthrough on the shipped model.
#include <gtest/gtest.h>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "app_under_xvfb.h"
#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/script/script.h"
#include "../unit/command_run.h"

namespace sf::gui {
namespace {

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";
const std::string kWalkthrough = std::string(STEPFORMER_SOURCE_DIR) + "/assets/lessons/walkthrough.lesson";

TEST(LessonParse, CaptionPausePresentAndExportCommands) {
  std::string error;
  const auto s = parse_script("present on\ncaption  Each row is a query.  \ncaption\npause\nui-scale 1.5\n"
                              "export-npy out dir/a.npy\nfullscreen off\n",
                              "l", error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->commands.size(), 7u);
  EXPECT_EQ(s->commands[1].args, (std::vector<std::string>{"Each row is a query."}));
  EXPECT_TRUE(s->commands[2].args.empty()) << "caption alone clears the caption";
  EXPECT_EQ(s->commands[3].name, "pause");
  EXPECT_EQ(s->commands[5].args, (std::vector<std::string>{"out dir/a.npy"}));
  EXPECT_FALSE(parse_script("present maybe\n", "l", error));
  EXPECT_NE(error.find("l:1: 'present' takes on or off"), std::string::npos) << error;
  EXPECT_FALSE(parse_script("ui-scale 9\n", "l", error));
  EXPECT_NE(error.find("'ui-scale' needs a number from 0.5 to 4"), std::string::npos) << error;
  EXPECT_FALSE(parse_script("pause now\n", "l", error));
  EXPECT_FALSE(parse_script("export-csv\n", "l", error));
}

TEST(LessonParse, ALessonKeepsCommandsThisVersionDoesNotKnowAScriptRefusesThem) {
  const std::string text = "caption hi\nsparkle enc.0.3\npause\nconfetti\n";
  std::string error;
  EXPECT_FALSE(parse_script(text, "x.lesson", error, ScriptParse::Strict));
  EXPECT_NE(error.find("x.lesson:2: unknown command 'sparkle'"), std::string::npos) << error;
  const auto lesson = parse_script(text, "x.lesson", error, ScriptParse::Lesson);
  ASSERT_TRUE(lesson) << error;
  ASSERT_EQ(lesson->commands.size(), 4u);
  EXPECT_FALSE(lesson->commands[1].known);
  EXPECT_EQ(lesson->commands[1].args, (std::vector<std::string>{"enc.0.3"}));
  EXPECT_TRUE(lesson->commands[2].known);
  EXPECT_FALSE(lesson->commands[3].known);
  // Mistakes in known commands are listed too, every one with its line, before the lesson runs; the lesson
  // keeps the good lines and skips the bad ones when it reaches them. A script refuses them all at once.
  const std::string mistakes = "layer two\ncaption fine\nhead 1 2\npause\nzoom 99\n";
  const auto with_mistakes = parse_script(mistakes, "x.lesson", error, ScriptParse::Lesson);
  ASSERT_TRUE(with_mistakes);
  EXPECT_EQ(with_mistakes->problems,
            (std::vector<std::string>{"x.lesson:1: 'layer' needs whole numbers from 1 to 100000, got 'two'",
                                      "x.lesson:3: 'head' takes 1 argument(s), got 2",
                                      "x.lesson:5: 'zoom' takes a factor from 1 to 64 and optionally ROW COL to keep in view, got '99'"}));
  EXPECT_EQ(error, "x.lesson:1: 'layer' needs whole numbers from 1 to 100000, got 'two'\nx.lesson:3: 'head' takes 1 argument(s), got 2\n"
                   "x.lesson:5: 'zoom' takes a factor from 1 to 64 and optionally ROW COL to keep in view, got '99'");
  ASSERT_EQ(with_mistakes->commands.size(), 5u);
  EXPECT_FALSE(with_mistakes->commands[0].known);
  EXPECT_TRUE(with_mistakes->commands[1].known);
  EXPECT_FALSE(with_mistakes->commands[2].known);
  EXPECT_FALSE(parse_script(mistakes, "x.script", error, ScriptParse::Strict));
  EXPECT_NE(error.find("x.script:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("x.script:5:"), std::string::npos) << "every problem, not the first: " << error;
}

// The runner against the headless app, one frame per step, as main() drives it.
class LessonRun : public ::testing::Test {
 protected:
  void start(const std::string& text, const std::string& model = kModel, bool interactive = true) {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = model;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();  // the model loads in the background
    std::string error;
    auto script = parse_script(text, "test.lesson", error, ScriptParse::Lesson);
    ASSERT_TRUE(script) << error;
    runner_ = std::make_unique<ScriptRunner>(std::move(*script), interactive);
  }
  void TearDown() override {
    runner_.reset();
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  // One frame with `key` down (a press), as the main loop runs it.
  void frame(int key = -1) {
    runner_->before_frame(*app_, log_);
    testing::headless_frame(*app_, key);
  }
  void frames(int n) {
    for (int i = 0; i < n; ++i) frame();
  }
  void press(int key) {
    frame(key);
    frames(3);  // release, and let the runner run on to the next pause
  }
  std::unique_ptr<App> app_;
  std::unique_ptr<ScriptRunner> runner_;
  std::vector<std::string> log_;
};

TEST_F(LessonRun, PausesWaitForSpaceRightOrPageDownAndLeftGoesBack) {
  start("stage embedding\ncaption one\npause\nstage positional\ncaption two\npause\n"
        "stage all-heads\ncaption three\npause\ncaption\nstage output\n");
  frames(10);  // however long it waits, it stays at the first pause
  EXPECT_TRUE(runner_->waiting());
  EXPECT_EQ(runner_->pauses_passed(), 1);
  EXPECT_EQ(app_->caption(), "one");
  EXPECT_EQ(app_->stage(), Stage::Embedding);

  press(GLFW_KEY_SPACE);
  EXPECT_EQ(app_->caption(), "two");
  EXPECT_EQ(app_->stage(), Stage::Positional);
  press(GLFW_KEY_RIGHT);  // Right goes to the lesson's next pause, not to the next stage
  EXPECT_EQ(app_->caption(), "three");
  EXPECT_EQ(app_->stage(), Stage::AllHeads);
  EXPECT_EQ(runner_->pauses_passed(), 3);

  press(GLFW_KEY_LEFT);  // back: the state at the previous pause
  EXPECT_TRUE(runner_->waiting());
  EXPECT_EQ(runner_->pauses_passed(), 2);
  EXPECT_EQ(app_->caption(), "two");
  EXPECT_EQ(app_->stage(), Stage::Positional);
  press(GLFW_KEY_PAGE_UP);
  EXPECT_EQ(app_->caption(), "one");
  EXPECT_EQ(app_->stage(), Stage::Embedding);
  press(GLFW_KEY_PAGE_UP);  // the first pause is as far back as it goes
  EXPECT_EQ(runner_->pauses_passed(), 1);
  EXPECT_EQ(app_->caption(), "one");

  press(GLFW_KEY_PAGE_DOWN);
  press(GLFW_KEY_PAGE_DOWN);
  press(GLFW_KEY_SPACE);  // past the last pause: the lesson runs to its end
  EXPECT_TRUE(runner_->finished());
  EXPECT_EQ(app_->caption(), "");
  EXPECT_EQ(app_->stage(), Stage::Output);
  press(GLFW_KEY_LEFT);  // finished: the arrows step stages again
  EXPECT_EQ(app_->stage(), Stage::AllHeads);
  EXPECT_TRUE(log_.empty()) << log_.front();
}

TEST_F(LessonRun, WhileItWaitsTheKeysMoveTheLessonNotTheStageNorTheDecoding) {
  // Pauses that change neither the stage nor the decoding: a Right or Space taken by the stage as well would
  // show as a stage moved on or a token decoded.
  start("stage embedding\nrestart\ncaption one\npause\ncaption two\npause\ncaption three\npause\n");
  frames(5);
  ASSERT_TRUE(runner_->waiting());
  ASSERT_EQ(app_->state().translation().size(), 0u) << "restart leaves only <bos>";
  press(GLFW_KEY_RIGHT);
  EXPECT_EQ(app_->caption(), "two");
  EXPECT_EQ(app_->stage(), Stage::Embedding);
  press(GLFW_KEY_SPACE);
  EXPECT_EQ(app_->caption(), "three");
  EXPECT_EQ(app_->stage(), Stage::Embedding);
  EXPECT_EQ(app_->state().translation().size(), 0u) << "Space went on with the lesson and also decoded a token";
  press(GLFW_KEY_PAGE_DOWN);
  EXPECT_TRUE(runner_->finished());
  EXPECT_EQ(app_->stage(), Stage::Embedding);
  press(GLFW_KEY_SPACE);  // finished: Space decodes again
  EXPECT_EQ(app_->state().translation().size(), 1u);
}

TEST_F(LessonRun, UnknownCommandsAreReportedOnceAndSkipped) {
  start("caption a\nsparkle enc.0.3\npause\nconfetti off\ncaption b\npause\n");
  frames(5);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_EQ(log_[0], "script line 2: skipped: unknown command 'sparkle' (not in this version)");
  // At each pause the caption box says what the lesson skipped on the way there.
  EXPECT_EQ(app_->caption(), "a\n(skipped: unknown command 'sparkle' (not in this version))");
  press(GLFW_KEY_SPACE);
  EXPECT_EQ(app_->caption(), "b\n(skipped: unknown command 'confetti' (not in this version))");
  ASSERT_EQ(log_.size(), 2u);
  press(GLFW_KEY_LEFT);  // the replay does not report them again, but the caption says it again
  EXPECT_EQ(app_->caption(), "a\n(skipped: unknown command 'sparkle' (not in this version))");
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(LessonRun, ALessonForALargerModelPlaysOnAndSaysWhatItSkipped) {
  // The tiny model has 2 layers and 4 heads; the lesson asks for layer 3 and head 6 (numbered from 1).
  start("attention enc.2.3\ncaption one\npause\nattention cross.3.1\nhead-off dec.1.6\nhead 3\ncaption two\npause\n"
        "stage output\ncaption three\npause\n");
  frames(5);
  EXPECT_EQ(app_->caption(), "one");
  EXPECT_EQ(app_->attention().layer, 1);
  press(GLFW_KEY_SPACE);
  EXPECT_TRUE(runner_->waiting()) << "the lesson went on to its second pause";
  EXPECT_EQ(app_->caption(), "two\n(skipped: attention cross.3.1: this model has 2 decoder layers (cross.3.1 asks for layer 3);"
                              " head-off dec.1.6: this model has 4 heads (dec.1.6 asks for head 6))");
  EXPECT_EQ(app_->attention().head, 2) << "what it can show, it shows";
  EXPECT_TRUE(app_->state().interventions().heads_off.empty());
  press(GLFW_KEY_SPACE);
  EXPECT_EQ(app_->caption(), "three");
  EXPECT_EQ(app_->stage(), Stage::Output);
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_EQ(log_[0].rfind("script line 4: skipped: attention cross.3.1", 0), 0u) << log_[0];
}

// `layer` and `head` past the model are skipped and named, never clamped nor kept as a layer that does not exist:
// the layer counts of the attention kind on show (a model's encoder and decoder may have different depths).
TEST_F(LessonRun, ALayerOrHeadPastTheModelIsSkippedAndNamed) {
  start("attention dec.2.2\nlayer 3\nhead 5\ncaption one\npause\nattention enc.1.1\nlayer 2\nhead 4\ncaption two\n"
        "pause\n");
  frames(5);
  EXPECT_EQ(app_->caption(), "one\n(skipped: layer 3: this model has 2 decoder layers (layer 3); head 5: this model has "
                             "4 heads (head 5))");
  EXPECT_EQ(app_->attention().layer, 1) << "the layer it had stays";
  EXPECT_EQ(app_->attention().head, 1) << "the head it had stays";
  press(GLFW_KEY_SPACE);
  frames(5);
  EXPECT_EQ(app_->caption(), "two");
  EXPECT_EQ(app_->attention().layer, 1);
  EXPECT_EQ(app_->attention().head, 3);
}

// A sentence or reference the model cannot read (over the 16 KiB a sentence may have) is refused with its message
// and the lesson plays on: version 0.2.0 ended the app with "fatal error" when it went on to name the unknown
// words of that sentence (found by the ASan monkey, seed 8).
TEST_F(LessonRun, ASentenceTooLongToReadIsRefusedAndTheLessonGoesOn) {
  const std::string too_long(kMaxSentenceBytes + 1, 'a');
  start("sentence ein mann\nsentence " + too_long + "\nreference " + too_long + "\ncaption after\npause\n");
  frames(8);
  EXPECT_EQ(app_->caption(), "after") << "the lesson reached its pause";
  ASSERT_GE(log_.size(), 2u);
  EXPECT_EQ(log_[0], "script line 2: The sentence is 16385 bytes long; the limit is 16384 (a model reads at most a few "
                     "hundred tokens).");  // the table's words for the core's SentenceTooLong (gui/app_state.h error_text)
  EXPECT_EQ(log_[1], "script line 3: input error: [reference] the reference is 16385 bytes; the limit is 16384 (a model reads at most a few "
                     "hundred tokens)");
  EXPECT_EQ(app_->state().sentence(), "ein mann") << "the sentence it had stays";
}

TEST_F(LessonRun, AScriptDoesNotWaitAtItsPauses) {
  start("caption a\npause\ncaption b\npause\nstage output\n", kModel, false);
  frames(8);
  EXPECT_TRUE(runner_->finished());
  EXPECT_EQ(app_->caption(), "b");
  EXPECT_EQ(app_->stage(), Stage::Output);
}

TEST(Walkthrough, ParsesAndVisitsEveryStageWithACaptionAtEachPause) {
  std::string error;
  const auto lesson = parse_script_file(kWalkthrough, error, ScriptParse::Lesson);
  ASSERT_TRUE(lesson) << error;
  std::set<std::string> stages, unknown;
  int pauses = 0;
  bool caption_since_pause = false;
  for (const auto& c : lesson->commands) {
    if (!c.known) unknown.insert(c.name);
    if (c.name == "stage") {
      Stage s;
      EXPECT_TRUE(stage_from_name(c.args[0], &s)) << "line " << c.line << ": " << c.args[0];
      stages.insert(c.args[0]);
    }
    if (c.name == "caption" && !c.args.empty()) caption_since_pause = true;
    if (c.name == "pause") {
      EXPECT_TRUE(caption_since_pause) << "line " << c.line << ": a pause with nothing new to say";
      caption_since_pause = false;
      ++pauses;
    }
  }
  EXPECT_EQ(stages.size(), static_cast<size_t>(Stage::Count)) << "the lesson visits every stage";
  EXPECT_GE(pauses, 20);
  EXPECT_TRUE(unknown.empty()) << "the lesson uses only commands this version knows: " << *unknown.begin();
}

TEST_F(LessonRun, TheWalkthroughRunsOnTheShippedModelToItsEnd) {
  std::string error;
  const auto lesson = parse_script_file(kWalkthrough, error, ScriptParse::Lesson);
  ASSERT_TRUE(lesson) << error;
  start("", default_model_path());  // the app on the shipped model and the default sentence
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  runner_ = std::make_unique<ScriptRunner>(*lesson, true);
  std::set<Stage> shown;
  std::set<std::string> captions;
  for (int step = 0; step < 100 && !runner_->finished(); ++step) {
    frames(3);
    if (runner_->waiting()) {
      shown.insert(app_->stage());
      EXPECT_FALSE(app_->caption().empty()) << "pause " << runner_->pauses_passed();
      EXPECT_TRUE(app_->view().present);
      captions.insert(app_->caption());
      press(GLFW_KEY_SPACE);
    }
  }
  EXPECT_TRUE(runner_->finished());
  EXPECT_EQ(shown.size(), static_cast<size_t>(Stage::Count)) << "every stage is on screen at some pause";
  EXPECT_GE(captions.size(), 20u);
  EXPECT_TRUE(app_->state().error().empty()) << app_->state().error();
  EXPECT_TRUE(log_.empty()) << log_.front();
  EXPECT_TRUE(app_->state().interventions().heads_off.empty()) << "the lesson resets its experiments";
  EXPECT_FALSE(app_->view().present) << "the lesson ends with present off";
}

// A tap shorter than a frame (press and release in one event poll, as a presenter's clicker or `xdotool key`
// sends them) still moves the lesson on: the app under xvfb-run -a, the key from xdotool.
TEST(LessonKeys, AQuickTapContinuesTheLesson) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  if (std::system("command -v xdotool > /dev/null 2>&1") != 0) GTEST_SKIP() << "xdotool is not installed";
  const std::filesystem::path dir = testing::fresh_output_dir("lesson_tap");
  const std::string csv = (dir / "after.csv").string();
  std::ofstream(dir / "tap.lesson") << "model " << kModel << "\ncaption waiting for a tap\npause\nstage positional\n"
                                    << "export-csv " << csv << "\nquit\n";
  std::ofstream(dir / "drive.sh") << "#!/bin/sh\n"
      << STEPFORMER_APP_PATH << " --no-settings --size 1024x640 --lesson " << (dir / "tap.lesson").string() << " > "
      << (dir / "log.txt").string() << " 2>&1 &\n"
      << "app=$!\n"
      // The title names the pause once the lesson waits there (at most a minute: a lesson that never gets there
      // fails below, without a CSV, instead of hanging)
      << "timeout 60 xdotool search --sync --name 'Stepformer: lesson, pause 1 of 1' > /dev/null || { kill $app; exit 0; }\n"
      // Press and release while the app is stopped: both events wait in its queue and arrive in the same poll,
      // a tap shorter than any frame (sent to a running app, they often straddle two frames and look held)
      << "xdotool mousemove 200 200\n"
      << "kill -STOP $app\n"
      << "xdotool key --delay 0 space\n"
      << "kill -CONT $app\n"
      << "for i in $(seq 100); do kill -0 $app 2>/dev/null || exit 0; sleep 0.1; done\n"
      << "kill $app\n";
  const std::string cmd = std::string(STEPFORMER_XVFB_RUN) + " -a -s '-screen 0 1280x800x24' sh " +
                          (dir / "drive.sh").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(csv);
  ASSERT_TRUE(in) << "the tap was lost: the lesson never passed its pause (see " << (dir / "log.txt") << ")";
  std::string first_line;
  std::getline(in, first_line);
  EXPECT_EQ(first_line.rfind("# positional_encoding", 0), 0u) << first_line;
}

// [SECTION] --check-lesson: a lesson replayed without a window, before a class sees it

using Checked = sf::testing::CommandRun;

Checked check(const std::string& lesson, const std::string& model) {
  return sf::testing::run_command(std::string(STEPFORMER_APP_PATH) + " --check-lesson " + lesson +
                              (model.empty() ? "" : " --model " + model) + " 2>&1");
}

// The shipped lessons are written for German to English (written-for de-en): on the shipped de-en model they
// play without a problem; on the French one every pause still plays, and the check says the lesson is not for
// it and names the sentence's words that model reads as <unk> (before, it said "0 problems" while every caption
// about "Hemd" was false of it).
TEST(CheckLesson, TheShippedLessonsPlayOnTheirModelAndSayWhyNotOnAnother) {
  const std::string dir = std::string(STEPFORMER_SOURCE_DIR);
  for (const char* lesson : {"/assets/lessons/walkthrough.lesson", "/assets/lessons/why-masks-matter.lesson",
                             "/assets/lessons/watch-it-learn.lesson", "/assets/lessons/translator-to-gpt.lesson",
                             "/assets/lessons/three-shapes.lesson",
                             "/assets/lessons/attention-is-not-explanation.lesson"}) {
    const Checked c = check(dir + lesson, dir + "/assets/models/de-en.safetensors");
    EXPECT_EQ(c.exit_code, 0) << lesson << ":\n" << c.output;
    EXPECT_NE(c.output.find(", 0 problems"), std::string::npos) << c.output;
    EXPECT_EQ(c.output.find("problem:"), std::string::npos) << c.output;
    // Each pause with the stage it shows and its caption.
    EXPECT_NE(c.output.find("pause 1 (line "), std::string::npos) << c.output;
  }
  for (const char* lesson : {"/assets/lessons/walkthrough.lesson", "/assets/lessons/why-masks-matter.lesson"}) {
    const Checked c = check(dir + lesson, dir + "/assets/models/fr-en.safetensors");
    EXPECT_EQ(c.exit_code, 1) << lesson << ":\n" << c.output;
    EXPECT_NE(c.output.find("stage tokens; caption: "), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("problem: script line 11: this lesson is written for German to English (de-en); the model "
                            "'fr-en.safetensors' translates French to English (fr-en)"),
              std::string::npos) << c.output;
    EXPECT_NE(c.output.find("the model does not know these words of the sentence (it reads each as <unk>): 'Ein', "
                            "'Mann'"),
              std::string::npos) << c.output;
    EXPECT_NE(c.output.find("'Hemd'"), std::string::npos) << c.output;
  }
  // On the seq2seq tutorial's model (2 layers, 4 heads, learned positions) every pause still plays; what it
  // cannot show is listed, and the exit code says so.
  const Checked small = check(dir + "/assets/lessons/walkthrough.lesson",
                              dir + "/tests/fixtures/models/seq2seq_tutorial_tiny.safetensors");
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("32 pauses, "), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("skipped: attention cross.3.1: this model has 2 decoder layers"), std::string::npos)
      << small.output;
  const Checked walk = check(dir + "/assets/lessons/walkthrough.lesson", "");
  EXPECT_NE(walk.output.find("32 pauses, 0 problems"), std::string::npos) << walk.output;
  EXPECT_NE(walk.output.find("pause 8 (line 41): stage encoder-attention; caption: One cell opened"), std::string::npos)
      << walk.output;
}

// The third lesson plays the shipped timeline (no training needed); its live part is noted, not run, in a check.
TEST(CheckLesson, WatchItLearnPlaysTheShippedTimeline) {
  const std::string dir = std::string(STEPFORMER_SOURCE_DIR);
  const Checked c = check(dir + "/assets/lessons/watch-it-learn.lesson", "");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find(", 0 problems"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("stage training; caption: This is a Transformer before"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("train start classroom: not run in a check"), std::string::npos) << c.output;
}

TEST(CheckLesson, EveryProblemIsListedWithItsLineAndTheExitCodeSaysSo) {
  const std::filesystem::path dir = testing::fresh_output_dir("check_lesson");
  const std::string lesson = (dir / "bad.lesson").string();
  std::ofstream(lesson) << "stage tokens\nattention enc.10.2\nfly away\nhead 3 4\nscreenshot " << (dir / "never.png").string()
                        << "\ncaption ok\npause\nlayer 1\ncaption after\npause\n";
  const Checked c = check(lesson, kModel);
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_NE(c.output.find(lesson + ":3: unknown command 'fly' (not in this version)"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find(lesson + ":4: 'head' takes 1 argument(s), got 2"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("problem: script line 2: skipped: attention enc.10.2: this model has 2 encoder layers"),
            std::string::npos) << c.output;
  EXPECT_NE(c.output.find("pause 1 (line 7): stage tokens; caption: ok"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("pause 2 (line 10): stage tokens; caption: after"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("2 pauses, 3 problems"), std::string::npos) << c.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "never.png")) << "a check writes nothing";
  EXPECT_NE(c.output.find("screenshot " + (dir / "never.png").string() + ": not written in a check"), std::string::npos)
      << c.output;
  // A file that cannot be read: exit 2.
  EXPECT_EQ(check((dir / "missing.lesson").string(), kModel).exit_code, 2);
}

// A check holds a lesson's exports to the rules --lesson will apply (version 0.1 said "0 problems" for a
// `screenshot ../x.png` that --lesson then refused).
TEST(CheckLesson, AnExportTheLessonMayNotWriteIsAProblem) {
  const std::filesystem::path dir = testing::fresh_output_dir("check_lesson_writes");
  const std::string lesson = (dir / "writes.lesson").string();
  std::ofstream(lesson) << "caption one\nscreenshot ../outside.png\nexport-png /etc/stepformer.png\npause\n";
  const Checked c = check(lesson, kModel);
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_NE(c.output.find("problem: script line 2: screenshot ../outside.png: '../outside.png' is outside the folder "
                          "this may write to"),
            std::string::npos) << c.output;
  EXPECT_NE(c.output.find("problem: script line 3: export-png /etc/stepformer.png: '/etc/stepformer.png' is outside"),
            std::string::npos) << c.output;
  EXPECT_NE(c.output.find("1 pauses, 2 problems"), std::string::npos) << c.output;
}

// A lesson is shared between people: its text reaches the terminal escaped, never as control sequences (a
// caption that retitles the terminal and clears it, a command name with an escape in it).
TEST(CheckLesson, ControlCharactersFromTheLessonAreEscaped) {
  const std::filesystem::path dir = testing::fresh_output_dir("check_lesson_escapes");
  const std::string lesson = (dir / "hostile.lesson").string();
  std::ofstream(lesson) << "caption \x1b]0;pwned\x07\x1b[2J hello\npause\nfl\x1by away\n";
  const Checked c = check(lesson, kModel);
  EXPECT_EQ(c.output.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal: " << c.output;
  EXPECT_EQ(c.output.find('\x07'), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("caption: \\x1b]0;pwned\\x07\\x1b[2J hello"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("unknown command 'fl\\x1by'"), std::string::npos) << c.output;
}

TEST(LessonProblems, AreShownInADialogWhenTheLessonOpens) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  const std::filesystem::path dir = testing::fresh_output_dir("lesson_problems");
  std::ofstream(dir / "bad.lesson") << "caption one\nfly away\nhead x\npause\n";
  const std::string layout = (dir / "layout.json").string();
  const std::string cmd = std::string(STEPFORMER_XVFB_RUN) + " -a " + STEPFORMER_APP_PATH + " --no-settings --lesson " +
                          (dir / "bad.lesson").string() + " --frames 3 --screenshot " + (dir / "shot.png").string() +
                          " --layout-json " + layout + " > " + (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(layout);
  ASSERT_TRUE(in);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_FALSE(j["app"]["dialog"].is_null()) << "no dialog";
  EXPECT_EQ(j["app"]["dialog"]["title"], "The lesson has lines it will skip");
  const std::string problem = j["app"]["dialog"]["problem"];
  EXPECT_NE(problem.find("bad.lesson:2: unknown command 'fly'"), std::string::npos) << problem;
  EXPECT_NE(problem.find("bad.lesson:3: 'head' needs whole numbers from 1 to 100000, got 'x'"), std::string::npos) << problem;
}

}  // namespace
}  // namespace sf::gui
