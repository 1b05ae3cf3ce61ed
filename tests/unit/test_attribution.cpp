// Gradient x input (explain/attribution.h) against PyTorch autograd in float64 (tests/reference/
// make_attribution_fixtures.py: the stepwise functional pass of both PyTorch families, with the causal mask off in
// one case; GPT-2's and Marian's reference modules, with heads off), within 1e-4 of the vector's scale; and what it must be whatever the reference: a decoder row reads no later
// input (0 there), ln p at the row, bad rows and tokens refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "explain/attribution.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> gxi_fixture_paths() {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(std::string(STEPFORMER_FIXTURE_DIR) + "/attribution"))
    if (e.path().string().ends_with(".gxi.safetensors")) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// |a - b| within 1e-4 of the larger of |b| and the vector's largest |value| (a tiny attribution beside large
// ones is compared at the vector's scale, as float32 sums of many products allow).
void expect_close(const std::vector<float>& ours, const std::vector<float>& reference, const char* what) {
  ASSERT_EQ(ours.size(), reference.size()) << what;
  float scale = 0;
  for (float r : reference) scale = std::max(scale, std::abs(r));
  for (size_t i = 0; i < ours.size(); ++i)
    EXPECT_NEAR(ours[i], reference[i], 1e-4f * std::max(scale, 1e-3f)) << what << "[" << i << "]";
}

class GradientXInputPytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientXInputPytorch, EqualsAutogradInFloat64) {
  const SafetensorsFile ref = SafetensorsFile::open(GetParam());
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/" + ref.metadata().at("trace"));
  const int row = std::stoi(ref.metadata().at("row")), token = std::stoi(ref.metadata().at("token"));
  const TokenAttribution a =
      gradient_x_input(f.model.config, f.model.weights, f.src, f.tgt, f.interventions, row, token);
  EXPECT_NEAR(a.f, ref.find("f")->to_floats()[0], 1e-5);
  // (a decoder-only model has no source: no gxi.src in its reference, none from us)
  if (const TensorView* src = ref.find("gxi.src")) expect_close(a.source, src->to_floats(), "source");
  else EXPECT_TRUE(a.source.empty());
  expect_close(a.target, ref.find("gxi.tgt")->to_floats(), "target");
  // (not all zeros: the reference has something to compare)
  float largest = 0;
  for (float v : a.target) largest = std::max(largest, std::abs(v));
  EXPECT_GT(largest, 1e-3f);
}

