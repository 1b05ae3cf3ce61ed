// The stepwise Trainer (train/trainer.h) and training timelines (train/timeline.h): a run driven a batch at a
// time, with the weights read between batches, ends where `stepformer-cli train` ends; snapshots read back equal
// (F32), within their storage's error (F16, 8-bit rows); damaged timeline files are named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "renaming_corpus.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "train/init.h"
#include "train/parameters.h"
#include "train/session.h"
#include "train/timeline.h"
#include "train/trainer.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

// The renaming corpus (renaming_corpus.h) in a folder of its own.
fs::path renaming_corpus(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer_" + name + "_" + std::to_string(::getpid()));
  testing::write_renaming_corpus(dir, "xx", "yy", 200, 20, 12, 3);
  return dir;
}

TrainOptions small_run(const fs::path& data) {
  TrainOptions o;
  o.data_dir = data.string();
  o.source_language = "xx";
  o.target_language = "yy";
  o.model.d_model = 16;
  o.model.n_heads = 2;
  o.model.n_encoder_layers = 1;
  o.model.n_decoder_layers = 1;
  o.model.d_ff = 32;
  o.model.tie_output_embedding = true;
  o.min_frequency = 1;
  o.epochs = 2;
  o.batch_tokens = 60;
  o.schedule.peak = 3e-3f;
  o.schedule.warmup_steps = 20;
  o.seed = 7;
  o.threads = 1;
  o.store_f16 = false;
  return o;
}

TEST(Trainer, DrivenAStepAtATimeEndsWhereTheCliTrainerEnds) {
  const fs::path data = renaming_corpus("trainer");
  TrainOptions o = small_run(data);
  o.out_path = (data / "run.safetensors").string();
  const TrainResult cli = train_model(o);
  ASSERT_EQ(cli.history.size(), 2u);
  const SafetensorsFile checkpoint = SafetensorsFile::open(o.out_path + ".checkpoint");

  // The same run, nothing written, stepped by hand with a forward pass on the weights between steps (what the
  // app's live view does while a run is going).
  TrainOptions live = small_run(data);
  Trainer trainer(live);
  EXPECT_EQ(trainer.steps(), 0);
  int64_t steps = 0;
  while (!trainer.done()) {
    const StepRecord r = trainer.step();
    EXPECT_EQ(r.step, ++steps);
    EXPECT_TRUE(std::isfinite(r.loss));
    if (steps % 5 == 0) {
      Trace t;
      forward(trainer.model().config, trainer.weights(), {4, 5, 3}, {2, 6}, {}, t);
      EXPECT_TRUE(t.probs.allFinite());
    }
    if (trainer.epoch_complete()) {
      const EpochRecord e = trainer.finish_epoch();
      EXPECT_EQ(e.valid_bleu, cli.history[static_cast<size_t>(e.epoch - 1)].valid_bleu);
      EXPECT_EQ(e.valid_nll, cli.history[static_cast<size_t>(e.epoch - 1)].valid_nll);
    }
  }
  EXPECT_THROW(trainer.step(), Error);
  ModelWeights w = trainer.weights();
  for (const ParameterView& p : parameter_views(w)) {
    const TensorView* t = checkpoint.find("weights." + p.name);
    ASSERT_NE(t, nullptr) << p.name;
    EXPECT_TRUE(t->to_floats() == std::vector<float>(p.data, p.data + p.size)) << p.name << " differs from the CLI run's";
  }
  EXPECT_FALSE(fs::exists(data / ".checkpoint"));  // nothing written without out_path
  fs::remove_all(data);
}

