// Gradient x input (explain/attribution.h) against PyTorch autograd in float64 (tests/reference/
// make_attribution_fixtures.py: the stepwise functional pass of both PyTorch families, with the causal mask off in
// one case; GPT-2's, Marian's and BERT's reference modules, with heads and positions off), within 1e-4 of the
// vector's scale; and what it must be whatever the reference: a decoder row reads no later
// input (0 there), ln p at the row, bad rows and tokens refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
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
  // (a decoder-only model has no source, an encoder-only model no target: no such side in its reference, none
  // from us)
  if (const TensorView* src = ref.find("gxi.src")) expect_close(a.source, src->to_floats(), "source");
  else EXPECT_TRUE(a.source.empty());
  if (const TensorView* tgt = ref.find("gxi.tgt")) expect_close(a.target, tgt->to_floats(), "target");
  else EXPECT_TRUE(a.target.empty());
  // (not all zeros: the reference has something to compare)
  float largest = 0;
  for (const std::vector<float>* side : {&a.source, &a.target})
    for (float v : *side) largest = std::max(largest, std::abs(v));
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
  if (const TensorView* tgt = ref.find("ig.tgt")) expect_close(a.target, tgt->to_floats(), "target");
  else EXPECT_TRUE(a.target.empty());
  // not gradient x input (a function that returned it would pass a loose comparison)
  const bool decoder = ref.find("gxi.tgt") != nullptr;
  const std::vector<float> gxi = ref.find(decoder ? "gxi.tgt" : "gxi.src")->to_floats();
  const std::vector<float>& ours = decoder ? a.target : a.source;
  float apart = 0;
  for (size_t i = 0; i < gxi.size(); ++i) apart = std::max(apart, std::abs(gxi[i] - ours[i]));
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
TEST(GradientXInput, AnEncoderOnlyModelsRowReadsBothSides) {
  const Model mlm = open_model(testing::shapes_file("bert_mlm.model.safetensors"));
  const std::vector<int> ids = {2, 4, 6, 14, 5, 12, 3};  // <bos> the dog [MASK] a red <eos>
  const TokenAttribution a = gradient_x_input(mlm.config, mlm.weights, ids, {}, {}, 3, 9);
  ASSERT_EQ(a.source.size(), ids.size());
  EXPECT_TRUE(a.target.empty());
  EXPECT_NE(a.source.front(), 0.0f);
  EXPECT_NE(a.source.back(), 0.0f) << "the blank's row reads the tokens after it too";
  const Trace trace = forward(mlm.config, mlm.weights, ids, {}, {});
  EXPECT_NEAR(a.f, std::log(trace.probs(3, 9)), 1e-4);
}

