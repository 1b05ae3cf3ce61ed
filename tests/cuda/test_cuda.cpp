// The CUDA backend (core/backend/cuda_model.h) against the CPU: every traced tensor within 1e-4 for both PyTorch
// families' fixtures and every kind of intervention; decoding (greedy, sampled, beam search, with KV caches in GPU
// memory) token for token; and the paths where no GPU can take the work. Label `cuda`. Without a usable GPU the
// GPU tests skip, saying why; the no-GPU tests then run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "../unit/forward_fixture.h"
#include "backend/backend.h"
#include "backend/cuda_model.h"
#include "backend/device.h"
#include "decode/decoder.h"
#include "decode/guided.h"
#include "decode/kv_cache.h"
#include "gui/app_state.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "model/tokenizer.h"
#include "../unit/renaming_corpus.h"
#include "train/batched_model.h"
#include "train/session.h"
#include "train/trainer.h"
#include "train/init.h"
#include "train/optimizer.h"
#include "train/parameters.h"
#include "transformer/forward.h"
#include "util/error.h"
#ifdef STEPFORMER_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cublas_loader.h"
#endif

namespace sf::testing {
namespace {

#ifdef STEPFORMER_HAVE_CUDA
// cuBLAS is loaded when asked, not linked (backend/cuda/cublas_loader.h): the loading itself needs no GPU.
TEST(CudaBuild, LoadsCublasWhenAsked) {
  const cuda::Cublas& c = cuda::cublas();
  EXPECT_NE(c.create, nullptr);
  EXPECT_NE(c.sgemm, nullptr);
  EXPECT_NE(c.sgemm_strided_batched, nullptr);
}
#endif

std::string no_gpu_reason() { return "no usable GPU: " + backend_info().description; }

#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    if (!backend_info().cuda_available) GTEST_SKIP() << no_gpu_reason(); \
  } while (0)

// Every tensor of `expected` (names, shapes) in `actual`, each value within tol * max(1, |expected|).
void expect_traces_equal(const Trace& expected, const Trace& actual, float tol, const std::string& what) {
  const std::vector<NamedTensor> e = trace_tensors(expected), a = trace_tensors(actual);
  ASSERT_EQ(e.size(), a.size()) << what;
  for (size_t i = 0; i < e.size(); ++i) {
    ASSERT_EQ(e[i].name, a[i].name) << what;
    ASSERT_EQ(e[i].tensor.shape, a[i].tensor.shape) << what << " " << e[i].name;
    float worst = 0.0f;
    size_t at = 0;
    for (size_t k = 0; k < e[i].tensor.data.size(); ++k) {
      const float x = e[i].tensor.data[k], y = a[i].tensor.data[k];
      const float err = std::abs(x - y) / std::max(1.0f, std::abs(x));
      if (!(err <= worst)) worst = err, at = k;  // NaN counts as worst
    }
    EXPECT_LE(worst, tol) << what << " " << e[i].name << " at " << at << ": cpu " << e[i].tensor.data[at] << ", gpu "
                          << a[i].tensor.data[at];
  }
}


TEST(CudaForward, EveryPyTorchFixtureEqualsTheCpu) {
  SKIP_WITHOUT_GPU();
  std::vector<std::string> traces = fixture_paths("forward");
  ASSERT_GE(traces.size(), 9u);
  const std::vector<std::string> marian = fixture_paths("marian");  // transformers' MarianMTModel: SiLU, <pad> first
  ASSERT_GE(marian.size(), 5u);
  traces.insert(traces.end(), marian.begin(), marian.end());
  std::vector<std::string> families;
  for (const std::string& path : traces) {
    const ForwardFixture f = load_forward_fixture(path);
    families.push_back(f.family);
    const Trace cpu = forward(f.model.config, f.model.weights, f.src, f.tgt, f.interventions);
    CudaModel gpu(f.model.config, f.model.weights);
    Trace t;
    gpu.forward(f.src, f.tgt, f.interventions, t);
    expect_traces_equal(cpu, t, 1e-4f, f.case_name);
    // And PyTorch's own numbers, as the CPU test checks them.
    for (const NamedTensor& n : trace_tensors(t)) {
      const auto it = f.expected.find(n.name);
      if (it == f.expected.end()) continue;
      ASSERT_EQ(it->second.data.size(), n.tensor.data.size()) << f.case_name << " " << n.name;
      for (size_t k = 0; k < n.tensor.data.size(); ++k)
        ASSERT_NEAR(n.tensor.data[k], it->second.data[k], 1e-4f * std::max(1.0f, std::abs(it->second.data[k])))
            << f.case_name << " " << n.name << " [" << k << "] against PyTorch";
    }
  }
  std::sort(families.begin(), families.end());
  families.erase(std::unique(families.begin(), families.end()), families.end());
  EXPECT_GE(families.size(), 3u) << "both PyTorch families and Marian";
}

// A Marian model decodes on the GPU as transformers' generate() does (the fixtures' tokens: greedy, and beam search
// scored its way, with the folder's generation rules), where the interventions let its caches go there (a painted
// mask or the causal mask off: the GPU refuses, and the CPU's decoding is tested by test_marian.cpp).
TEST(CudaMarian, DecodesAsTransformersDoes) {
  SKIP_WITHOUT_GPU();
  int decoded = 0;
  for (const std::string& path : fixture_paths("marian")) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    const std::map<std::string, std::string> meta(file.metadata().begin(), file.metadata().end());
    const nlohmann::json greedy_expected = nlohmann::json::parse(meta.at("greedy"));
    if (greedy_expected.empty()) continue;  // a painted mask's fixture: one pass, no decoding
    const ForwardFixture f = load_forward_fixture(path);
    const Model& m = f.model;
    CudaModel gpu(m.config, m.weights);
    DecodeOptions options;
    apply_generation_defaults(m.generation, options);
    options.strategy = DecodeStrategy::Greedy;
    options.max_length = std::stoi(meta.at("max_length")) - 1;  // Hugging Face's counts the start token
    Decoder greedy(m.config, m.weights, f.src, f.interventions, options);
    try {
      greedy.compute_on(gpu);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
      EXPECT_FALSE(f.interventions.causal_mask && f.interventions.custom_masks.empty()) << f.case_name << ": " << e.what();
      continue;
    }
    greedy.run();
    EXPECT_EQ(nlohmann::json(greedy.generated()), greedy_expected) << f.case_name;
    DecodeOptions b = options;
    b.strategy = DecodeStrategy::Beam;
    b.beam_width = std::stoi(meta.at("beam_width"));
    b.length_penalty = std::stof(meta.at("length_penalty"));
    Decoder beam(m.config, m.weights, f.src, f.interventions, b);
    beam.compute_on(gpu);
    beam.run();
    EXPECT_EQ(nlohmann::json(beam.generated()), nlohmann::json::parse(meta.at("beam"))) << f.case_name << ", beam";
    ++decoded;
  }
  EXPECT_GE(decoded, 3);
}

