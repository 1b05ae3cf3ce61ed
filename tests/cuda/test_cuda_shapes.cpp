// The other two shapes on the GPU (config.stacks: decoder-only like GPT, encoder-only like BERT), against the CPU
// and PyTorch on the shape fixtures (tests/reference/make_shape_fixtures.py, checked on the CPU by
// tests/unit/test_shapes_pytorch.cpp): every traced tensor; a decoder-only model's KV-cache steps, chunks and
// decodings; one training step's loss and gradients. Skipped without a GPU; tools/gpu_check.sh runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "../unit/forward_fixture.h"
#include "../unit/training_fixture.h"
#include "backend/backend.h"
#include "backend/cuda_model.h"
#include "decode/decoder.h"
#include "model/model.h"
#include "train/batched_model.h"
#include "train/init.h"
#include "train/parameters.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf::testing {
namespace {

#define SKIP_WITHOUT_GPU()                                                                           \
  do {                                                                                               \
    if (!backend_info().cuda_available) GTEST_SKIP() << "no usable GPU: " << backend_info().description; \
  } while (0)

// The largest |a - b| / max(1, |a|) over two tensors of one shape (NaN counts as infinitely far).
float worst_error(const Tensor& a, const Tensor& b) {
  float worst = 0.0f;
  for (size_t k = 0; k < a.data.size(); ++k) {
    const float err = std::abs(a.data[k] - b.data[k]) / std::max(1.0f, std::abs(a.data[k]));
    if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : err;
  }
  return worst;
}

TEST(CudaShapes, EveryTracedTensorEqualsTheCpuAndPyTorch) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> paths = fixture_paths("shapes");
  ASSERT_GE(paths.size(), 4u);
  for (const std::string& path : paths) {
    const ForwardFixture f = load_forward_fixture(path);
    const Config& c = f.model.config;
    SCOPED_TRACE(f.case_name);
    const Trace cpu = forward(c, f.model.weights, f.src, f.tgt, f.interventions);
    CudaModel gpu(c, f.model.weights);
    Trace t;
    gpu.forward(f.src, f.tgt, f.interventions, t);
    EXPECT_EQ(t.has_encoder(), c.has_encoder());
    EXPECT_EQ(t.has_decoder(), c.has_decoder());
    const std::vector<NamedTensor> want = trace_tensors(cpu), got = trace_tensors(t);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i].name, got[i].name);
      ASSERT_EQ(want[i].tensor.shape, got[i].tensor.shape) << want[i].name;
      EXPECT_LE(worst_error(want[i].tensor, got[i].tensor), 1e-4f) << want[i].name << " against the CPU";
      const auto torch = f.expected.find(got[i].name);
      if (torch != f.expected.end()) {
        EXPECT_LE(worst_error(torch->second, got[i].tensor), 1e-4f) << got[i].name << " against PyTorch";
      }
    }
  }
}

