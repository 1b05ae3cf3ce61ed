// The hot kernels' outputs on fixed inputs, one FNV-1a hash of their float bits a case: what
// tests/unit/test_kernel_dispatch.cpp checks each run-time kernel set against, bit for bit, and what
// tests/kernels/write_kernel_hashes.cpp wrote into tests/fixtures/kernels/ from the builds before run-time
// dispatch (the whole library compiled with -march=native on an AVX-512 machine, and with -march=x86-64-v3).
// Only the core's public functions are called, so the same cases compile against either library:
//   softmax_row          rows of 1 to 8,000 cells, with blocked (-inf) cells, scale 1 and 1/sqrt(32)
//   layer_norm_forward   (N, C) = (7, 37), (20, 256), (3, 512): out, mean and std
//   linear_forward       W (200, 96) and (512, 256) with bias, unpacked, 1 to 130 rows (every product branch)
//   forward              a small model (C 64, H 4, 2 + 2 layers) traced on 10 + 9 and 70 + 66 tokens, with and
//                        without packed weights: logits and probabilities (attention's few-row, packed and
//                        short-key products, the output layer, every softmax and norm of a pass)
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/softmax.h"
#include "transformer/forward.h"

namespace sf::kernel_cases {

struct Case {
  std::string name;
  size_t count = 0;
  uint64_t hash = 0;
};

inline uint64_t fnv1a(const float* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    for (int b = 0; b < 4; ++b) {
      h ^= (bits >> (8 * b)) & 0xFFu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

inline Case hashed(std::string name, const float* p, size_t n) { return {std::move(name), n, fnv1a(p, n)}; }
inline Case hashed(std::string name, const Mat& m) { return hashed(std::move(name), m.data(), static_cast<size_t>(m.size())); }

// Uniform in [-scale, scale), from the generator's bits by exact steps and one rounding: the same floats whatever
// the instruction set of the program computing them (std::normal_distribution's log and sqrt, contracted into
// fmas or not, are not).
inline float uniform(std::mt19937& rng, float scale) {
  return (static_cast<float>(rng() >> 8) * 0x1p-23f - 1.0f) * scale;
}

inline Mat random_mat(std::mt19937& rng, int rows, int cols, float scale) {
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = uniform(rng, scale);
  return m;
}

inline ModelWeights small_model(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto lin = [&](int out, int in) {
    return LinearWeights{random_mat(rng, out, in, 1.0f / std::sqrt(static_cast<float>(in))),
                         random_mat(rng, 1, out, 0.02f), {}, nullptr};
  };
  auto ln = [&]() {
    return LayerNormWeights{RowVec(random_mat(rng, 1, c.d_model, 0.1f).array() + 1.0f), RowVec(random_mat(rng, 1, c.d_model, 0.1f))};
  };
  const int C = c.d_model, F = c.d_ff;
  auto attn = [&]() { return AttentionWeights{lin(C, C), lin(C, C), lin(C, C), lin(C, C)}; };
  ModelWeights w;
  w.src_embedding = random_mat(rng, c.src_vocab_size, C, 1.0f / std::sqrt(static_cast<float>(C)));
  w.tgt_embedding = random_mat(rng, c.tgt_vocab_size, C, 1.0f / std::sqrt(static_cast<float>(C)));
  for (int l = 0; l < c.n_encoder_layers; ++l) w.encoder_layers.push_back({attn(), ln(), {lin(F, C), lin(C, F)}, ln()});
  for (int l = 0; l < c.n_decoder_layers; ++l)
    w.decoder_layers.push_back({attn(), ln(), attn(), ln(), {lin(F, C), lin(C, F)}, ln()});
  w.encoder_norm = ln();
  w.decoder_norm = ln();
  w.generator = lin(c.tgt_vocab_size, C);
  return w;
}

inline std::vector<Case> compute() {
  std::vector<Case> cases;
  std::mt19937 rng(50);

  for (float scale : {1.0f, 0.17677669f}) {
    for (int n : {1, 7, 16, 17, 40, 256, 8000}) {
      std::vector<float> x(static_cast<size_t>(n)), p(x.size());
      for (float& v : x) v = uniform(rng, 8.0f);
      if (n > 2) x[1] = -INFINITY;  // a blocked cell
      if (!softmax_row(x.data(), p.data(), n, scale)) p.assign(p.size(), -1.0f);
      cases.push_back(hashed("softmax_row/" + std::to_string(n) + "/scale" + std::to_string(scale), p.data(), p.size()));
    }
  }

  for (auto [n, c] : {std::pair{7, 37}, std::pair{20, 256}, std::pair{3, 512}}) {
    const Mat x = random_mat(rng, n, c, 3.0f);
    const LayerNormWeights w{RowVec(random_mat(rng, 1, c, 0.1f).array() + 1.0f), RowVec(random_mat(rng, 1, c, 0.1f))};
    LayerNormTrace t;
    layer_norm_forward(x, w, 1e-5f, t);
    const std::string name = "layer_norm/" + std::to_string(n) + "x" + std::to_string(c);
    cases.push_back(hashed(name + "/out", t.out));
    cases.push_back(hashed(name + "/mean", t.mean.data(), static_cast<size_t>(t.mean.size())));
    cases.push_back(hashed(name + "/std", t.std.data(), static_cast<size_t>(t.std.size())));
  }

  for (auto [out, in] : {std::pair{200, 96}, std::pair{512, 256}}) {
    const LinearWeights w{random_mat(rng, out, in, 0.1f), random_mat(rng, 1, out, 0.02f), {}, nullptr};
    for (int rows : {1, 3, 20, 64, 130}) {
      const Mat x = random_mat(rng, rows, in, 1.0f);
      Mat y;
      linear_forward(x, w, y);
      cases.push_back(hashed("linear/" + std::to_string(out) + "x" + std::to_string(in) + "/rows" + std::to_string(rows), y));
    }
  }

  Config c;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 2;
  c.d_ff = 128;
  c.src_vocab_size = 300;
  c.tgt_vocab_size = 300;
  c.max_positions = 128;
  c.encoder_final_norm = true;
  c.decoder_final_norm = true;
  for (bool packed : {false, true}) {
    ModelWeights w = small_model(c, 2026);
    if (packed) attach_packed_weights(w);
    for (auto [s, t] : {std::pair{10, 9}, std::pair{70, 66}}) {
      std::vector<int> src, tgt;
      for (int i = 0; i < s; ++i) src.push_back(4 + (7 * i) % 290);
      for (int i = 0; i < t; ++i) tgt.push_back(i == 0 ? c.bos_id : 4 + (11 * i) % 290);
      Trace trace;
      forward(c, w, src, tgt, {}, trace);
      const std::string name = std::string("forward/") + (packed ? "packed/" : "unpacked/") + std::to_string(s) + "+" + std::to_string(t);
      cases.push_back(hashed(name + "/logits", trace.logits));
      cases.push_back(hashed(name + "/probs", trace.probs));
    }
  }
  return cases;
}

}  // namespace sf::kernel_cases