// The model variants the GPU tests run on random weights: norm placement (with final norms when pre-norm),
// activation, positions, biases.
struct ModelVariant {
  const char* name;
  NormPlacement norm;
  Activation act;
  PositionalEncoding pos;
  bool bias;
};
const ModelVariant kVariants[] = {
    {"post relu sinusoidal", NormPlacement::Post, Activation::ReLU, PositionalEncoding::Sinusoidal, true},
    {"pre gelu learned", NormPlacement::Pre, Activation::GELU, PositionalEncoding::Learned, true},
    {"post gelu no bias", NormPlacement::Post, Activation::GELU, PositionalEncoding::Sinusoidal, false}};

Config variant_config(const ModelVariant& v) {
  Config c = small_config();
  c.norm_placement = v.norm;
  c.activation = v.act;
  c.positional_encoding = v.pos;
  c.bias = v.bias;
  c.encoder_final_norm = c.decoder_final_norm = v.norm == NormPlacement::Pre;
  return c;
}

// Random models of every variant, and each kind of intervention on them.
TEST(CudaForward, EveryInterventionEqualsTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const ModelVariant& v : kVariants) {
    const Config c = variant_config(v);
    const ModelWeights w = random_weights(c, 7);
    const std::vector<int> src = {5, 9, 12, c.pad_id, 7, c.pad_id}, tgt = {c.bos_id, 4, 11, c.pad_id, 6};
    const int S = static_cast<int>(src.size()), T = static_cast<int>(tgt.size());
    std::vector<std::pair<std::string, Interventions>> cases;
    cases.push_back({"none", {}});
    Interventions heads;
    heads.heads_off = {{AttentionKind::Encoder, 0, 1}, {AttentionKind::Decoder, 1, 0}, {AttentionKind::Cross, 0, 3}};
    cases.push_back({"heads off", heads});
    Interventions masks;
    masks.causal_mask = false;
    masks.padding_mask = false;
    cases.push_back({"no causal, no padding", masks});
    Interventions pos;
    pos.positional_encoding = false;
    cases.push_back({"no positions", pos});
    Interventions painted;
    Mat enc = Mat::Zero(S, S), dec = Mat::Zero(T, T), cross = Mat::Ones(T, S);
    enc(0, 1) = enc(2, 0) = 1;
    dec.row(2).setOnes();  // a row with every key blocked: zero probabilities
    cross(1, 2) = 0;
    painted.custom_masks = {{{AttentionKind::Encoder, 1, 2}, enc}, {{AttentionKind::Decoder, 0, 1}, dec},
                            {{AttentionKind::Cross, 1, 0}, cross}};
    cases.push_back({"painted masks", painted});
    CudaModel gpu(c, w);
    for (const auto& [name, iv] : cases) {
      const Trace cpu = forward(c, w, src, tgt, iv);
      Trace t;
      gpu.forward(src, tgt, iv, t);
      expect_traces_equal(cpu, t, 1e-4f, std::string(v.name) + ", " + name);
      EXPECT_EQ(t.interventions, iv);
    }
  }
}

// A padded batch computes what each of its sentences computes alone.
TEST(CudaForward, ABatchEqualsItsSentencesOneByOne) {
  SKIP_WITHOUT_GPU();
  Config c = small_config();
  const ModelWeights w = random_weights(c, 11);
  const int pad = c.pad_id;
  const std::vector<std::vector<int>> src = {{5, 9, 12, 7, 3}, {8, 4, 3, pad, pad}, {6, 6, 13, 3, pad}};
  const std::vector<std::vector<int>> tgt = {{2, 4, 11, 6}, {2, 7, 3, pad}, {2, 5, pad, pad}};
  CudaModel gpu(c, w);
  Mat batched;
  gpu.compute_batch(src, tgt, &batched);
  ASSERT_EQ(batched.rows(), 12);
  for (size_t b = 0; b < src.size(); ++b) {
    const Trace cpu = forward(c, w, src[b], tgt[b], {});
    const Mat rows = batched.middleRows(static_cast<Eigen::Index>(b) * 4, 4);
    EXPECT_LE((rows - cpu.logits).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, cpu.logits.cwiseAbs().maxCoeff()))
        << "sentence " << b;
  }
  EXPECT_THROW(gpu.compute_batch(src, {{2, 4}, {2, 7, 3, pad}, {2, 5, pad, pad}}), Error);
}

// One training step on the GPU against the CPU trainer's (train/trainer.cpp: batch_forward, batch_backward,
// tie_gradients, clip_gradients, Adam::step), dropout and label smoothing on: the loss, every gradient (after
// clipping), Adam's moments, and each weight's update where its gradient is not lost in rounding (Adam's first
// step moves a weight by about lr * sign(g), so a gradient of nearly 0 may round to either sign on either side).
struct TrainingCase {
  const char* name;
  NormPlacement norm;
  Activation activation;
  PositionalEncoding positions;
  bool tie, final_norms;
};

