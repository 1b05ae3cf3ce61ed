// Test helper: a model file written again with its tensors edited (a shape swapped, a NaN planted), for the tests
// of what a broken model file does. Reads `from` whole; writes `to` with the same metadata.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace sf::testing {

// Called for every tensor in the file's order: its name, and its shape and values to change in place.
using TensorEdit = std::function<void(const std::string& name, std::vector<int64_t>& shape, std::vector<float>& values)>;

inline std::string rewrite_model_file(const std::string& from, const std::string& to, const TensorEdit& edit) {
  const SafetensorsFile file = SafetensorsFile::open(from);
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
  for (const auto& t : file.tensors()) {
    names.push_back(t.name);
    shapes.push_back(t.shape);
    values.push_back(t.to_floats());
    edit(names.back(), shapes.back(), values.back());
  }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < names.size(); ++i) tensors.push_back({names[i], shapes[i], values[i]});
  write_safetensors(to, tensors, file.metadata());
  return to;
}

}  // namespace sf::testing
