// Test helpers for the forward-pass tests: a minimal safetensors reader for the committed fixtures written by
// tests/reference/make_forward_fixtures.py (F32 / I64 only), the native-weight loader of those fixtures, and
// a random model builder. Test code only: the product reads model files through core/io and core/model.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"
#include "util/tensor.h"

namespace sf::testing {

struct FixtureFile {
  std::map<std::string, Tensor> tensors;           // F32 tensors (I64 converted to float)
  std::map<std::string, std::vector<int>> ids;     // I64 tensors
  std::map<std::string, std::string> metadata;
};

inline FixtureFile read_fixture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(header);
  FixtureFile f;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m) f.metadata[m.key()] = m->get<std::string>();
      continue;
    }
    const std::string dtype = (*it)["dtype"];
    const auto shape = (*it)["shape"].get<std::vector<int64_t>>();
    const auto off = (*it)["data_offsets"].get<std::vector<size_t>>();
    const char* p = data.data() + off[0];
    const size_t bytes = off[1] - off[0];
    if (dtype == "F32") {
      Tensor t;
      t.shape = shape;
      t.data.resize(bytes / 4);
      std::memcpy(t.data.data(), p, bytes);
      f.tensors[it.key()] = std::move(t);
    } else if (dtype == "I64") {
      std::vector<int> v(bytes / 8);
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t x;
        std::memcpy(&x, p + 8 * i, 8);
        v[i] = static_cast<int>(x);
      }
      f.ids[it.key()] = std::move(v);
    } else {
      throw std::runtime_error("unsupported dtype " + dtype);
    }
  }
  return f;
}

inline Mat to_mat(const Tensor& t) {
  const int64_t rows = t.shape.size() == 1 ? 1 : t.shape[0];
  const int64_t cols = t.shape.size() == 1 ? t.shape[0] : t.shape[1];
  return Eigen::Map<const Mat>(t.data.data(), rows, cols);
}

struct FixtureModel {
  Config config;
  ModelWeights weights;
  Interventions interventions;
  std::vector<int> src, tgt;
  FixtureFile file;
};

inline FixtureModel load_fixture_model(const std::string& path) {
  FixtureModel m;
  m.file = read_fixture(path);
  m.config = config_from_json(nlohmann::json::parse(m.file.metadata.at("config")));
  const nlohmann::json iv = nlohmann::json::parse(m.file.metadata.at("interventions"));
  m.interventions.causal_mask = iv.value("causal_mask", true);
  m.interventions.padding_mask = iv.value("padding_mask", true);
  m.interventions.positional_encoding = iv.value("positional_encoding", true);
  m.src = m.file.ids.at("ids.src");
  m.tgt = m.file.ids.at("ids.tgt");
  auto get = [&](const std::string& name) { return to_mat(m.file.tensors.at("w." + name)); };
  auto has = [&](const std::string& name) { return m.file.tensors.count("w." + name) > 0; };
  auto lin = [&](const std::string& p) {
    LinearWeights l;
    l.weight = get(p + ".weight");
    if (has(p + ".bias")) l.bias = get(p + ".bias");
    return l;
  };
  auto ln = [&](const std::string& p) { return LayerNormWeights{get(p + ".weight"), get(p + ".bias")}; };
  auto attn = [&](const std::string& p) {
    return AttentionWeights{lin(p + ".q"), lin(p + ".k"), lin(p + ".v"), lin(p + ".out")};
  };
  ModelWeights& w = m.weights;
  w.src_embedding = get("src_embedding");
  w.tgt_embedding = get("tgt_embedding");
  if (has("src_positions")) w.src_positions = get("src_positions");
  if (has("tgt_positions")) w.tgt_positions = get("tgt_positions");
  for (int l = 0; l < m.config.n_encoder_layers; ++l) {
    const std::string p = "enc." + std::to_string(l);
    w.encoder_layers.push_back({attn(p + ".self_attn"), ln(p + ".self_attn_norm"),
                                {lin(p + ".ffn.fc1"), lin(p + ".ffn.fc2")}, ln(p + ".ffn_norm")});
  }
  for (int l = 0; l < m.config.n_decoder_layers; ++l) {
    const std::string p = "dec." + std::to_string(l);
    w.decoder_layers.push_back({attn(p + ".self_attn"), ln(p + ".self_attn_norm"), attn(p + ".cross_attn"),
                                ln(p + ".cross_attn_norm"), {lin(p + ".ffn.fc1"), lin(p + ".ffn.fc2")},
                                ln(p + ".ffn_norm")});
  }
  if (has("enc_norm.weight")) w.encoder_norm = ln("enc_norm");
  if (has("dec_norm.weight")) w.decoder_norm = ln("dec_norm");
  w.generator = lin("generator");
  return m;
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