TEST(CudaTraining, OneStepEqualsTheCpu) {
  SKIP_WITHOUT_GPU();
  const TrainingCase cases[] = {
      {"post relu sinusoidal tied", NormPlacement::Post, Activation::ReLU, PositionalEncoding::Sinusoidal, true, false},
      {"pre gelu learned final norms", NormPlacement::Pre, Activation::GELU, PositionalEncoding::Learned, false, true},
      {"post silu sinusoidal tied", NormPlacement::Post, Activation::SiLU, PositionalEncoding::Sinusoidal, true, false}};
  for (const TrainingCase& tc : cases) {
    Config c = small_config();
    c.norm_placement = tc.norm;
    c.activation = tc.activation;
    c.positional_encoding = tc.positions;
    c.tie_output_embedding = tc.tie;
    c.encoder_final_norm = c.decoder_final_norm = tc.final_norms;
    ModelWeights w = initialize_weights(c, 42);
    std::mt19937 rng(5);  // biases and norms away from their initial 0 and 1
    for (ParameterView& p : parameter_views(w))
      for (Eigen::Index i = 0; i < p.size; ++i) p.data[i] += std::normal_distribution<float>(0.0f, 0.1f)(rng);
    complete_shared_weights(c, w);
    const std::vector<Example> examples = {{{5, 6, 7, 8, 9}, {4, 5, 6}}, {{9, 10}, {7, 8, 9, 10, 4, 11}},
                                           {{11, 12, 4, 20}, {5}}};
    const Batch batch = make_batch(examples, {0, 1, 2}, SpecialIds{1, 2, 3, 0}, 32);
    const DropoutSettings dropout{0.1f, 99, 7};
    const float smoothing = 0.1f, clip = 0.5f, lr = 1e-3f;

    CudaModel gpu(c, w);  // before the CPU's step changes w
    gpu.start_training(AdamSettings{});
    double gpu_norm = 0.0;
    const LossResult gpu_loss = gpu.train_step(batch, dropout, smoothing, clip, lr, &gpu_norm);

    const ModelWeights before = w;
    BatchTrace trace;
    Mat dlogits;
    const LossResult cpu_loss = batch_forward(c, w, batch, dropout, smoothing, trace, &dlogits);
    ModelWeights grads = zeros_like(w);
    batch_backward(c, w, batch, trace, dlogits, grads);
    tie_gradients(c, grads);
    const double cpu_norm = clip_gradients(grads, clip);
    Adam adam(w);
    adam.step(w, grads, lr);

    EXPECT_NEAR(gpu_loss.loss, cpu_loss.loss, 1e-5 * cpu_loss.loss) << tc.name;
    EXPECT_NEAR(gpu_loss.nll, cpu_loss.nll, 1e-5 * cpu_loss.nll) << tc.name;
    EXPECT_EQ(gpu_loss.tokens, cpu_loss.tokens);
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-4 * cpu_norm) << tc.name;
    ASSERT_GT(cpu_norm, clip) << "the case must clip, so that clipping is tested";
    ModelWeights gpu_grads = before, gpu_m = before, gpu_v = before, after = before;
    gpu.download_gradients(gpu_grads);
    gpu.download_adam(gpu_m, gpu_v);
    gpu.download_weights(after);
    EXPECT_EQ(gpu.adam_steps(), 1);
    auto cg = parameter_views(grads), gg = parameter_views(gpu_grads), cm = parameter_views(adam.first_moment()),
         gm = parameter_views(gpu_m), cv = parameter_views(adam.second_moment()), gv = parameter_views(gpu_v);
    auto w0 = parameter_views(const_cast<ModelWeights&>(before)), cw = parameter_views(w), gw = parameter_views(after);
    ASSERT_EQ(cg.size(), gg.size());
    // Some gradients are 0 in exact arithmetic (the keys' bias: softmax ignores a constant added to a row), leaving
    // rounding noise on both sides: updates are compared where the gradient stands out of the model's largest.
    float global_scale = 0.0f;
    for (const ParameterView& p : cg)
      for (Eigen::Index i = 0; i < p.size; ++i) global_scale = std::max(global_scale, std::abs(p.data[i]));
    int updates_checked = 0;
    for (size_t k = 0; k < cg.size(); ++k) {
      // Each tensor against its own scale: its largest gradient (moment).
      auto largest = [](const ParameterView& p) {
        float m = 0.0f;
        for (Eigen::Index i = 0; i < p.size; ++i) m = std::max(m, std::abs(p.data[i]));
        return m;
      };
      // A gradient that is 0 in exact arithmetic holds rounding noise alone on both sides (about 1e-9): its
      // tolerance has a floor from the model's largest gradient, and so have its moments (m = 0.1 g, v = 0.02 g^2).
      const float g_scale = largest(cg[k]);
      const float g_tol = 1e-4f * std::max(g_scale, 1e-3f * global_scale);
      const float v_tol = 1e-4f * std::max(largest(cv[k]), 1e-6f * global_scale * global_scale);
      for (Eigen::Index i = 0; i < cg[k].size; ++i) {
        ASSERT_NEAR(gg[k].data[i], cg[k].data[i], g_tol) << tc.name << " gradient " << cg[k].name << " [" << i << "]";
        ASSERT_NEAR(gm[k].data[i], cm[k].data[i], 0.1f * g_tol) << tc.name << " m " << cg[k].name << " [" << i << "]";
        ASSERT_NEAR(gv[k].data[i], cv[k].data[i], v_tol) << tc.name << " v " << cg[k].name << " [" << i << "]";
        if (std::abs(cg[k].data[i]) > 1e-3f * g_scale && std::abs(cg[k].data[i]) > 1e-5f * global_scale) {
          const float cpu_step = cw[k].data[i] - w0[k].data[i], gpu_step = gw[k].data[i] - w0[k].data[i];
          ASSERT_NEAR(gpu_step, cpu_step, 1e-2f * std::abs(cpu_step) + 1e-7f) << tc.name << " update " << cg[k].name;
          ++updates_checked;
        }
      }
    }
    EXPECT_GT(updates_checked, 1000) << tc.name;
  }
}

// A run small enough to learn the renaming corpus (renaming_corpus.h) in seconds: d_model 32, 4 heads, 1+1
// layers, batches of 100 tokens, warm-up to 3e-3 over 40 steps.
TrainOptions tiny_run(const std::filesystem::path& dir, const std::string& src, const std::string& tgt, int epochs,
                      DeviceRequest device) {
  TrainOptions o;
  o.data_dir = dir.string();
  o.source_language = src;
  o.target_language = tgt;
  o.model.d_model = 32;
  o.model.n_heads = 4;
  o.model.n_encoder_layers = o.model.n_decoder_layers = 1;
  o.model.d_ff = 64;
  o.epochs = epochs;
  o.batch_tokens = 100;
  o.schedule.peak = 3e-3f;
  o.schedule.warmup_steps = 40;
  o.device = device;
  return o;
}

// A whole run through the trainer (train/trainer.h) on the GPU and on the CPU: the same data, batches and dropout
// masks, so the two runs follow one another within rounding, and the GPU's run learns the task. The weights the
// trainer hands out (weights()) are the GPU's.
TEST(CudaTraining, TheTrainerOnTheGpuFollowsTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "stepformer-cuda-train";
  write_renaming_corpus(dir, "xx", "yy", 400, 40, 20, 3);
  TrainOptions o = tiny_run(dir, "xx", "yy", 4, DeviceRequest::Cpu);
  o.seed = 5;
  std::vector<EpochRecord> runs[2];
  ModelWeights gpu_weights;
  for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
    o.device = on_gpu ? DeviceRequest::Cuda : DeviceRequest::Cpu;
    std::string log;
    Trainer t(o, [&](const std::string& line) { log += line + "\n"; });
    while (!t.done()) {
      while (!t.epoch_complete()) t.step();
      runs[on_gpu].push_back(t.finish_epoch());
    }
    if (on_gpu) {
      EXPECT_NE(log.find("training on the GPU"), std::string::npos) << log;
      gpu_weights = t.weights();
    }
  }
  ASSERT_EQ(runs[0].size(), 4u);
  for (size_t e = 0; e < runs[0].size(); ++e) {
    EXPECT_NEAR(runs[1][e].train_loss, runs[0][e].train_loss, 2e-3 * runs[0][e].train_loss) << "epoch " << e + 1;
    EXPECT_NEAR(runs[1][e].valid_nll, runs[0][e].valid_nll, 5e-3 * runs[0][e].valid_nll + 1e-3) << "epoch " << e + 1;
  }
  // On the CPU this run's loss falls from about 3.3 to 2.4 (stepformer-cli train on such a corpus).
  EXPECT_LT(runs[1].back().train_loss, 0.85 * runs[1].front().train_loss) << "the GPU's run learns";
  EXPECT_LT(runs[1].back().valid_nll, runs[1].front().valid_nll);
  EXPECT_GT(gpu_weights.encoder_layers.size(), 0u);
  // --tf32: the same run with TF32 matrix products learns as much (its losses printed beside FP32's).
  o.device = DeviceRequest::Cuda;
  o.tf32 = true;
  std::string log;
  Trainer tf32(o, [&](const std::string& line) { log += line + "\n"; });
  std::vector<EpochRecord> tf32_run;
  while (!tf32.done()) {
    while (!tf32.epoch_complete()) tf32.step();
    tf32_run.push_back(tf32.finish_epoch());
  }
  EXPECT_NE(log.find("(matrix products in TF32)"), std::string::npos) << log;
  ASSERT_EQ(tf32_run.size(), runs[1].size());
  for (size_t e = 0; e < tf32_run.size(); ++e) {
    std::printf("epoch %zu: train loss FP32 %.5f TF32 %.5f, valid nll FP32 %.5f TF32 %.5f\n", e + 1, runs[1][e].train_loss,
                tf32_run[e].train_loss, runs[1][e].valid_nll, tf32_run[e].valid_nll);
    EXPECT_NEAR(tf32_run[e].train_loss, runs[1][e].train_loss, 3e-2 * runs[1][e].train_loss) << "epoch " << e + 1;
  }
  EXPECT_LT(tf32_run.back().train_loss, 0.85 * tf32_run.front().train_loss) << "the TF32 run learns";
  std::filesystem::remove_all(dir);
}

