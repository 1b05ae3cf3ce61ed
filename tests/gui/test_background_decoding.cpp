// Decodings off the frame thread (AppState::step_budget_ms() > 0, as the app runs): a setter returns at once,
// the views keep the last whole result until the new one is done, the newest request wins, a failure that comes
// late puts the inputs back, and every result equals the one computed at once (budget 0).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include "gui/app.h"
#include "gui/app_state.h"
#include "gui/script/script.h"
#include "headless_imgui.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

// A budget far shorter than any decoding, and every decoding held at a gate (AppState::set_worker_start_hook) until
// the test opens it: each request is still running when its setter returns, whatever the machine's speed or
// load (a busy machine may pause the frame thread longer than a whole decoding takes), and nothing is timed.
constexpr double kTinyBudgetMs = 1e-3;
const std::string kLong =
    "Ein Mann in einem orangefarbenen Hemd steht auf der Straße , während zwei Frauen mit roten Hüten neben einem "
    "alten Auto warten und ein kleiner Hund über den Platz läuft .";
const std::string kShort = "Zwei Hunde spielen im Schnee .";

class BackgroundDecoding : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(at_once.load_model(default_model_path())) << at_once.error();
    ASSERT_TRUE(later.use_model(at_once.model(), at_once.model_path())) << later.error();
    ASSERT_TRUE(at_once.set_sentence(kDefaultSentence)) << at_once.error();
    ASSERT_TRUE(later.set_sentence(kDefaultSentence)) << later.error();  // (at once: the budget is not set yet)
    later.set_step_budget_ms(kTinyBudgetMs);
    later.set_worker_start_hook([gate = gate_] { gate->pass(); });
  }
  // A decoding a test left at the gate (one a setter should have refused, say) is let go, so the AppState's
  // destructor, which waits for its work, cannot wait forever: the test fails on its assertions instead.
  void TearDown() override {
    gate_->set_open(true);
    end_gate_->set_open(true);
  }
  // Lets the decodings held at the gate run, waits for them, and closes the gate behind them.
  void finish() {
    gate_->set_open(true);
    later.finish_background();
    gate_->set_open(false);
  }
  void expect_same_result() {
    EXPECT_FALSE(later.busy());
    EXPECT_EQ(later.translation(), at_once.translation());
    EXPECT_EQ(token_ids(later.source_tokens()), token_ids(at_once.source_tokens()));
    EXPECT_EQ(later.trace().tgt.ids, at_once.trace().tgt.ids);
    EXPECT_EQ(later.trace().probs, at_once.trace().probs);
    ASSERT_TRUE(later.decoder() && at_once.decoder());
    EXPECT_EQ(later.decoder()->steps(), at_once.decoder()->steps());
    EXPECT_EQ(later.decoder()->finished(), at_once.decoder()->finished());
  }
  struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool open = false;
    std::atomic<int> arrived{0};  // decodings that reached the gate
    // Waits for the test to open the gate, at most two minutes: a test that never opens it fails, not hangs.
    void pass() {
      ++arrived;
      std::unique_lock<std::mutex> lock(mutex);
      if (!changed.wait_for(lock, std::chrono::minutes(2), [&] { return open; }))
        ADD_FAILURE() << "a decoding waited two minutes at the gate and the test never opened it";
    }
    void set_open(bool now) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        open = now;
      }
      changed.notify_all();
    }
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::shared_ptr<Gate> end_gate_ = std::make_shared<Gate>();
  AppState at_once, later;
};

TEST_F(BackgroundDecoding, ASetterReturnsAtOnceAndTheViewsKeepTheLastWholeResult) {
  const int version = later.version();
  const std::vector<int> shown = later.translation();
  const Trace shown_trace = later.trace();
  ASSERT_TRUE(later.set_sentence(kLong)) << later.error();
  EXPECT_TRUE(later.busy());
  EXPECT_EQ(later.sentence(), kLong);  // what the user asked for, at once
  EXPECT_EQ(later.version(), version);  // what is shown: the last result, all of a piece
  EXPECT_EQ(later.translation(), shown);
  EXPECT_EQ(later.trace().src.ids, shown_trace.src.ids);
  EXPECT_EQ(token_ids(later.source_tokens()), shown_trace.src.ids);
  EXPECT_FALSE(later.step()) << "no step while the decoder is being rebuilt";

  finish();
  EXPECT_EQ(later.version(), version + 1);
  ASSERT_TRUE(at_once.set_sentence(kLong));
  expect_same_result();
  EXPECT_NE(later.translation(), shown);
}