// A decoder-only model's cache on the GPU: step by step and in chunks, the rows of one full pass (no encoder pass,
// no cross-attention keys); decodings on the GPU continue the prompt as the CPU's do.
TEST(CudaShapes, ADecoderOnlyModelDecodesOnTheGpuAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"gpt_pre", "gpt_post"}) {
    SCOPED_TRACE(name);
    const Model m = load_model(shapes_file(std::string(name) + ".model.safetensors"));
    const std::vector<int> tokens = {2, 4, 6, 8, 5, 7, 9};
    const Trace full = forward(m.config, m.weights, {}, tokens);
    CudaModel gpu(m.config, m.weights);
    CudaDecoding steps(gpu, {}, {});
    const int one = steps.new_cache();
    for (size_t i = 0; i < tokens.size(); ++i) {
      const Mat row = steps.step({one}, {tokens[i]});
      EXPECT_LT((row.row(0) - full.logits.row(static_cast<Eigen::Index>(i))).cwiseAbs().maxCoeff(), 1e-4f) << i;
    }
    const int chunked = steps.new_cache();
    const Mat first = steps.chunk(chunked, {2, 4, 6});
    const Mat rest = steps.chunk(chunked, {8, 5, 7, 9});
    EXPECT_LT((first - full.logits.topRows(3)).cwiseAbs().maxCoeff(), 1e-4f);
    EXPECT_LT((rest - full.logits.bottomRows(4)).cwiseAbs().maxCoeff(), 1e-4f);

    const std::vector<int> prompt = {4, 6, 8};
    for (DecodeStrategy strategy : {DecodeStrategy::Greedy, DecodeStrategy::Beam}) {
      DecodeOptions options;
      options.max_length = 6;
      options.strategy = strategy;
      options.beam_width = 3;
      Decoder on_cpu(m.config, m.weights, prompt, {}, options);
      Decoder on_gpu(m.config, m.weights, prompt, {}, options);
      on_gpu.compute_on(gpu);
      on_cpu.run();
      on_gpu.run();
      EXPECT_TRUE(on_gpu.on_gpu());
      EXPECT_EQ(on_gpu.generated(), on_cpu.generated()) << "strategy " << static_cast<int>(strategy);
      const Mat a = on_cpu.chosen_logits(), b = on_gpu.chosen_logits();
      ASSERT_EQ(a.rows(), b.rows());
      if (a.size() > 0) {
        EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-4f);
      }
    }
    DecodeOptions greedy;
    greedy.max_length = 6;
    Decoder reference(m.config, m.weights, prompt, {}, greedy);
    reference.run();
    EXPECT_EQ(gpu.greedy(prompt, {}, 6), reference.generated()) << "CudaModel::greedy continues <bos> + the prompt";
    // With no length given, a long prompt leaves as many positions on the GPU as on the CPU; one that fills them all
    // is refused by both.
    const std::vector<int> long_prompt(static_cast<size_t>(m.config.max_positions - 4), 4);
    Decoder to_the_end(m.config, m.weights, long_prompt, {}, DecodeOptions{});
    to_the_end.run();
    EXPECT_EQ(gpu.greedy(long_prompt, {}, 0), to_the_end.generated());
    const std::vector<int> filling(static_cast<size_t>(m.config.max_positions - 1), 4);
    EXPECT_THROW(Decoder(m.config, m.weights, filling), Error);
    EXPECT_THROW(gpu.greedy(filling, {}, 0), Error);
  }
}

TEST(CudaShapes, AnEncoderOnlyModelGeneratesNothingOnTheGpuEither) {
  SKIP_WITHOUT_GPU();
  const Model m = load_model(shapes_file("bert_post.model.safetensors"));
  CudaModel gpu(m.config, m.weights);
  // (an Input error: "does not generate text", not Unsupported, which would send the caller to try the CPU)
  for (bool causal : {true, false}) {
    Interventions iv;
    iv.causal_mask = causal;
    try {
      CudaDecoding refused(gpu, {2, 4, 5}, iv);
      ADD_FAILURE() << "an encoder-only model was taken for decoding";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    }
    try {
      gpu.greedy({2, 4, 5}, iv, 4);
      ADD_FAILURE() << "an encoder-only model generated";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    }
  }
  Trace t;
  EXPECT_THROW(gpu.forward({2, 4}, {2}, {}, t), Error) << "an encoder_only model takes no decoder input";
}

// One training step on the GPU (no dropout, no clipping): its loss and every gradient (the tied output head's
// joined to its embedding's, as the trainer does) equal torch autograd's.
TEST(CudaShapes, OneTrainingStepEqualsAutograd) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"gpt_pre", "gpt_post", "bert_post", "bert_pre"}) {
    SCOPED_TRACE(name);
    const Model model = load_model(shapes_file(std::string(name) + ".model.safetensors"));
    const SafetensorsFile ref = SafetensorsFile::open(shapes_file(std::string(name) + ".training.safetensors"));
    const Config& c = model.config;
    Batch batch;
    int rows = 0, cols = 0;
    batch.source = read_ids(ref, "ids.src", &batch.size, &batch.source_length);
    batch.target_in = read_ids(ref, "ids.tgt_in", &rows, &cols);
    batch.target_out = read_ids(ref, "ids.tgt_out", &rows, &batch.target_length);
    if (c.has_decoder()) batch.source_length = 0;
    else batch.target_in.clear();
    for (int id : batch.target_out) batch.target_tokens += id != c.pad_id;
    CudaModel gpu(c, model.weights);
    gpu.start_training(AdamSettings{});
    const LossResult r = gpu.train_step(batch, {}, std::stof(ref.metadata().at("label_smoothing")), 0.0f, 1e-4f);
    EXPECT_NEAR(r.loss, std::stod(ref.metadata().at("loss")), 1e-5);
    ModelWeights grads = zeros_like(model.weights);
    gpu.download_gradients(grads);
    EXPECT_GE(expect_gradients_match(model.family, c, static_cast<const ModelWeights&>(grads), ref, name), 25);
  }
}

}  // namespace
}  // namespace sf::testing