// The from-scratch family (the study notes' reshape_heads attention) has no backward: gradient attributions are
// refused by name, pointing to rollout, which reads the maps alone and works.
TEST(GradientXInput, TheFromScratchFamilyIsRefusedByNameAndRolloutWorks) {
  const Model m = open_model(std::string(STEPFORMER_FIXTURE_DIR) + "/from_scratch/fs_small.model.safetensors");
  ASSERT_EQ(m.config.attention, AttentionStyle::ReshapeHeads);
  const std::vector<int> src = {2, 5, 6, 3}, tgt = {2, 5, 6};
  for (const AttributionMethod method : {AttributionMethod::GradientXInput, AttributionMethod::IntegratedGradients}) {
    try {
      attribute_rows(m.config, m.weights, src, tgt, {}, {5, 6, 3}, method, 4);
      ADD_FAILURE() << "a gradient through reshape_heads attention";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
      EXPECT_NE(std::string(e.what()).find("reshape_heads"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rollout"), std::string::npos) << e.what();
    }
  }
  const AttributionMap rollout = attribute_rows(m.config, m.weights, src, tgt, {}, {5, 6, 3}, AttributionMethod::Rollout);
  for (int r = 0; r < rollout.rows(); ++r) EXPECT_NEAR(rollout.values.row(r).sum(), 1.0f, 1e-5f);
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

// [SECTION] attention rollout and the whole-sentence map

std::vector<std::string> rollout_fixture_paths() {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(std::string(STEPFORMER_FIXTURE_DIR) + "/attribution"))
    if (e.path().string().ends_with(".rollout.safetensors")) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

class RolloutReference : public ::testing::TestWithParam<std::string> {};

// Attention rollout of the traced pass equals the reference's (float64, from the maps PyTorch's modules recorded),
// every row a share that sums to 1; attribute_rows lays the same out beside its f.
TEST_P(RolloutReference, EqualsTheReferenceAndEveryRowSumsToOne) {
  const SafetensorsFile ref = SafetensorsFile::open(GetParam());
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/" + ref.metadata().at("trace"));
  const Config& c = f.model.config;
  const Trace trace = forward(c, f.model.weights, f.src, f.tgt, f.interventions);
  const Mat ours = attention_rollout(c, trace);
  const TensorView* want = ref.find("rollout");
  ASSERT_NE(want, nullptr);
  ASSERT_EQ(want->shape.size(), 2u);
  ASSERT_EQ(ours.rows(), want->shape[0]);
  ASSERT_EQ(ours.cols(), want->shape[1]);
  const std::vector<float> w = want->to_floats();
  for (Eigen::Index i = 0; i < ours.rows(); ++i) {
    EXPECT_NEAR(ours.row(i).sum(), 1.0f, 1e-5f) << i;
    for (Eigen::Index j = 0; j < ours.cols(); ++j)
      EXPECT_NEAR(ours(i, j), w[static_cast<size_t>(i * ours.cols() + j)], 2e-5f) << i << ", " << j;
  }
  // (a decoder row reads no later input: its share there is 0)
  if (c.has_decoder() && f.interventions.causal_mask) {
    const Eigen::Index S = c.has_encoder() ? static_cast<Eigen::Index>(f.src.size()) : 0;
    for (Eigen::Index i = 0; i < ours.rows(); ++i)
      for (Eigen::Index j = i + 1; j < static_cast<Eigen::Index>(f.tgt.size()); ++j) EXPECT_EQ(ours(i, S + j), 0.0f);
  }
  std::vector<int> tokens(static_cast<size_t>(ours.rows()), 3);
  tokens[0] = -1;
  const AttributionMap map =
      attribute_rows(c, f.model.weights, f.src, f.tgt, f.interventions, tokens, AttributionMethod::Rollout);
  EXPECT_TRUE(map.values.row(0).isZero()) << "a row not asked for";
  EXPECT_TRUE(std::isnan(map.f[0]));
  EXPECT_TRUE(map.values.bottomRows(ours.rows() - 1).isApprox(ours.bottomRows(ours.rows() - 1)));
  EXPECT_NEAR(map.f[1], std::log(trace.probs(1, 3)), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RolloutReference, ::testing::ValuesIn(rollout_fixture_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = fs::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

// The whole sentence's map: row r of gradient x input and of integrated gradients is what the one-row functions
// give for that row (the rows batched as copies there), f and f(0) too; rows asked for with -1 stay 0.
TEST(AttributionMap, EachRowIsTheOneRowAttribution) {
  for (const char* rel : {"/forward/pt_pre.trace.safetensors", "/gpt2/gpt2_head_off.trace.safetensors",
                          "/bert/bert_head_off.trace.safetensors"}) {
    const testing::ForwardFixture f = testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + rel);
    const Config& c = f.model.config;
    const int rows = static_cast<int>(c.has_decoder() ? f.tgt.size() : f.src.size());
    const int S = c.has_encoder() ? static_cast<int>(f.src.size()) : 0;
    std::vector<int> tokens;
    for (int r = 0; r < rows; ++r) tokens.push_back(r == 1 ? -1 : (5 + 3 * r) % c.output_vocab_size());
    const AttributionMap gxi = attribute_rows(c, f.model.weights, f.src, f.tgt, f.interventions, tokens,
                                              AttributionMethod::GradientXInput);
    const AttributionMap ig = attribute_rows(c, f.model.weights, f.src, f.tgt, f.interventions, tokens,
                                             AttributionMethod::IntegratedGradients, 8);
    ASSERT_EQ(gxi.rows(), rows);
    EXPECT_EQ(gxi.values.cols(), S + (c.has_decoder() ? static_cast<int>(f.tgt.size()) : 0));
    EXPECT_TRUE(gxi.values.row(1).isZero()) << rel;
    EXPECT_TRUE(ig.values.row(1).isZero()) << rel;
    for (int r : {0, rows - 1}) {
      const TokenAttribution one =
          gradient_x_input(c, f.model.weights, f.src, f.tgt, f.interventions, r, tokens[static_cast<size_t>(r)]);
      const TokenAttribution one_ig = integrated_gradients(c, f.model.weights, f.src, f.tgt, f.interventions, r,
                                                           tokens[static_cast<size_t>(r)], 8);
      std::vector<float> row(one.source), row_ig(one_ig.source);
      row.insert(row.end(), one.target.begin(), one.target.end());
      row_ig.insert(row_ig.end(), one_ig.target.begin(), one_ig.target.end());
      for (size_t j = 0; j < row.size(); ++j) {
        EXPECT_NEAR(gxi.values(r, static_cast<Eigen::Index>(j)), row[j], 1e-5f) << rel << " row " << r << " " << j;
        EXPECT_NEAR(ig.values(r, static_cast<Eigen::Index>(j)), row_ig[j], 1e-5f) << rel << " row " << r << " " << j;
      }
      EXPECT_NEAR(gxi.f[static_cast<size_t>(r)], one.f, 1e-6);
      EXPECT_NEAR(ig.f_baseline[static_cast<size_t>(r)], one_ig.f_baseline, 1e-6);
      EXPECT_TRUE(std::isnan(gxi.f_baseline[static_cast<size_t>(r)]));
    }
  }
}

// Integrated gradients past one batch (kAttributionBatchRows): N = 1024 on Marian's 16 tokens runs 1025 copies in
// five batches; the steps of every batch are summed (completeness holds, tighter than at N = 32), and N = 1 is
// gradient x input (the right Riemann sum's one step is the input itself).
TEST(IntegratedGradients, ManyStepsRunInBatchesAndOneStepIsGradientXInput) {
  const testing::ForwardFixture f = testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) +
                                                                  "/marian/marian_plain.trace.safetensors");
  const Config& c = f.model.config;
  ASSERT_GT(static_cast<int>((f.src.size() + f.tgt.size()) * (kMaxIntegratedGradientSteps + 1)), kAttributionBatchRows);
  auto gap = [&](const TokenAttribution& a) {
    double sum = 0;
    for (float v : a.source) sum += v;
    for (float v : a.target) sum += v;
    return std::abs(sum - (a.f - a.f_baseline));
  };
  const TokenAttribution many = integrated_gradients(c, f.model.weights, f.src, f.tgt, f.interventions, 2, 30,
                                                     kMaxIntegratedGradientSteps);
  const TokenAttribution few = integrated_gradients(c, f.model.weights, f.src, f.tgt, f.interventions, 2, 30, 32);
  EXPECT_LE(gap(many), 0.01 + 0.01 * std::abs(many.f - many.f_baseline));
  EXPECT_LT(gap(many), gap(few));
  EXPECT_NEAR(many.f, few.f, 1e-6);
  const TokenAttribution one = integrated_gradients(c, f.model.weights, f.src, f.tgt, f.interventions, 2, 30, 1);
  const TokenAttribution gxi = gradient_x_input(c, f.model.weights, f.src, f.tgt, f.interventions, 2, 30);
  expect_close(one.source, gxi.source, "source");
  expect_close(one.target, gxi.target, "target");
}

// A cancelled map stops between rows and says it is not complete; bad method names and token counts are refused.
TEST(AttributionMap, StopsWhenCancelledAndRefusesBadRequests) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  const Config& c = f.model.config;
  const std::vector<int> tokens(f.tgt.size(), 4);
  std::atomic<bool> cancelled{true};
  const AttributionMap stopped = attribute_rows(c, f.model.weights, f.src, f.tgt, {}, tokens,
                                                AttributionMethod::IntegratedGradients, 8, &cancelled);
  EXPECT_FALSE(stopped.complete);
  EXPECT_TRUE(stopped.values.isZero());
  cancelled = false;
  EXPECT_TRUE(attribute_rows(c, f.model.weights, f.src, f.tgt, {}, tokens, AttributionMethod::GradientXInput, 32,
                             &cancelled).complete);
  EXPECT_EQ(parse_attribution_method("ig"), AttributionMethod::IntegratedGradients);
  EXPECT_EQ(parse_attribution_method(to_string(AttributionMethod::Rollout)), AttributionMethod::Rollout);
  EXPECT_THROW(parse_attribution_method("saliency"), Error);
  EXPECT_THROW(attribute_rows(c, f.model.weights, f.src, f.tgt, {}, std::vector<int>(f.tgt.size() + 1, 4),
                              AttributionMethod::GradientXInput),
               Error);
  EXPECT_THROW(attribute_rows(c, f.model.weights, f.src, f.tgt, {}, std::vector<int>(f.tgt.size(), c.tgt_vocab_size),
                              AttributionMethod::GradientXInput),
               Error);
  EXPECT_THROW(
      attribute_rows(c, f.model.weights, f.src, f.tgt, {}, tokens, AttributionMethod::IntegratedGradients, 0), Error);
}

}  // namespace
}  // namespace sf
