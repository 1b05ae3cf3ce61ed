#include "model/name_tables.h"

#include <map>
#include <optional>
#include <type_traits>

#include "model/family.h"
#include "util/error.h"

namespace sf {

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const FamilyDescription* f : families()) out.push_back(f->name);
    return out;
  }();
  return names;
}

std::string known_families_text() {
  const auto& f = known_families();
  std::string text;
  for (size_t i = 0; i < f.size(); ++i) text += (i == 0 ? "" : i + 1 == f.size() ? " or " : ", ") + f[i];
  return text;
}

bool is_known_family(const std::string& family) { return find_family(family) != nullptr; }

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_family_config(const std::string& family, const Config& c, const std::string& where) {
  const FamilyDescription* f = find_family(family);
  if (!f)
    fail(ErrorKind::Format, ErrorCode::UnknownFamily, where, {{"family", family}},
         "unknown family '" + family + "' (expected " + known_families_text() + ")");
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(ErrorKind::Config, where, "family '" + family + "' needs " + what);
  };
  if (f->stacks)  // a family of checkpoints has their shape (our own files take every shape)
    need(c.stacks == *f->stacks, std::string("stacks \"") + to_string(*f->stacks) + "\" (its checkpoints' shape)");
  for (const ConfigNeed& n : f->needs) need(n.holds(c), n.what);
}

// [SECTION] the tables

namespace {

// The family's slots over `weights` (const or not), from the one walk (for_each_weight) and the family's names;
// with check_shapes false (an unallocated ModelWeights) only names and shapes.
template <typename W>
auto build_slots(const std::string& family, const Config& config, W& weights, const std::string& where,
                 bool check_shapes) {
  check_family_config(family, config, where);
  using T = std::conditional_t<std::is_const_v<W>, const float, float>;
  if (check_shapes &&  // the layer lists must match the config before the walk
      (weights.encoder_layers.size() != static_cast<size_t>(config.n_encoder_layers) ||
       weights.decoder_layers.size() != static_cast<size_t>(config.n_decoder_layers)))
    fail(ErrorKind::Shape, where,
         "weights hold " + std::to_string(weights.encoder_layers.size()) + " encoder and " +
             std::to_string(weights.decoder_layers.size()) + " decoder layers, the config says " +
             std::to_string(config.n_encoder_layers) + " and " + std::to_string(config.n_decoder_layers));
  std::vector<WeightSlotT<T>> slots;
  std::map<std::string, size_t> index;  // a stacked tensor's slot, by its name
  const FamilyDescription& description = *find_family(family);  // known: check_family_config
  for_each_weight(&config, weights, [&](const WeightRefT<W>& r) {
    const WeightPlace place{r.block, r.layer, r.part, r.projection, r.param, r.stored, r.name};
    const std::optional<FamilyTensorName> n = description.tensor_name(place, config);
    if (!n) return;
    if (check_shapes) {
      const bool fits = r.matrix ? r.matrix->rows() == r.rows && r.matrix->cols() == r.cols : r.vector->size() == r.rows;
      if (!fits) {
        const std::vector<int64_t> want = r.matrix ? std::vector<int64_t>{r.rows, r.cols} : std::vector<int64_t>{r.rows};
        const std::vector<int64_t> found = r.matrix ? std::vector<int64_t>{r.matrix->rows(), r.matrix->cols()}
                                                    : std::vector<int64_t>{r.vector->size()};
        fail(ErrorKind::Shape, ErrorCode::TensorWrongShape, where,
             {{"tensor", n->name}, {"expected", shape_string(want)}, {"found", shape_string(found)}},
             "weight '" + n->name + "': expected " + shape_string(want) + ", found " + shape_string(found));
      }
    }
    auto [it, added] = index.emplace(n->name, slots.size());
    if (added) {
      std::vector<int64_t> shape = {n->stack_size * r.rows};
      if (r.cols > 0) shape.push_back(r.cols);
      if (n->transposed && shape.size() == 2) std::swap(shape[0], shape[1]);
      if (n->leading_one) shape.insert(shape.begin(), 1);
      slots.push_back({n->name, std::move(shape), {}, n->transposed && r.cols > 0});
    }
    auto& slot = slots[it->second];
    if (static_cast<int>(slot.parts.size()) != n->stack_index && check_shapes)
      fail(ErrorKind::Shape, where, "weight '" + n->name + "': its parts came out of order");
    if (check_shapes) slot.parts.emplace_back(r.data(), static_cast<size_t>(r.size()));
  });
  return slots;
}

}  // namespace