#ifdef STEPFORMER_HAVE_CUDA
// Every free byte of GPU memory, in every size class down to the smallest block a pass asks for (256 bytes): the
// driver hands out small blocks from pages it already holds, so each class is taken until it too fails. cudaFree
// each pointer to give it back.
std::vector<void*> take_all_gpu_memory() {
  std::vector<void*> taken;
  for (size_t chunk = size_t{1} << 30; chunk >= 256;) {
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) == cudaSuccess) {
      taken.push_back(p);
    } else {
      cudaGetLastError();
      chunk /= 2;
    }
  }
  return taken;
}
#endif

// Out of memory in the middle of a run: the trainer's model and Adam's state are in GPU memory, then this test takes
// all the GPU has left (as another program would), so the first step's workspace cannot be had. The trainer says
// why, goes on on the CPU from the GPU's state, and its steps are the CPU trainer's own: nothing was lost.
TEST(CudaTraining, OutOfMemoryMidRunGoesOnOnTheCpu) {
  SKIP_WITHOUT_GPU();
#ifdef STEPFORMER_HAVE_CUDA
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "stepformer-cuda-oom";
  write_renaming_corpus(dir, "xx", "yy", 400, 40, 20, 3);
  TrainOptions o = tiny_run(dir, "xx", "yy", 1, DeviceRequest::Cuda);
  o.seed = 5;
  std::string log;
  Trainer t(o, [&](const std::string& line) { log += line + "\n"; });
  ASSERT_NE(log.find("training on the GPU"), std::string::npos) << log;
  const std::vector<void*> taken = take_all_gpu_memory();
  ASSERT_FALSE(taken.empty());
  t.step();  // fails on the GPU, then steps on the CPU
  t.step();
  for (void* p : taken) cudaFree(p);
  EXPECT_NE(log.find("the GPU failed"), std::string::npos) << log;
  EXPECT_NE(log.find("goes on on the CPU from step 0"), std::string::npos) << log;
  TrainOptions cpu_options = o;
  cpu_options.device = DeviceRequest::Cpu;
  Trainer cpu(cpu_options);
  cpu.step();
  cpu.step();
  ModelWeights a = cpu.weights(), b = t.weights();
  const std::vector<ParameterView> pa = parameter_views(a), pb = parameter_views(b);
  ASSERT_EQ(pa.size(), pb.size());
  size_t compared = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].name, pb[i].name);
    ASSERT_EQ(pa[i].size, pb[i].size);
    for (Eigen::Index j = 0; j < pa[i].size; ++j, ++compared) ASSERT_EQ(pb[i].data[j], pa[i].data[j]) << pa[i].name;
  }
  EXPECT_GT(compared, 1000u);
  std::filesystem::remove_all(dir);
#endif
}

// The app's live run (train/session.h, the Training stage) on the GPU: it says where it trains, its timeline and the
// weights it hands out are the GPU's, and it learns.
TEST(CudaTraining, ALiveSessionTrainsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "stepformer-cuda-session";
  write_renaming_corpus(dir, "de", "en", 400, 40, 20, 4);
  TrainingSession session(tiny_run(dir, "de", "en", 4, DeviceRequest::Cuda));
  ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(120)));
  const TrainingSession::Status st = session.status();
  ASSERT_EQ(st.state, TrainingSession::State::Finished) << st.message;
  EXPECT_EQ(st.device, backend_info().cuda_device_name);
  ASSERT_EQ(st.history.size(), 4u);
  EXPECT_LT(st.history.back().valid_nll, st.history.front().valid_nll);
  Model now;
  int64_t step = 0;
  ASSERT_TRUE(session.weights_now(now, step));
  const TrainingTimeline timeline = session.timeline();
  ASSERT_GE(timeline.snapshots.size(), 2u);
  Model first = timeline.model;
  first.weights = timeline.snapshots.front().weights;
  EXPECT_GT((now.weights.generator.weight - first.weights.generator.weight).cwiseAbs().maxCoeff(), 1e-3f)
      << "the weights handed out moved from step 0: they are the GPU's";
  std::filesystem::remove_all(dir);
}