// `train --timeline`: snapshots at step 0, on the schedule and at each epoch's end; a run interrupted after one
// epoch and resumed writes the same timeline as one that was not.
TEST(Trainer, WritesItsTimelineAndContinuesItWhenResumed) {
  const fs::path data = renaming_corpus("timeline");
  auto run = [&](const std::string& name, int epochs) {
    TrainOptions o = small_run(data);
    o.out_path = (data / (name + ".safetensors")).string();
    o.timeline_path = (data / (name + ".timeline.safetensors")).string();
    o.timeline_storage = SnapshotStorage::F32;
    o.epochs = epochs;
    train_model(o);
    return load_timeline(o.timeline_path);
  };
  const TrainingTimeline straight = run("straight", 2);
  run("resumed", 1);
  const TrainingTimeline resumed = run("resumed", 2);
  const SafetensorsFile checkpoint = SafetensorsFile::open((data / "straight.safetensors.checkpoint").string());
  ASSERT_GE(straight.snapshots.size(), 3u);
  EXPECT_EQ(straight.snapshots.front().step, 0);
  // Its provenance says what made it, as the model file's does.
  EXPECT_TRUE(straight.model.provenance.contains("command")) << straight.model.provenance.dump();
  EXPECT_NE(straight.model.provenance.value("dataset", "").find("Multi30k"), std::string::npos);
  std::vector<int64_t> epoch_ends;
  for (const TimelineSnapshot& s : straight.snapshots)
    if (s.valid_bleu >= 0) epoch_ends.push_back(s.step);
  ASSERT_EQ(epoch_ends.size(), 2u);
  EXPECT_EQ(straight.snapshots.back().step, epoch_ends.back());
  EXPECT_EQ(straight.snapshots.back().epoch, 2);
  ModelWeights last = straight.snapshots.back().weights;
  for (const ParameterView& p : parameter_views(last))
    EXPECT_TRUE(checkpoint.find("weights." + p.name)->to_floats() == std::vector<float>(p.data, p.data + p.size)) << p.name;
  ASSERT_EQ(resumed.snapshots.size(), straight.snapshots.size());
  for (size_t i = 0; i < straight.snapshots.size(); ++i) {
    EXPECT_EQ(resumed.snapshots[i].step, straight.snapshots[i].step);
    EXPECT_EQ(resumed.snapshots[i].epoch, straight.snapshots[i].epoch);
    EXPECT_TRUE(resumed.snapshots[i].weights.tgt_embedding == straight.snapshots[i].weights.tgt_embedding) << i;
  }
  fs::remove_all(data);
}

// A timeline of three snapshots of a small random model (tied output: the generator is completed on reading).
TrainingTimeline random_timeline() {
  TrainingTimeline t;
  Config& c = t.model.config;
  c.d_model = 8;
  c.n_heads = 2;
  c.n_encoder_layers = 1;
  c.n_decoder_layers = 2;
  c.d_ff = 12;
  c.src_vocab_size = 9;
  c.tgt_vocab_size = 7;
  c.max_positions = 16;
  c.tie_output_embedding = true;
  auto vocab = [](int n, const char* prefix) {
    std::vector<std::string> tokens = {"<unk>", "<pad>", "<bos>", "<eos>"};
    for (int i = 4; i < n; ++i) tokens.push_back(prefix + std::to_string(i));
    return Vocabulary(tokens, SpecialIds{});
  };
  t.model.src_vocab = vocab(9, "s");
  t.model.tgt_vocab = vocab(7, "t");
  for (int i = 0; i < 3; ++i) {
    TimelineSnapshot s;
    s.step = i * 50;
    s.epoch = i;
    s.loss = 3.0 - i;
    s.valid_bleu = i == 2 ? 12.5 : -1;
    s.weights = initialize_weights(c, 10 + i);
    complete_shared_weights(c, s.weights);
    t.snapshots.push_back(std::move(s));
  }
  return t;
}

