// The training pass against PyTorch (tests/reference/make_training_fixtures.py): on the same weights and the
// same padded batch, with dropout off, the label-smoothed loss and every parameter's gradient equal
// PyTorch's autograd, and four Adam steps give the same losses as torch.optim.Adam.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "training_fixture.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "train/batched_model.h"
#include "train/optimizer.h"
#include "train/parameters.h"
#include "util/error.h"

namespace sf {
namespace {

std::string fixture(const std::string& name) { return std::string(STEPFORMER_FIXTURE_DIR) + "/training/" + name; }

Batch read_batch(const SafetensorsFile& f, int pad_id) {
  Batch b;
  int rows = 0;
  b.source = testing::read_ids(f, "ids.src", &b.size, &b.source_length);
  b.target_in = testing::read_ids(f, "ids.tgt_in", &rows, &b.target_length);
  b.target_out = testing::read_ids(f, "ids.tgt_out", &rows, &b.target_length);
  for (int id : b.target_out) b.target_tokens += id != pad_id;
  return b;
}

class TrainingAgainstPytorch : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainingAgainstPytorch, LossAndGradientsMatchAutograd) {
  const std::string name = GetParam();
  Model model = load_model(fixture(name + ".model.safetensors"));
  const SafetensorsFile ref = SafetensorsFile::open(fixture(name + ".reference.safetensors"));
  const Config& c = model.config;
  const Batch batch = read_batch(ref, c.pad_id);
  const float smoothing = std::stof(ref.metadata().at("label_smoothing"));

  BatchTrace trace;
  Mat dlogits;
  const LossResult r = batch_forward(c, model.weights, batch, {}, smoothing, trace, &dlogits);
  EXPECT_NEAR(r.loss, std::stod(ref.metadata().at("loss")), 1e-5);
  ModelWeights grads = zeros_like(model.weights);
  batch_backward(c, model.weights, batch, trace, dlogits, grads);

  const int compared = testing::expect_gradients_match(model.family, c, grads, ref, name);
  EXPECT_GT(compared, 20);
}

TEST_P(TrainingAgainstPytorch, AdamStepsGiveTorchsLosses) {
  const std::string name = GetParam();
  Model model = load_model(fixture(name + ".model.safetensors"));
  const SafetensorsFile ref = SafetensorsFile::open(fixture(name + ".reference.safetensors"));
  const Config& c = model.config;
  const Batch batch = read_batch(ref, c.pad_id);
  const float smoothing = std::stof(ref.metadata().at("label_smoothing"));
  const float lr = std::stof(ref.metadata().at("learning_rate"));
  const std::vector<double> expected = nlohmann::json::parse(ref.metadata().at("adam_losses"));

  Adam adam(model.weights, AdamSettings{0.9f, 0.98f, 1e-9f});
  ModelWeights grads = zeros_like(model.weights);
  BatchTrace trace;
  Mat dlogits;
  for (size_t step = 0; step < expected.size(); ++step) {
    const LossResult r = batch_forward(c, model.weights, batch, {}, smoothing, trace, &dlogits);
    EXPECT_NEAR(r.loss, expected[step], 2e-5 * (1 + step)) << name << " step " << step;
    grads = zeros_like(model.weights);
    batch_backward(c, model.weights, batch, trace, dlogits, grads);
    adam.step(model.weights, grads, lr);
  }
}

TEST(LearningRateSchedule, WarmsUpLinearlyThenDecaysAsTheInverseSquareRoot) {
  // The paper's schedule scaled to peak at `peak` on step `warmup`: peak * min(step / warmup, sqrt(warmup / step)).
  LearningRateSchedule s;
  s.peak = 1e-3f;
  s.warmup_steps = 400;
  EXPECT_FLOAT_EQ(s.at(1), 1e-3f / 400);
  EXPECT_FLOAT_EQ(s.at(100), 0.25e-3f);
  EXPECT_FLOAT_EQ(s.at(400), 1e-3f);
  EXPECT_FLOAT_EQ(s.at(1600), 0.5e-3f);
  EXPECT_FLOAT_EQ(s.at(40000), 0.1e-3f);
  s.kind = LearningRateSchedule::Kind::Constant;
  EXPECT_FLOAT_EQ(s.at(1), 1e-3f);
  EXPECT_FLOAT_EQ(s.at(40000), 1e-3f);
  EXPECT_EQ(schedule_kind_from_string("constant"), LearningRateSchedule::Kind::Constant);
  EXPECT_EQ(schedule_kind_from_string("inverse_sqrt"), LearningRateSchedule::Kind::InverseSqrt);
  EXPECT_THROW(schedule_kind_from_string("cosine"), Error);
}

TEST(ClipGradients, ScalesTheGlobalNormDownToTheLimitAsTorchDoes) {
  // torch.nn.utils.clip_grad_norm_: the global L2 norm over every parameter; above max_norm, every gradient is
  // multiplied by max_norm / (norm + 1e-6); at or below it, nothing changes.
  Model model = load_model(fixture("pytorch_tutorial_post.model.safetensors"));
  ModelWeights grads = zeros_like(model.weights);
  const auto views = parameter_views(grads);
  ASSERT_GE(views.size(), 2u);
  views.front().data[0] = 3.0f;  // 3 and 4 in two different parameters: norm 5
  views.back().data[views.back().size - 1] = 4.0f;
  EXPECT_NEAR(clip_gradients(grads, 10.0f), 5.0, 1e-6);
  EXPECT_EQ(views.front().data[0], 3.0f) << "under the limit: unchanged";
  EXPECT_NEAR(clip_gradients(grads, 1.0f), 5.0, 1e-6);
  EXPECT_NEAR(views.front().data[0], 3.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(views.back().data[views.back().size - 1], 4.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(clip_gradients(grads, 0.0f), 1.0, 1e-5) << "max_norm 0 only measures";
  EXPECT_NEAR(views.front().data[0], 3.0 / (5.0 + 1e-6), 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Families, TrainingAgainstPytorch,
                         ::testing::Values("pytorch_tutorial_post", "pytorch_tutorial_pre_gelu",
                                           "seq2seq_tutorial_learned"));

}  // namespace
}  // namespace sf