Model shipped_model() { return load_model(std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors"); }

TEST(CudaGreedy, SameTokensAsTheCpu) {
  SKIP_WITHOUT_GPU();
  const Model m = shipped_model();
  CudaModel gpu(m.config, m.weights);
  const char* sentences[] = {"Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.",
                             "Eine Frau mit einem roten Hut sitzt auf einer Bank und liest ein Buch."};
  Interventions off;
  off.heads_off = {{AttentionKind::Cross, 1, 2}, {AttentionKind::Decoder, 0, 0}};
  Interventions forced;
  forced.forced_prefix = {m.tgt_vocab.id("A")};
  const Interventions cases[] = {Interventions{}, off, forced};
  for (const char* s : sentences)
    for (const Interventions& use : cases) {
      const std::vector<int> src = token_ids(encode(s, m.tokenizer, m.src_vocab, Side::Source));
      DecodeOptions options;
      options.max_length = 60;
      Decoder cpu(m.config, m.weights, src, use, options);
      cpu.run();
      EXPECT_EQ(gpu.greedy(src, use, 60), cpu.generated()) << s;
    }
}

void expect_rows_near(const Mat& expected, const Mat& actual, float tol, const std::string& what) {
  ASSERT_EQ(actual.rows(), expected.rows()) << what;
  ASSERT_EQ(actual.cols(), expected.cols()) << what;
  for (Eigen::Index r = 0; r < expected.rows(); ++r)
    for (Eigen::Index col = 0; col < expected.cols(); ++col)
      ASSERT_NEAR(actual(r, col), expected(r, col), tol * std::max(1.0f, std::abs(expected(r, col))))
          << what << " [" << r << ", " << col << "]";
}

// KV-cache steps on the GPU against the CPU's (decode/kv_cache.h) on random models of each variant: one cache fed
// token by token; three caches (two of them copies) continued in one step; a truncated cache continued; caches of
// two lengths in one call. And where the GPU's caches do not go: painted masks, the causal mask off.
TEST(CudaDecoding, StepsEqualTheCpusCacheSteps) {
  SKIP_WITHOUT_GPU();
  for (const ModelVariant& v : kVariants) {
    const Config c = variant_config(v);
    const ModelWeights w = random_weights(c, 11);
    const std::vector<int> src = {5, 9, 12, c.pad_id, 7};
    Interventions heads, positions, no_padding;
    heads.heads_off = {{AttentionKind::Decoder, 1, 0}, {AttentionKind::Cross, 0, 3}, {AttentionKind::Encoder, 0, 1}};
    positions.positional_encoding = false;
    no_padding.padding_mask = false;
    const std::pair<const char*, Interventions> cases[] = {
        {"none", {}}, {"heads off", heads}, {"no positions", positions}, {"no padding mask", no_padding}};
    CudaModel gpu(c, w);
    for (const auto& [name, iv] : cases) {
      const std::string what = std::string(v.name) + ", " + name;
      Trace encoded;
      encode(c, w, src, iv, encoded);
      KvCache a = start_kv_cache(c, w, encoded);
      CudaDecoding g(gpu, src, iv);
      const int ga = g.new_cache();
      for (int token : {c.bos_id, 4, 11, c.pad_id})  // a pad among the keys: the self-attention's padding mask
        expect_rows_near(decode_step(c, w, encoded, token, a), g.step({ga}, {token}), 1e-4f, what + ", one cache");
      EXPECT_EQ(g.cache_length(ga), 4) << what;
      {  // chunks (a guided check's pass): three tokens continuing a copy, each row seeing the keys up to its own;
         // then a step after them; and a whole prefix on an empty cache, <bos> first
        KvCache e = a;
        const int ge = g.copy_cache(ga);
        expect_rows_near(decode_chunk(c, w, encoded, {7, 3, 10}, e, 3), g.chunk(ge, {7, 3, 10}), 1e-4f, what + ", a chunk");
        EXPECT_EQ(g.cache_length(ge), 7) << what;
        expect_rows_near(decode_step(c, w, encoded, 2, e), g.step({ge}, {2}), 1e-4f, what + ", a step after a chunk");
        KvCache f = start_kv_cache(c, w, encoded);
        const int gf = g.new_cache();
        const std::vector<int> prefix = {c.bos_id, 4, 11, c.pad_id, 7, 3};
        expect_rows_near(decode_chunk(c, w, encoded, prefix, f, 6), g.chunk(gf, prefix), 1e-4f, what + ", a prefix chunk");
        EXPECT_EQ(g.chunk(gf, {}).rows(), 0) << what;
        EXPECT_THROW(g.chunk(gf, {c.tgt_vocab_size}), Error) << what;
        EXPECT_THROW(g.chunk(gf, std::vector<int>(static_cast<size_t>(c.max_positions), 4)), Error) << what;
        EXPECT_EQ(g.cache_length(gf), 6) << what << ": a refused chunk changes nothing";
        g.release_cache(ge);
        g.release_cache(gf);
      }
      KvCache b = a, d = a;
      const int gb = g.copy_cache(ga), gd = g.copy_cache(ga);
      expect_rows_near(decode_steps(c, w, encoded, {6, 7, 8}, {&a, &b, &d}), g.step({ga, gb, gd}, {6, 7, 8}), 1e-4f,
                       what + ", three caches in one step");
      truncate_kv_cache(b, 2);
      g.truncate_cache(gb, 2);
      expect_rows_near(decode_step(c, w, encoded, 9, b), g.step({gb}, {9}), 1e-4f, what + ", truncated");
      Mat both(2, c.tgt_vocab_size);  // caches of 5 and 3 rows in one call
      both.row(0) = decode_step(c, w, encoded, 5, a);
      both.row(1) = decode_step(c, w, encoded, 6, b);
      expect_rows_near(both, g.step({ga, gb}, {5, 6}), 1e-4f, what + ", two lengths");
      g.release_cache(gd);
      EXPECT_EQ(g.cache_length(g.new_cache()), 0) << what;
      EXPECT_THROW(g.step({ga, ga}, {1, 2}), Error) << what;
    }
    Interventions painted;
    painted.custom_masks = {{{AttentionKind::Cross, 0, 1}, Mat::Zero(1, static_cast<Eigen::Index>(src.size()))}};
    Interventions no_causal;
    no_causal.causal_mask = false;
    for (const Interventions& iv : {painted, no_causal}) {
      try {
        CudaDecoding g(gpu, src, iv);
        ADD_FAILURE() << "the GPU's caches took an intervention they cannot compute";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
      }
    }
  }
}

// The Decoder's strategies with their steps on the GPU (Decoder::compute_on) against the same decoder on the CPU,
// on the shipped model: greedy, sampling, beam search scored both ways; with heads off and a forced prefix; and
// stepping back and forth again on the GPU.
TEST(CudaDecoder, GreedySamplingAndBeamSearchAreTheCpus) {
  SKIP_WITHOUT_GPU();
  const Model m = shipped_model();
  CudaModel gpu(m.config, m.weights);
  Interventions off;
  off.heads_off = {{AttentionKind::Cross, 1, 2}, {AttentionKind::Decoder, 0, 0}};
  Interventions forced;
  forced.forced_prefix = {m.tgt_vocab.id("A")};
  const std::pair<const char*, Interventions> cases[] = {{"none", {}}, {"heads off", off}, {"forced", forced}};
  std::vector<std::pair<std::string, DecodeOptions>> strategies;
  DecodeOptions greedy;
  greedy.max_length = 40;
  strategies.push_back({"greedy", greedy});
  DecodeOptions sample = greedy;
  sample.strategy = DecodeStrategy::Sample;
  sample.sampling.top_k = 20;
  sample.seed = 5;
  strategies.push_back({"sample", sample});
  DecodeOptions beam = greedy;
  beam.strategy = DecodeStrategy::Beam;
  beam.beam_width = 4;
  strategies.push_back({"beam 4", beam});
  DecodeOptions hf = beam;
  hf.beam_width = 6;
  hf.beam_scoring = BeamScoring::HuggingFace;
  strategies.push_back({"beam 6 scored as transformers", hf});
  for (const char* sentence : {"Zwei Hunde spielen im Schnee.", "Eine Frau mit einem roten Hut sitzt auf einer Bank."}) {
    const std::vector<int> src = token_ids(encode(sentence, m.tokenizer, m.src_vocab, Side::Source));
    for (const auto& [strategy, options] : strategies)
      for (const auto& [name, iv] : cases) {
        const std::string what = std::string(sentence) + ", " + strategy + ", " + name;
        Decoder cpu(m.config, m.weights, src, iv, options);
        cpu.run();
        Decoder on(m.config, m.weights, src, iv, options);
        on.compute_on(gpu);
        EXPECT_TRUE(on.on_gpu());
        on.run();
        EXPECT_EQ(on.generated(), cpu.generated()) << what;
        EXPECT_EQ(on.tree().size(), cpu.tree().size()) << what;
        for (size_t i = 0; i < cpu.finished_beams().size() && i < on.finished_beams().size(); ++i)
          EXPECT_NEAR(on.tree()[static_cast<size_t>(on.finished_beams()[i])].score,
                      cpu.tree()[static_cast<size_t>(cpu.finished_beams()[i])].score, 1e-4f)
              << what;
        if (options.strategy != DecodeStrategy::Beam)
          expect_rows_near(cpu.last_distribution(), on.last_distribution(), 1e-4f, what + ", last distribution");
        // Back three steps and on again, twice: a copy shares the GPU's caches until it changes one.
        ASSERT_EQ(on.step_back(3), 3) << what;
        Decoder copy = on;
        copy.run();
        on.run();
        EXPECT_EQ(copy.generated(), cpu.generated()) << what << ", a copy after stepping back";
        EXPECT_EQ(on.generated(), cpu.generated()) << what << ", after stepping back";
      }
  }
}

// The guided re-decoding after an intervention (decode/guided.h) with its checks on the GPU (chunks over the GPU's
// caches) against the same on the CPU, on the shipped model: the earlier translation guessed from, then heads
// switched off, positions off (a translation that loops: guessed from itself), a forced first word. The same
// tokens, tree and steps as the CPU's guided run (itself the plain run's, tests/unit), guesses taken in batches,
// the same last distribution, and trace() (on the GPU: its traced forward) the CPU's tensor for tensor; then back
// two steps and on again.
TEST(CudaGuided, ReDecodingAfterAnInterventionIsTheCpus) {
  SKIP_WITHOUT_GPU();
  const Model m = shipped_model();
  CudaModel gpu(m.config, m.weights);
  Interventions off;
  off.heads_off = {{AttentionKind::Cross, 0, 1}, {AttentionKind::Cross, 1, 2}, {AttentionKind::Decoder, 0, 0}};
  Interventions positions;
  positions.positional_encoding = false;
  Interventions forced;
  forced.forced_prefix = {m.tgt_vocab.id("A")};
  const std::pair<const char*, Interventions> cases[] = {
      {"unchanged", {}}, {"heads off", off}, {"no positions", positions}, {"forced", forced}};
  DecodeOptions greedy;
  greedy.max_length = 60;
  for (const char* sentence : {"Zwei Hunde spielen im Schnee.", "Eine Frau mit einem roten Hut sitzt auf einer Bank."}) {
    const std::vector<int> src = token_ids(encode(sentence, m.tokenizer, m.src_vocab, Side::Source));
    Decoder earlier(m.config, m.weights, src, {}, greedy);
    earlier.run();
    const std::vector<int> guess = earlier.generated();
    for (const auto& [name, iv] : cases) {
      const std::string what = std::string(sentence) + ", " + name;
      Decoder cpu(m.config, m.weights, src, iv, greedy);
      GuidedRedecoder cpu_guided(cpu);
      const int cpu_steps = cpu_guided.run(guess);
      Decoder on(m.config, m.weights, src, iv, greedy);
      on.compute_on(gpu);
      GuidedRedecoder gpu_guided(on);
      const int gpu_steps = gpu_guided.run(guess);
      EXPECT_EQ(on.generated(), cpu.generated()) << what;
      EXPECT_EQ(gpu_steps, cpu_steps) << what;
      EXPECT_EQ(on.tree().size(), cpu.tree().size()) << what;
      EXPECT_EQ(gpu_guided.guessed(), cpu_guided.guessed()) << what;
      if (std::string(name) == "unchanged") {
        EXPECT_EQ(gpu_guided.guessed(), static_cast<int>(guess.size())) << what << ": a right guess, whole, in one chunk";
      }
      expect_rows_near(cpu.last_distribution(), on.last_distribution(), 1e-4f, what + ", last distribution");
      expect_traces_equal(cpu.trace(), on.trace(), 1e-4f, what + ", trace");
      ASSERT_EQ(on.step_back(2), 2) << what;
      GuidedRedecoder again(on);
      again.run(guess);
      EXPECT_EQ(on.generated(), cpu.generated()) << what << ", after stepping back";
    }
  }
}

// The app's views on the GPU (app/gui/app_state.h with --device cuda: gui/view_device.h) against the same app state
// on the CPU, on the shipped model: the sentence, a decoder head off (a new translation, re-decoded from the old by
// guesses checked on the GPU), positions off, steps back and forth, each time the same translation, the same
// guesses taken and the trace within 1e-4; a painted mask computes on the CPU, saying so, and the GPU takes the next
// change again; then, with every byte of GPU memory taken, a change decodes again on the CPU, says the GPU failed,
// and the views stay on the CPU after the memory is back.
TEST(CudaApp, TheViewsComputeOnTheGpuAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  using gui::AppState;
  using gui::ViewDevice;
  AppState cpu, gpu;
  cpu.set_device(std::make_shared<ViewDevice>(DeviceRequest::Cpu));
  gpu.set_device(std::make_shared<ViewDevice>(DeviceRequest::Cuda));
  const std::string on_the_gpu = "GPU " + backend_info().cuda_device_name;
  for (AppState* s : {&cpu, &gpu}) {
    ASSERT_TRUE(s->load_model(gui::default_model_path())) << s->error();
    ASSERT_TRUE(s->set_sentence("Eine Frau mit einem roten Hut sitzt auf einer Bank.")) << s->error();
  }
  auto same = [&](const std::string& what, bool on_gpu) {
    EXPECT_EQ(gpu.translation(), cpu.translation()) << what;
    EXPECT_EQ(gpu.last_guessed(), cpu.last_guessed()) << what;
    EXPECT_EQ(gpu.shown_device(), on_gpu ? on_the_gpu : cpu.shown_device()) << what;
    ASSERT_TRUE(gpu.decoder()) << what;
    EXPECT_EQ(gpu.decoder()->on_gpu(), on_gpu) << what;
    expect_traces_equal(cpu.trace(), gpu.trace(), 1e-4f, what + ", trace");
  };
  same("the sentence", true);
  Interventions off;
  off.heads_off = {{AttentionKind::Decoder, 1, 2}, {AttentionKind::Cross, 0, 1}};
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions(off)) << s->error();
  same("decoder and cross heads off", true);
  EXPECT_GT(gpu.last_guessed(), 0) << "the guided re-decoding took guesses";
  Interventions positions = off;
  positions.positional_encoding = false;
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions(positions)) << s->error();
  same("positions off", true);
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->step_back(4)) << s->error();
  same("four steps back", true);
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->step(2)) << s->error();
  same("two steps on", true);
  Interventions painted;
  const Eigen::Index rows = static_cast<Eigen::Index>(gpu.trace().tgt.ids.size()),
                     cols = static_cast<Eigen::Index>(gpu.source_tokens().size());
  painted.custom_masks.push_back({{AttentionKind::Cross, 0, 1}, Mat::Zero(rows, cols)});
  painted.custom_masks.back().blocked(0, 1) = 1.0f;
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions(painted)) << s->error();
  same("a painted mask", false);
  EXPECT_EQ(gpu.device_why(), "painted masks compute on the CPU");
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions({})) << s->error();
  same("as trained again", true);