TEST_F(BackgroundDecoding, TheNewestRequestWinsAndTheOlderIsNeverShown) {
  const int version = later.version();
  ASSERT_TRUE(later.set_sentence(kLong));
  ASSERT_TRUE(later.set_sentence(kShort));  // while the first still runs: it is cancelled, this one waits for it
  EXPECT_TRUE(later.busy());
  finish();
  EXPECT_EQ(later.version(), version + 1) << "only the newest result is shown";
  ASSERT_TRUE(at_once.set_sentence(kShort));
  expect_same_result();

  // After an intervention the translation is re-decoded from a guess in a few batched passes, which do not stop
  // when cancelled: the superseded result comes back whole, and is dropped all the same.
  Interventions first, second;
  first.heads_off.push_back({AttentionKind::Cross, 0, 0});
  second.heads_off.push_back({AttentionKind::Cross, 1, 1});
  ASSERT_TRUE(later.set_interventions(first));
  ASSERT_TRUE(later.set_interventions(second));
  finish();
  EXPECT_EQ(later.version(), version + 2);
  ASSERT_TRUE(at_once.set_interventions(second));
  expect_same_result();
}

// A decoding that finished whole, before any cancel, but is not yet taken when a newer request comes: it is
// dropped as well (poll_background sees the request waiting), and only the newest is shown.
TEST_F(BackgroundDecoding, AResultFinishedJustBeforeANewerRequestIsDroppedToo) {
  later.set_worker_start_hook(nullptr);
  later.set_worker_end_hook([gate = end_gate_] { gate->pass(); });
  const int version = later.version();
  ASSERT_TRUE(later.set_sentence(kLong));
  for (int i = 0; i < 12000 && end_gate_->arrived.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(end_gate_->arrived.load(), 1) << "the first decoding never finished (two minutes)";
  ASSERT_TRUE(later.set_sentence(kShort));  // the first's outcome is made, uncancelled: only the queue tells
  end_gate_->set_open(true);
  later.finish_background();
  EXPECT_EQ(later.version(), version + 1) << "the finished but superseded result was shown too";
  ASSERT_TRUE(at_once.set_sentence(kShort));
  expect_same_result();
}

TEST_F(BackgroundDecoding, AnInputTheDecoderRefusesIsRefusedAtOnceNotLater) {
  DecodeOptions too_wide = later.decode_options();
  too_wide.strategy = DecodeStrategy::Beam;
  too_wide.beam_width = kMaxBeamWidth + 1;
  const DecodeOptions before = later.decode_options();
  EXPECT_FALSE(later.set_decode_options(too_wide));
  EXPECT_NE(later.error().find(std::to_string(kMaxBeamWidth)), std::string::npos) << later.error();
  EXPECT_FALSE(later.busy());
  EXPECT_EQ(later.decode_options().beam_width, before.beam_width);
  EXPECT_EQ(later.decode_options().strategy, before.strategy);
}

TEST_F(BackgroundDecoding, AFailureAfterTheSetterReturnedPutsTheInputsBack) {
  // The worker waits at a gate the test opens once both setters have returned, then fails as memory running out
  // would: the failure comes late whatever the machine's speed.
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  later.set_worker_start_hook([opened] {
    opened.wait();
    throw std::bad_alloc();
  });
  const std::vector<int> shown = later.translation();
  const int version = later.version();
  const Interventions before = later.interventions();
  ASSERT_TRUE(later.set_sentence(kShort));  // accepted: its checks pass, and it is decoded later
  Interventions off;
  off.heads_off.push_back({AttentionKind::Cross, 0, 0});
  ASSERT_TRUE(later.set_interventions(off));
  EXPECT_EQ(later.sentence(), kShort);
  EXPECT_TRUE(later.busy());
  gate.set_value();
  finish();
  const std::string late = later.take_late_failure();
  EXPECT_NE(late.find("bad_alloc"), std::string::npos) << late;
  EXPECT_EQ(later.error(), late);
  EXPECT_TRUE(later.take_late_failure().empty()) << "said once";
  EXPECT_EQ(later.sentence(), kDefaultSentence) << "the inputs of what is shown";
  EXPECT_EQ(later.interventions(), before);
  EXPECT_EQ(later.translation(), shown);
  EXPECT_EQ(later.version(), version);
  later.set_worker_start_hook(nullptr);  // and it goes on as before
  ASSERT_TRUE(later.set_sentence(kShort));
  finish();
  ASSERT_TRUE(at_once.set_sentence(kShort));
  expect_same_result();
}

TEST_F(BackgroundDecoding, StepsRunOnTheDecoderOffTheFrameThreadAndStepNIsNSteps) {
  ASSERT_TRUE(at_once.restart());
  ASSERT_TRUE(later.restart());
  finish();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(at_once.step());
  ASSERT_TRUE(later.step(3));
  EXPECT_TRUE(later.busy());
  EXPECT_EQ(later.decoder(), nullptr) << "the work holds the decoder while it steps";
  EXPECT_FALSE(later.step()) << "a second step waits for the first";
  EXPECT_FALSE(later.step_back());
  finish();
  expect_same_result();
  EXPECT_EQ(later.decoder()->steps(), 3);

  ASSERT_TRUE(at_once.step_back());
  ASSERT_TRUE(at_once.step_back());
  ASSERT_TRUE(later.step_back(2));
  finish();
  expect_same_result();

  ASSERT_TRUE(at_once.run_to_end());
  ASSERT_TRUE(later.run_to_end());
  finish();
  expect_same_result();
  EXPECT_TRUE(later.decoding_finished());
  EXPECT_FALSE(later.step()) << "finished: nothing to step";
}

TEST_F(BackgroundDecoding, TheTranslationAsTrainedIsDecodedInTheBackgroundToo) {
  DecodeOptions beam = later.decode_options();
  beam.strategy = DecodeStrategy::Beam;  // (greedy translations are remembered and would be taken at once)
  beam.beam_width = 3;
  ASSERT_TRUE(at_once.set_decode_options(beam));
  ASSERT_TRUE(later.set_decode_options(beam));
  finish();
  Interventions off;
  for (int h = 0; h < at_once.model()->config.n_heads; ++h) off.heads_off.push_back({AttentionKind::Cross, 0, h});
  ASSERT_TRUE(at_once.set_interventions(off)) << at_once.error();
  ASSERT_TRUE(later.set_interventions(off)) << later.error();
  finish();
  const std::vector<int> expected = at_once.translation_as_trained();
  ASSERT_FALSE(expected.empty());
  // Held at the gate like every decoding: still running when the call returns, whatever the machine's load.
  EXPECT_TRUE(later.translation_as_trained().empty()) << "still being decoded: nothing to compare with yet";
  EXPECT_TRUE(later.busy());
  EXPECT_TRUE(later.translation_as_trained().empty()) << "asked again while it runs: still nothing, no second decoding";
  finish();
  EXPECT_EQ(later.translation_as_trained(), expected);
}

TEST_F(BackgroundDecoding, ANewModelShowsNothingUntilItsFirstDecodingIsDone) {
  ASSERT_TRUE(later.use_model(at_once.model(), "again.safetensors"));
  EXPECT_TRUE(later.busy());
  EXPECT_FALSE(later.ready()) << "the old trace belongs to the old model";
  EXPECT_EQ(later.translation_as_trained(), std::vector<int>{});
  finish();
  EXPECT_TRUE(later.ready());
  expect_same_result();
}

// A script's next command waits for the decoding its last one started: `step 2` after `restart` is two steps,
// not a step refused because the decoder was still being rebuilt.
TEST(BackgroundDecodingScript, CommandsWaitForTheDecodingBeforeThem) {
  testing::start_headless_imgui();
  AppOptions options;
  options.model_path = default_model_path();
  App app(options);
  app.finish_loading();
  ASSERT_TRUE(app.state().model());
  app.mutable_state().set_step_budget_ms(kTinyBudgetMs);
  std::string error;
  auto script = parse_script("sentence " + kLong + "\nrestart\nstep 2\nstep\nback\n", "t.script", error,
                             ScriptParse::Strict);
  ASSERT_TRUE(script) << error;
  ScriptRunner runner(std::move(*script), /*interactive=*/false);
  std::vector<std::string> log;
  for (int frame = 0; frame < 100000 && !runner.finished(); ++frame) {
    runner.before_frame(app, log);
    testing::headless_frame(app, -1);
  }
  app.mutable_state().finish_background();
  EXPECT_TRUE(runner.finished());
  EXPECT_TRUE(log.empty()) << log.front();
  EXPECT_EQ(app.state().sentence(), kLong);
  ASSERT_TRUE(app.state().decoder());
  EXPECT_EQ(app.state().decoder()->steps(), 2);
  EXPECT_EQ(app.state().translation().size(), 2u);
  if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
}

}  // namespace
}  // namespace sf::gui