// Integrated gradients, N = 32 steps as the reference took them (the whole batch of 33 copies through the training
// pass and its backward), against autograd's: the attributions, f and f at the baseline.
TEST_P(GradientXInputPytorch, IntegratedGradientsEqualAutograd) {
  const SafetensorsFile ref = SafetensorsFile::open(GetParam());
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/" + ref.metadata().at("trace"));
  const int row = std::stoi(ref.metadata().at("row")), token = std::stoi(ref.metadata().at("token"));
  const int steps = std::stoi(ref.metadata().at("ig_steps"));
  ASSERT_EQ(steps, 32);
  const TokenAttribution a =
      integrated_gradients(f.model.config, f.model.weights, f.src, f.tgt, f.interventions, row, token, steps);
  EXPECT_NEAR(a.f, ref.find("f")->to_floats()[0], 1e-5);
  EXPECT_NEAR(a.f_baseline, ref.find("ig.f_baseline")->to_floats()[0], 1e-5);
  if (const TensorView* src = ref.find("ig.src")) expect_close(a.source, src->to_floats(), "source");
  else EXPECT_TRUE(a.source.empty());
  expect_close(a.target, ref.find("ig.tgt")->to_floats(), "target");
  // not gradient x input (a function that returned it would pass a loose comparison)
  const std::vector<float> gxi = ref.find("gxi.tgt")->to_floats();
  float apart = 0;
  for (size_t i = 0; i < gxi.size(); ++i) apart = std::max(apart, std::abs(gxi[i] - a.target[i]));
  EXPECT_GT(apart, 1e-3f);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GradientXInputPytorch, ::testing::ValuesIn(gxi_fixture_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = fs::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

// With the causal mask, row t reads decoder inputs 0..t only: the later ones get exactly 0 (the gradient cannot
// reach them); with it off they do not. f is ln p(token) at the row, as the pass's own probabilities give it.
TEST(GradientXInput, ADecoderRowReadsNoLaterInputAndFIsItsLogProbability) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  ASSERT_GE(f.tgt.size(), 4u);
  const int row = 1, token = 4;
  const TokenAttribution a = gradient_x_input(f.model.config, f.model.weights, f.src, f.tgt, {}, row, token);
  for (size_t t = row + 1; t < a.target.size(); ++t) EXPECT_EQ(a.target[t], 0.0f) << t;
  EXPECT_NE(a.target[0], 0.0f);
  const Trace trace = forward(f.model.config, f.model.weights, f.src, f.tgt, {});
  EXPECT_NEAR(a.f, std::log(trace.probs(row, token)), 1e-4);
  Interventions no_causal;
  no_causal.causal_mask = false;
  const TokenAttribution open = gradient_x_input(f.model.config, f.model.weights, f.src, f.tgt, no_causal, row, token);
  EXPECT_NE(open.target.back(), 0.0f) << "without the causal mask the row reads the last input too";
}

// An encoder-only model's row scores its own position: every token of the sentence (both sides) is an input.
// A Hugging Face BERT's parts have no backward yet: refused by name, not a wrong number.
TEST(GradientXInput, AnEncoderOnlyModelsRowAndBertsPartsRefused) {
  const Model mlm = open_model(testing::shapes_file("bert_mlm.model.safetensors"));
  const std::vector<int> ids = {2, 4, 6, 14, 5, 12, 3};  // <bos> the dog [MASK] a red <eos>
  const TokenAttribution a = gradient_x_input(mlm.config, mlm.weights, ids, {}, {}, 3, 9);
  ASSERT_EQ(a.source.size(), ids.size());
  EXPECT_TRUE(a.target.empty());
  EXPECT_NE(a.source.front(), 0.0f);
  EXPECT_NE(a.source.back(), 0.0f) << "the blank's row reads the tokens after it too";
  const Trace trace = forward(mlm.config, mlm.weights, ids, {}, {});
  EXPECT_NEAR(a.f, std::log(trace.probs(3, 9)), 1e-4);
  const Model bert = open_model(std::string(STEPFORMER_FIXTURE_DIR) + "/bert/tiny-bert");
  try {
    gradient_x_input(bert.config, bert.weights, {2, 10, 11, 3}, {}, {}, 1, 5);
    ADD_FAILURE() << "a Hugging Face BERT's attribution computed without the backward of its parts";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("token-type"), std::string::npos) << e.what();
  }
}

// Completeness: the attributions add up to f(x) - f(0); at N = 256 within 0.02 + 2% of |f(x) - f(0)| for every
// fixture; the gap at 32, 64 and 256 steps printed (the closing note's figures).
TEST(IntegratedGradients, AddUpToTheChangeInFAsTheStepsGrow) {
  for (const std::string& path : gxi_fixture_paths()) {
    const SafetensorsFile ref = SafetensorsFile::open(path);
    const testing::ForwardFixture f =
        testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/" + ref.metadata().at("trace"));
    const int row = std::stoi(ref.metadata().at("row")), token = std::stoi(ref.metadata().at("token"));
    std::string gaps;
    for (int steps : {32, 64, 256}) {
      const TokenAttribution a =
          integrated_gradients(f.model.config, f.model.weights, f.src, f.tgt, f.interventions, row, token, steps);
      double sum = 0;
      for (float v : a.source) sum += v;
      for (float v : a.target) sum += v;
      const double change = a.f - a.f_baseline, gap = std::abs(sum - change);
      gaps.append(" N=").append(std::to_string(steps)).append(": ").append(std::to_string(gap)).append(" of ")
          .append(std::to_string(std::abs(change))).append(";");
      if (steps == 256) {
        EXPECT_LE(gap, 0.02 + 0.02 * std::abs(change)) << path;
      }
    }
    std::printf("[ completeness ] %s:%s\n", fs::path(path).stem().stem().string().c_str(), gaps.c_str());
  }
}

TEST(IntegratedGradients, BadStepCountsAreRefused) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  for (int steps : {0, -3, kMaxIntegratedGradientSteps + 1})
    EXPECT_THROW(integrated_gradients(f.model.config, f.model.weights, f.src, f.tgt, {}, 1, 4, steps), Error) << steps;
}

TEST(GradientXInput, ARowOrTokenOutsideThePassIsRefused) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  const int rows = static_cast<int>(f.tgt.size()), V = f.model.config.tgt_vocab_size;
  for (const auto& [row, token] : std::vector<std::pair<int, int>>{{-1, 0}, {rows, 0}, {0, -1}, {0, V}}) {
    try {
      gradient_x_input(f.model.config, f.model.weights, f.src, f.tgt, {}, row, token);
      ADD_FAILURE() << "row " << row << " token " << token << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    }
  }
}

}  // namespace
}  // namespace sf