#ifdef STEPFORMER_HAVE_CUDA
  const std::vector<void*> taken = take_all_gpu_memory();
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions(off)) << s->error();
  for (void* p : taken) cudaFree(p);
  same("out of GPU memory", false);
  EXPECT_NE(gpu.device_why().find("the GPU failed"), std::string::npos) << gpu.device_why();
  EXPECT_TRUE(gpu.error().empty()) << gpu.error();
  for (AppState* s : {&cpu, &gpu}) ASSERT_TRUE(s->set_interventions({})) << s->error();
  same("the next change, memory back", false);
  EXPECT_NE(gpu.device_why().find("the GPU failed"), std::string::npos) << "it stays on the CPU, saying why";
#endif
}

// TF32 (CudaModel::set_tf32) is an option, never the default: switched off again the pass is FP32's (the numbers
// of before); on, on a GPU with TF32 tensor cores (sm_80 on), the logits move, within the error stated here and in
// docs/gpu.md (printed, as measured).
TEST(CudaForward, Tf32IsAnOptionWithItsErrorAgainstFp32) {
  SKIP_WITHOUT_GPU();
#ifdef STEPFORMER_HAVE_CUDA
  const Model m = shipped_model();
  CudaModel gpu(m.config, m.weights);
  const std::vector<int> src = token_ids(encode("Eine Frau mit einem roten Hut sitzt auf einer Bank und liest ein Buch.",
                                                m.tokenizer, m.src_vocab, Side::Source));
  Decoder greedy(m.config, m.weights, src);
  greedy.run();
  std::vector<int> tgt = {m.config.bos_id};
  for (int id : greedy.generated()) tgt.push_back(id);
  Trace fp32, tf32, again;
  gpu.forward(src, tgt, {}, fp32);
  gpu.set_tf32(true);
  gpu.forward(src, tgt, {}, tf32);
  gpu.set_tf32(false);
  gpu.forward(src, tgt, {}, again);
  EXPECT_LE((again.logits - fp32.logits).cwiseAbs().maxCoeff(), 1e-6f) << "FP32 again after TF32";
  const float logits_error = (tf32.logits - fp32.logits).cwiseAbs().maxCoeff();
  const float probs_error = (tf32.probs - fp32.probs).cwiseAbs().maxCoeff();
  const float out_error = (tf32.dec_out - fp32.dec_out).cwiseAbs().maxCoeff();
  std::printf("TF32 against FP32, the shipped model, %zu + %zu tokens: logits differ by at most %.2e (of %.1f), "
              "probabilities by %.2e, the decoder's output by %.2e\n",
              src.size(), tgt.size(), logits_error, fp32.logits.cwiseAbs().maxCoeff(), probs_error, out_error);
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  if (major >= 8) {
    EXPECT_GT(logits_error, 1e-5f) << "TF32 changed nothing: it was not on";
  }
  EXPECT_LT(logits_error, 5e-2f);
  EXPECT_LT(probs_error, 5e-3f);
#endif
}