std::vector<TensorSpec> weight_layout(const std::string& family, const Config& config) {
  // Walk the table over empty weights with the right number of layers: names and shapes, no allocation.
  ModelWeights empty;
  empty.encoder_layers.resize(static_cast<size_t>(std::max(config.n_encoder_layers, 0)));
  empty.decoder_layers.resize(static_cast<size_t>(std::max(config.n_decoder_layers, 0)));
  std::vector<TensorSpec> specs;
  for (auto& slot : build_slots(family, config, empty, "weight_layout", false))
    specs.push_back({std::move(slot.name), std::move(slot.shape)});
  return specs;
}

std::vector<WeightSlot> weight_slots(const std::string& family, const Config& config, ModelWeights& weights,
                                     const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

std::vector<ConstWeightSlot> weight_slots(const std::string& family, const Config& config,
                                          const ModelWeights& weights, const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

// A transposed slot's file tensor is (K, R) for parts of (r_p, K) rows stacked to R = sum r_p rows: part p's
// element (i, k) is the file's (k, offset_p + i).
void read_slot(std::span<const float> stored, const WeightSlot& slot) {
  size_t first = 0;
  if (!slot.transposed) {
    for (const std::span<float>& part : slot.parts) {
      std::copy_n(stored.begin() + static_cast<std::ptrdiff_t>(first), part.size(), part.begin());
      first += part.size();
    }
    return;
  }
  const size_t k_count = static_cast<size_t>(slot.shape[0]), r_count = static_cast<size_t>(slot.shape[1]);
  for (const std::span<float>& part : slot.parts) {
    const size_t rows = part.size() / k_count;
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < k_count; ++k) part[i * k_count + k] = stored[k * r_count + first + i];
    first += rows;
  }
}

std::vector<float> stored_values(const ConstWeightSlot& slot) {
  std::vector<float> out;
  if (!slot.transposed) {
    for (const auto& part : slot.parts) out.insert(out.end(), part.begin(), part.end());
    return out;
  }
  const size_t k_count = static_cast<size_t>(slot.shape[0]), r_count = static_cast<size_t>(slot.shape[1]);
  out.resize(k_count * r_count);
  size_t first = 0;
  for (const auto& part : slot.parts) {
    const size_t rows = part.size() / k_count;
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < k_count; ++k) out[k * r_count + first + i] = part[i * k_count + k];
    first += rows;
  }
  return out;
}

ModelWeights allocate_weights(const Config& c) {
  ModelWeights w;
  w.encoder_layers.resize(static_cast<size_t>(std::max(c.n_encoder_layers, 0)));
  w.decoder_layers.resize(static_cast<size_t>(std::max(c.n_decoder_layers, 0)));
  // Every weight the config has, zeros; LayerNorm gains ones (a norm that is a no-op until loaded or trained).
  for_each_weight(&c, w, [](const WeightRef& r) {
    if (r.is_matrix()) r.matrix->setZero(r.rows, r.cols);
    else r.vector->setConstant(r.rows, !r.linear && r.param == WeightParam::Weight ? 1.0f : 0.0f);
  });
  return w;
}

void complete_shared_weights(const Config& config, ModelWeights& weights) {
  if (config.share_embeddings) weights.tgt_embedding = weights.src_embedding;
  if (config.tie_output_embedding)
    weights.generator.weight = config.has_decoder() ? weights.tgt_embedding : weights.src_embedding;
}

}  // namespace sf