// Largest |a - b| relative to the largest |a| of the same row, over every weight.
double worst_row_error(const Config& c, const ModelWeights& a, const ModelWeights& b) {
  double worst = 0;
  ModelWeights bb = b;
  std::vector<std::pair<const float*, float*>> pairs;
  for_each_weight(&c, a, [&](const ConstWeightRef& ref) {
    const int64_t cols = ref.is_matrix() ? ref.cols : ref.rows, rows = ref.is_matrix() ? ref.rows : 1;
    const float* x = ref.data();
    const float* y = nullptr;
    for_each_weight(&c, bb, [&](const WeightRef& other) {
      if (other.name == ref.name) y = other.data();
    });
    for (int64_t r = 0; r < rows; ++r) {
      double max = 0, diff = 0;
      for (int64_t k = 0; k < cols; ++k) {
        max = std::max(max, std::abs(static_cast<double>(x[r * cols + k])));
        diff = std::max(diff, std::abs(static_cast<double>(x[r * cols + k]) - y[r * cols + k]));
      }
      if (max > 0) worst = std::max(worst, diff / max);
    }
  });
  return worst;
}

TEST(Timeline, SnapshotsReadBackEqualOrWithinTheirStoragesError) {
  const TrainingTimeline t = random_timeline();
  const Config& c = t.model.config;
  size_t f32_bytes = 0, f16_bytes = 0, int8_bytes = 0;
  for (SnapshotStorage storage : {SnapshotStorage::F32, SnapshotStorage::F16, SnapshotStorage::Int8Rows}) {
    const std::vector<std::byte> bytes = serialize_timeline(t, storage);
    uint64_t header = 0;  // the tensors' bytes: the file less its length field and JSON header
    for (int i = 0; i < 8; ++i) header |= static_cast<uint64_t>(bytes[static_cast<size_t>(i)]) << (8 * i);
    (storage == SnapshotStorage::F32 ? f32_bytes : storage == SnapshotStorage::F16 ? f16_bytes : int8_bytes) =
        bytes.size() - 8 - header;
    const TrainingTimeline back = load_timeline(SafetensorsFile::from_bytes(bytes));
    EXPECT_EQ(back.storage, storage);
    EXPECT_EQ(config_to_json(back.model.config), config_to_json(c));
    EXPECT_EQ(back.model.tgt_vocab.size(), 7);
    ASSERT_EQ(back.snapshots.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const TimelineSnapshot& a = t.snapshots[i];
      const TimelineSnapshot& b = back.snapshots[i];
      EXPECT_EQ(b.step, a.step);
      EXPECT_EQ(b.epoch, a.epoch);
      EXPECT_EQ(b.loss, a.loss);
      EXPECT_EQ(b.valid_bleu, a.valid_bleu);
      EXPECT_TRUE(b.weights.generator.weight == b.weights.tgt_embedding) << "the tied generator is completed";
      const double error = worst_row_error(c, a.weights, b.weights);
      if (storage == SnapshotStorage::F32) {
        EXPECT_EQ(error, 0.0);
      } else if (storage == SnapshotStorage::F16) {
        EXPECT_GT(error, 0.0);
        EXPECT_LT(error, 1e-3);
      } else {
        EXPECT_GT(error, 1e-3) << "8-bit rows cannot be exact";
        EXPECT_LE(error, 0.5 / 127 + 1e-6) << "each weight within half a step of its row's scale";
        // Biases and norms stay F32: exact.
        EXPECT_TRUE(b.weights.encoder_layers[0].ffn_norm.gamma == a.weights.encoder_layers[0].ffn_norm.gamma);
      }
    }
  }
  EXPECT_LT(f16_bytes, f32_bytes);
  EXPECT_LT(int8_bytes, f16_bytes);
}

TEST(Timeline, ScheduleIsDenseEarlyAndEveryEpoch) {
  std::vector<int64_t> due;
  for (int64_t s = 0; s <= 2000; ++s)
    if (snapshot_due(s, false)) due.push_back(s);
  const std::vector<int64_t> expected = {0, 50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 800, 900, 1000};
  EXPECT_EQ(due, expected);
  EXPECT_TRUE(snapshot_due(1234, true));
}