std::string run_cli(const std::string& args, int* status) {
  FILE* pipe = popen((std::string(STEPFORMER_CLI_PATH) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (pipe && fgets(buf, sizeof buf, pipe)) out += buf;
  const int s = pipe ? pclose(pipe) : -1;
  *status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return out;
}

// The CLI's GPU path: the traced greedy pass it writes and the words it prints are the CPU's.
TEST(CudaCli, TraceAndTranslateOnTheGpuAreTheCpus) {
  SKIP_WITHOUT_GPU();
  const std::string dir = ::testing::TempDir() + "/stepformer-cuda-cli";
  std::filesystem::create_directories(dir);
  const std::string model = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";
  const char* sentence = "Ein kleines Mädchen klettert in ein Spielhaus aus Holz.";
  int status = 0;
  for (const char* device : {"cpu", "cuda"}) {
    const std::string out = run_cli(std::string("trace ") + model + " --src \"" + sentence + "\" --head-off cross.2.3 --out " +
                                        dir + "/" + device + ".safetensors --device " + device, &status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(out.find("GPU failed"), std::string::npos) << out;  // decoded and traced there, not fallen back
  }
  const SafetensorsFile cpu = SafetensorsFile::open(dir + "/cpu.safetensors");
  const SafetensorsFile gpu = SafetensorsFile::open(dir + "/cuda.safetensors");
  ASSERT_EQ(cpu.tensors().size(), gpu.tensors().size());
  for (const TensorView& v : cpu.tensors()) {
    const TensorView* g = gpu.find(v.name);
    ASSERT_NE(g, nullptr) << v.name;
    ASSERT_EQ(g->shape, v.shape) << v.name;  // the same greedy tokens: the same final pass
    const std::vector<float> a = v.to_floats(), b = g->to_floats();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-4f * std::max(1.0f, std::abs(a[i]))) << v.name << " [" << i << "]";
  }
  const std::string on_cpu = run_cli(std::string("translate \"") + sentence + "\" --device cpu", &status);
  ASSERT_EQ(status, 0) << on_cpu;
  const std::string on_gpu = run_cli(std::string("translate \"") + sentence + "\" --device cuda", &status);
  ASSERT_EQ(status, 0) << on_gpu;
  EXPECT_EQ(on_gpu, on_cpu);
  const std::string beam_on_cpu = run_cli(std::string("translate \"") + sentence + "\" --device cpu --beam 4", &status);
  ASSERT_EQ(status, 0) << beam_on_cpu;
  const std::string beam_on_gpu = run_cli(std::string("translate \"") + sentence + "\" --device cuda --beam 4", &status);
  ASSERT_EQ(status, 0) << beam_on_gpu;
  EXPECT_EQ(beam_on_gpu, beam_on_cpu);
  const std::string tf32 = run_cli(std::string("translate \"") + sentence + "\" --device cuda --tf32", &status);
  ASSERT_EQ(status, 0) << tf32;
  EXPECT_GT(tf32.size(), 10u) << tf32;
  std::filesystem::remove_all(dir);
}

TEST(CudaCli, EvalOnTheGpuIsTheCpus) {
  SKIP_WITHOUT_GPU();
  // Greedy eval of twenty Multi30k-like lines: the same translations (written with --out) on both devices.
  const std::string dir = ::testing::TempDir() + "/stepformer-cuda-eval";
  std::filesystem::create_directories(dir);
  {
    std::ofstream src(dir + "/src.de"), ref(dir + "/ref.en");
    const char* lines[][2] = {{"ein mann fährt fahrrad .", "a man rides a bike ."},
                              {"zwei hunde spielen im schnee .", "two dogs play in the snow ."},
                              {"eine frau liest ein buch .", "a woman reads a book ."},
                              {"kinder spielen auf der straße .", "children play on the street ."}};
    for (int i = 0; i < 5; ++i)
      for (const auto& l : lines) src << l[0] << "\n", ref << l[1] << "\n";
  }
  int status = 0;
  for (const char* beam : {"1", "3"}) {
    std::string out[2];
    const char* devices[] = {"cpu", "cuda"};
    for (int d = 0; d < 2; ++d) {
      const std::string log = run_cli(std::string("eval --src ") + dir + "/src.de --ref " + dir + "/ref.en --out " + dir +
                                          "/" + devices[d] + beam + ".txt --device " + devices[d] + " --beam " + beam,
                                      &status);
      ASSERT_EQ(status, 0) << log;
      EXPECT_NE(log.find(d ? "on the GPU" : "on the CPU"), std::string::npos) << log;
      std::ifstream in(dir + "/" + devices[d] + beam + ".txt");
      out[d] = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    EXPECT_FALSE(out[0].empty());
    EXPECT_EQ(out[1], out[0]) << "beam " << beam;
  }
  std::filesystem::remove_all(dir);
}

TEST(CudaModel, BadInputIsTheCpusError) {
  SKIP_WITHOUT_GPU();
  const Config c = small_config();
  const ModelWeights w = random_weights(c, 3);
  CudaModel gpu(c, w);
  Trace t;
  try {
    gpu.forward({1, 2, 99}, {2, 3}, {}, t);
    FAIL() << "an id outside the vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("outside the source vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpu.forward({}, {2}, {}, t), Error);
  EXPECT_EQ(t.encoder.size(), 0u) << "a refused pass leaves the trace as it was";
}

TEST(CudaModel, AGpuTooSmallForTheModelSaysSo) {
  SKIP_WITHOUT_GPU();
  const Model m = shipped_model();
  try {
    CudaModel gpu(m.config, m.weights, size_t{1} << 20);  // as if the GPU had 1 MiB
    FAIL() << "a model larger than the GPU's memory was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("needs"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, AutoPicksTheGpuWhereThereIsOne) {
  SKIP_WITHOUT_GPU();
  const Config c = small_config();
  const ModelWeights w = random_weights(c, 3);
  std::string note;
  EXPECT_NE(open_device(DeviceRequest::Auto, c, w, &note), nullptr) << note;
  EXPECT_NE(open_device(DeviceRequest::Cuda, c, w, &note), nullptr);
  EXPECT_EQ(open_device(DeviceRequest::Cpu, c, w, &note), nullptr);
}

// The other side: where no GPU is usable (CI, a laptop), cuda is an error naming why and auto is the CPU.
// The from-scratch family's reshaped heads have no kernels: --device cuda says so (with or without a GPU: the
// model is refused before the device is asked), auto computes on the CPU with the reason as a note.
TEST(CudaDevice, AFromScratchModelStaysOnTheCpuSayingWhy) {
  Config c = small_config();
  c.attention = AttentionStyle::ReshapeHeads;
  c.embedding_scale = EmbeddingScale::One;
  const ModelWeights w = allocate_weights(c);  // its (D, D) projections
  try {
    CudaModel gpu(c, w);
    FAIL() << "a reshape_heads model was taken by the GPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    // The model's reason, in a build with CUDA or without (not "this build has no CUDA backend").
    EXPECT_NE(std::string(e.what()).find("not this model's reshape_heads"), std::string::npos) << e.what();
  }
  try {
    open_device(DeviceRequest::Cuda, c, w, nullptr);
    FAIL() << "--device cuda took a reshape_heads model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not this model's reshape_heads"), std::string::npos) << e.what();
  }
  // A split_heads model of the same size is not refused for its shape (only, here, for the device, if at all).
  Config split = c;
  split.attention = AttentionStyle::SplitHeads;
  EXPECT_EQ(model_not_for_gpu(split), "");
  std::string note;
  EXPECT_EQ(open_device(DeviceRequest::Auto, c, w, &note), nullptr);
  if (backend_info().cuda_available) {
    EXPECT_NE(note.find("reshape_heads"), std::string::npos) << note;
  }
}

TEST(CudaDevice, WithoutAGpuCudaIsAnErrorAndAutoTheCpu) {
  if (backend_info().cuda_available) GTEST_SKIP() << "a GPU is usable here: the no-GPU path is tested where there is none";
  const Config c = small_config();
  const ModelWeights w = random_weights(c, 3);
  std::string note = "stale";
  EXPECT_EQ(open_device(DeviceRequest::Auto, c, w, &note), nullptr);
  EXPECT_EQ(note, "");
  try {
    open_device(DeviceRequest::Cuda, c, w, &note);
    FAIL() << "--device cuda without a GPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    const std::string what = e.what();
    EXPECT_TRUE(what.find("no usable GPU") != std::string::npos || what.find("no CUDA backend") != std::string::npos)
        << what;
  }
  EXPECT_THROW(parse_device("gpu"), Error);
  // Training: cuda is refused before a step, saying why (the trainer, and the app's live session); auto trains on
  // the CPU.
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "stepformer-no-gpu-train";
  write_renaming_corpus(dir, "de", "en", 60, 10, 10, 2);
  TrainOptions o = tiny_run(dir, "de", "en", 1, DeviceRequest::Cuda);
  try {
    Trainer t(o);
    FAIL() << "training on cuda without a GPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
  }
  {
    TrainingSession session(o);
    ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(60)));
    const TrainingSession::Status st = session.status();
    EXPECT_EQ(st.state, TrainingSession::State::Failed);
    EXPECT_TRUE(st.message.find("no usable GPU") != std::string::npos ||
                st.message.find("no CUDA backend") != std::string::npos)
        << st.message;
  }
  o.device = DeviceRequest::Auto;
  Trainer on_cpu(o);
  EXPECT_EQ(on_cpu.device(), "");
  on_cpu.step();
  std::filesystem::remove_all(dir);
  // The CLI: exit 1 with the reason, nothing translated; auto translates on the CPU without a word about it.
  int status = 0;
  const std::string out = run_cli("translate \"Ein Mann.\" --device cuda", &status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_TRUE(out.find("no usable GPU") != std::string::npos || out.find("no CUDA backend") != std::string::npos) << out;
  const std::string quiet = run_cli("translate \"Ein Mann.\" --device auto", &status);
  EXPECT_EQ(status, 0) << quiet;
  EXPECT_EQ(quiet.find("GPU"), std::string::npos) << quiet;
}

}  // namespace
}  // namespace sf::testing
