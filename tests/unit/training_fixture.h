// Test helpers for the training passes against PyTorch (tests/reference/make_training_fixtures.py,
// make_shape_fixtures.py): a reference file's batch ids, and every parameter's gradient compared with autograd's.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/name_tables.h"

namespace sf::testing {

// An (rows, cols) I64 tensor of ids, as ints.
inline std::vector<int> read_ids(const SafetensorsFile& f, const std::string& name, int* rows, int* cols) {
  const TensorView* t = f.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->dtype, DType::I64);
  *rows = static_cast<int>(t->shape.at(0));
  *cols = static_cast<int>(t->shape.at(1));
  std::vector<int64_t> raw(static_cast<size_t>(t->numel()));
  const std::vector<std::byte> bytes = t->read_bytes();
  if (!raw.empty()) std::memcpy(raw.data(), bytes.data(), raw.size() * sizeof(int64_t));
  return std::vector<int>(raw.begin(), raw.end());
}

// Every gradient of `grads` under the family's names (the name table maps them, and stacks W_q; W_k; W_v for
// nn.MultiheadAttention's in_proj_weight, exactly as it maps the weights) equals the reference's "grad.<name>"
// within 1e-5 + 1e-4 |largest|, and is not all zeros. Returns how many were compared.
inline int expect_gradients_match(const std::string& family, const Config& c, const ModelWeights& grads,
                                  const SafetensorsFile& ref, const std::string& label) {
  int compared = 0;
  for (const ConstWeightSlot& slot : weight_slots(family, c, grads)) {
    const TensorView* expected = ref.find("grad." + slot.name);
    EXPECT_NE(expected, nullptr) << "no PyTorch gradient for " << slot.name;
    if (!expected) continue;
    const std::vector<float> want = expected->to_floats();
    std::vector<float> got;
    for (const auto& part : slot.parts) got.insert(got.end(), part.begin(), part.end());
    EXPECT_EQ(got.size(), want.size()) << slot.name;
    if (got.size() != want.size()) continue;
    float max_error = 0, max_value = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_error = std::max(max_error, std::abs(got[i] - want[i]));
      max_value = std::max(max_value, std::abs(want[i]));
    }
    EXPECT_LT(max_error, 1e-5f + 1e-4f * max_value) << label << ": gradient of " << slot.name;
    EXPECT_GT(max_value, 0.0f) << label << ": " << slot.name << ": a gradient of zeros compares nothing";
    ++compared;
  }
  return compared;
}

}  // namespace sf::testing