TEST(Timeline, DamagedFilesAndModelsAreNamed) {
  TrainingTimeline t = random_timeline();
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Steps that do not rise are refused before writing.
  TrainingTimeline bad = t;
  bad.snapshots[2].step = 50;
  EXPECT_NE(message([&] { serialize_timeline(bad, SnapshotStorage::F32); }).find("must rise"), std::string::npos);
  // A NaN weight is refused.
  bad = t;
  bad.snapshots[1].weights.decoder_layers[1].ffn.fc1.weight(2, 3) = std::nanf("");
  EXPECT_NE(message([&] { serialize_timeline(bad, SnapshotStorage::Int8Rows); }).find("fc1.weight"), std::string::npos);

  // A timeline is not a model, and a model is not a timeline.
  const std::vector<std::byte> bytes = serialize_timeline(t, SnapshotStorage::F16);
  EXPECT_NE(message([&] { load_model(SafetensorsFile::from_bytes(bytes)); }).find("is a training timeline"),
            std::string::npos);
  Model m = t.model;
  m.weights = t.snapshots[0].weights;
  EXPECT_NE(message([&] { load_timeline(SafetensorsFile::from_bytes(serialize_model(m))); }).find("expected 'stepformer-timeline'"),
            std::string::npos);

  // A snapshot's tensor renamed: named as missing. Cut short: named as damaged.
  std::vector<std::byte> renamed = bytes;
  const std::string from = "snapshot.1.decoder.layers.0.cross_attn.v.weight";
  std::string text(reinterpret_cast<const char*>(renamed.data()), renamed.size());
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  renamed[at + 9] = std::byte{'7'};  // "snapshot.7..."
  EXPECT_NE(message([&] { load_timeline(SafetensorsFile::from_bytes(renamed)); }).find("lacks tensor '" + from + "'"),
            std::string::npos);
  const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2));
  EXPECT_NE(message([&] { load_timeline(SafetensorsFile::from_bytes(cut)); }), "no error");
}

