// Test helpers for the forward-pass tests: the committed PyTorch fixtures written by
// tests/reference/make_forward_fixtures.py, and random models.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/hf_marian.h"
#include "model/model.h"
#include "model/weights.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"
#include "util/tensor.h"

namespace sf::testing {

// One committed PyTorch fixture (tests/reference/make_forward_fixtures.py, make_from_scratch_fixtures.py): a trace file "<case>.trace.safetensors"
// with the ids, the interventions and every expected intermediate, and the model it names, loaded through
// open_model (a model file under the family's own tensor names, or a Hugging Face Marian folder).
struct ForwardFixture {
  std::string case_name;
  std::string family;
  Model model;
  Interventions interventions;
  std::vector<int> src, tgt;
  std::map<std::string, Tensor> expected;  // trace name -> tensor
};

inline std::vector<int> ids_of(const TensorView& v) {
  std::vector<int> ids;
  for (float x : v.to_floats()) ids.push_back(static_cast<int>(x));
  return ids;
}

inline ForwardFixture load_forward_fixture(const std::string& trace_path) {
  ForwardFixture f;
  const SafetensorsFile file = SafetensorsFile::open(trace_path);
  const auto& meta = file.metadata();
  f.case_name = meta.at("case");
  f.family = meta.at("family");
  const std::string dir = trace_path.substr(0, trace_path.find_last_of('/') + 1);
  f.model = open_model(dir + meta.at("model"));
  const nlohmann::json iv = nlohmann::json::parse(meta.at("interventions"));
  f.interventions.causal_mask = iv.value("causal_mask", true);
  f.interventions.padding_mask = iv.value("padding_mask", true);
  f.interventions.positional_encoding = iv.value("positional_encoding", true);
  for (const auto& head : iv.value("heads_off", std::vector<std::string>{}))
    f.interventions.heads_off.push_back(parse_head_index(head));  // indices in files
  for (const auto& m : iv.value("custom_masks", nlohmann::json::array())) {
    const auto rows = m.at("blocked").get<std::vector<std::vector<float>>>();
    CustomMask mask{parse_head_index(m.at("where").get<std::string>()), Mat(static_cast<Eigen::Index>(rows.size()),
                                                                          static_cast<Eigen::Index>(rows.at(0).size()))};
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t j = 0; j < rows[i].size(); ++j) mask.blocked(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
    f.interventions.custom_masks.push_back(std::move(mask));
  }
  for (const TensorView& v : file.tensors()) {
    if (v.name == "ids.src") f.src = ids_of(v);
    else if (v.name == "ids.tgt") f.tgt = ids_of(v);
    else f.expected[v.name] = Tensor{v.shape, v.to_floats()};
  }
  return f;
}

// The committed trace fixtures under tests/fixtures/<folder> ("forward", "from_scratch"), sorted.
inline std::vector<std::string> fixture_paths(const std::string& folder) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(std::string(STEPFORMER_FIXTURE_DIR) + "/" + folder))
    if (e.path().string().ends_with(".trace.safetensors")) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// A file of tests/fixtures/shapes (tests/reference/make_shape_fixtures.py: the decoder-only and encoder-only models).
inline std::string shapes_file(const std::string& name) {
  return std::string(STEPFORMER_FIXTURE_DIR) + "/shapes/" + name;
}

// A trace's tensors by name (trace_tensors).
inline std::map<std::string, Tensor> tensors_by_name(const Trace& trace) {
  std::map<std::string, Tensor> out;
  for (auto& nt : trace_tensors(trace)) out[nt.name] = std::move(nt.tensor);
  return out;
}

// Every tensor of `expected` is in `ours` with its shape and each value within `tolerance` (the worst cell named,
// with `reference` naming where the expected values came from). `compared` counts the tensors checked. Call
// it inside ASSERT_NO_FATAL_FAILURE: a missing tensor or a wrong shape stops the test.
inline void expect_tensors_match(const std::map<std::string, Tensor>& expected, const std::map<std::string, Tensor>& ours,
                                 float tolerance, const std::string& reference, int& compared) {
  for (const auto& [name, want] : expected) {
    auto it = ours.find(name);
    ASSERT_NE(it, ours.end()) << "our trace lacks '" << name << "'";
    const Tensor& got = it->second;
    ASSERT_EQ(got.shape, want.shape) << name;
    float worst = 0.0f;
    size_t worst_at = 0;
    for (size_t i = 0; i < got.data.size(); ++i) {
      const float d = std::abs(got.data[i] - want.data[i]);
      if (!(d <= worst)) worst = d, worst_at = i;
    }
    EXPECT_LE(worst, tolerance) << name << " differs at flat index " << worst_at << ": ours " << got.data[worst_at]
                                << ", " << reference << " " << want.data[worst_at];
    ++compared;
  }
}

// Random weights for a config (normal * scale), deterministic in the seed.
inline ModelWeights random_weights(const Config& c, uint32_t seed, float scale = 0.3f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto mat = [&](int r, int k, float s) {
    Mat m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = s * normal(rng);
    return m;
  };
  auto lin = [&](int out, int in) {
    LinearWeights l;
    l.weight = mat(out, in, scale / std::sqrt(static_cast<float>(in) / 16.0f));
    if (c.bias) l.bias = mat(1, out, 0.1f);
    return l;
  };
  auto ln = [&]() {
    LayerNormWeights n;
    n.gamma = (RowVec::Ones(c.d_model) + mat(1, c.d_model, 0.1f)).eval();
    n.beta = mat(1, c.d_model, 0.1f);
    return n;
  };
  const int C = c.d_model, Fd = c.d_ff;
  auto attn = [&]() { return AttentionWeights{lin(C, C), lin(C, C), lin(C, C), lin(C, C)}; };
  ModelWeights w;
  w.src_embedding = mat(c.src_vocab_size, C, 0.3f);
  w.tgt_embedding = c.share_embeddings ? w.src_embedding : mat(c.tgt_vocab_size, C, 0.3f);
  if (c.positional_encoding == PositionalEncoding::Learned) {
    w.src_positions = mat(c.max_positions, C, 0.3f);
    w.tgt_positions = mat(c.max_positions, C, 0.3f);
  }
  for (int l = 0; l < c.n_encoder_layers; ++l) w.encoder_layers.push_back({attn(), ln(), {lin(Fd, C), lin(C, Fd)}, ln()});
  for (int l = 0; l < c.n_decoder_layers; ++l)
    w.decoder_layers.push_back({attn(), ln(), attn(), ln(), {lin(Fd, C), lin(C, Fd)}, ln()});
  if (c.encoder_final_norm) w.encoder_norm = ln();
  if (c.decoder_final_norm) w.decoder_norm = ln();
  w.generator = lin(c.tgt_vocab_size, C);
  return w;
}

inline Config small_config() {
  Config c;
  c.d_model = 16;
  c.n_heads = 4;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 2;
  c.d_ff = 32;
  c.src_vocab_size = 30;
  c.tgt_vocab_size = 25;
  c.max_positions = 40;
  c.encoder_final_norm = true;
  c.decoder_final_norm = true;
  return c;
}

}  // namespace sf::testing