TEST(Timeline, PathBesideTheModel) {
  EXPECT_EQ(timeline_path_for("runs/de-en.safetensors"), "runs/de-en.timeline.safetensors");
  EXPECT_EQ(timeline_path_for("model"), "model.timeline.safetensors");
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// Waits (up to 60 s) until the session's state is `state`.
bool reaches(const TrainingSession& session, TrainingSession::State state) {
  for (int i = 0; i < 6000; ++i) {
    if (session.status().state == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(TrainingSession, PausedAndResumedOnItsThreadItEndsWhereTheCliTrainerEnds) {
  const fs::path data = renaming_corpus("session");
  TrainOptions o = small_run(data);
  o.out_path = (data / "run.safetensors").string();
  train_model(o);
  const SafetensorsFile checkpoint = SafetensorsFile::open(o.out_path + ".checkpoint");

  // Started paused (a pause requested while it runs takes effect at its next step, in the same place: a run this
  // small could end before a test thread asks).
  TrainingSession session(small_run(data), true);
  ASSERT_TRUE(reaches(session, TrainingSession::State::Paused));
  const int64_t paused_at = session.status().step;
  EXPECT_EQ(paused_at, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(session.status().step, paused_at) << "a paused run takes no step";
  Model live;
  int64_t step = -1;
  ASSERT_TRUE(session.weights_now(live, step));
  EXPECT_EQ(step, paused_at);
  // Asked without blocking, a paused worker copies its weights at once (the app's refresh never waits on a step).
  const auto requested = [&](std::shared_ptr<const Model>& copy, int64_t& at) {
    if (!session.request_weights()) return false;
    for (int i = 0; i < 500; ++i) {
      if (session.take_requested_weights(copy, at)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  std::shared_ptr<const Model> copy;
  int64_t copy_step = -1;
  ASSERT_TRUE(requested(copy, copy_step));
  EXPECT_EQ(copy_step, paused_at);
  EXPECT_TRUE(copy->weights.src_embedding == live.weights.src_embedding);
  EXPECT_FALSE(session.take_requested_weights(copy, copy_step)) << "one copy per request";
  Model description;
  ASSERT_TRUE(session.model_description(description));
  EXPECT_EQ(description.config.d_model, live.config.d_model);
  EXPECT_EQ(description.weights.src_embedding.size(), 0);
  session.resume();
  ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(120)));
  const TrainingSession::Status s = session.status();
  EXPECT_EQ(s.state, TrainingSession::State::Finished) << s.message;
  EXPECT_EQ(s.history.size(), 2u);
  EXPECT_EQ(s.losses.size(), static_cast<size_t>(s.step));
  EXPECT_EQ(s.seconds_left, 0);

  ASSERT_TRUE(session.weights_now(live, step));
  ASSERT_TRUE(requested(copy, copy_step));  // ended: copied by the asking thread
  EXPECT_EQ(copy_step, step);
  EXPECT_TRUE(copy->weights.tgt_embedding == live.weights.tgt_embedding);
  for (const ParameterView& p : parameter_views(live.weights)) {
    const TensorView* t = checkpoint.find("weights." + p.name);
    ASSERT_NE(t, nullptr) << p.name;
    EXPECT_TRUE(t->to_floats() == std::vector<float>(p.data, p.data + p.size)) << p.name << " differs from the CLI run's";
  }
  // Snapshots: the weights before training, early steps, each epoch's end (the last one: the final weights).
  const TrainingTimeline timeline = session.timeline();
  ASSERT_GE(timeline.snapshots.size(), 3u);
  EXPECT_EQ(timeline.snapshots.front().step, 0);
  EXPECT_TRUE(timeline.snapshots.front().weights.src_embedding == initialize_weights(live.config, o.seed).src_embedding);
  EXPECT_EQ(timeline.snapshots.back().step, step);
  EXPECT_EQ(timeline.snapshots.back().valid_bleu, s.history.back().valid_bleu);
  EXPECT_TRUE(timeline.snapshots.back().weights.src_embedding == live.weights.src_embedding);
  for (size_t i = 1; i < timeline.snapshots.size(); ++i) EXPECT_GT(timeline.snapshots[i].step, timeline.snapshots[i - 1].step);
  fs::remove_all(data);
}

TEST(TrainingSession, StopKeepsTheWeightsOfItsStepAndFailuresSayWhere) {
  const fs::path data = renaming_corpus("session_stop");
  {
    TrainOptions o = small_run(data);
    o.epochs = 1000;  // minutes of work: the stop always comes first
    TrainingSession session(o);
    ASSERT_TRUE(session.wait_for_step(2, std::chrono::seconds(60)));
    session.stop();
    ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(60)));
    const TrainingSession::Status s = session.status();
    EXPECT_EQ(s.state, TrainingSession::State::Stopped);
    const TrainingTimeline t = session.timeline();
    EXPECT_EQ(t.snapshots.back().step, s.step);
  }
  {
    TrainOptions o = small_run(data);
    o.data_dir = (data / "missing").string();
    TrainingSession session(o);
    ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(60)));
    EXPECT_EQ(session.status().state, TrainingSession::State::Failed);
    EXPECT_NE(session.status().message.find("preparing the run"), std::string::npos) << session.status().message;
  }
  {
    // A learning rate far too high: the loss overflows; the run stops at that step with its snapshots kept.
    TrainOptions o = small_run(data);
    o.schedule.kind = LearningRateSchedule::Kind::Constant;
    o.schedule.peak = 1e30f;
    o.clip_norm = 0;
    TrainingSession session(o);
    ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(60)));
    const TrainingSession::Status s = session.status();
    EXPECT_EQ(s.state, TrainingSession::State::Failed);
    EXPECT_NE(s.message.find("at step " + std::to_string(s.step + 1)), std::string::npos) << s.message;
    EXPECT_GE(session.timeline().snapshots.size(), 1u);
  }
  fs::remove_all(data);
}

}  // namespace
}  // namespace sf
