#include "train/timeline.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "model/name_tables.h"
#include "util/error.h"

namespace sf {

namespace {

using nlohmann::json;
constexpr const char* kWhere = "timeline";
constexpr size_t kMaxSnapshots = 100000;  // far beyond any schedule (snapshot_due): a header cannot ask for more

std::string tensor_name(size_t snapshot, const std::string& weight) {
  return "snapshot." + std::to_string(snapshot) + "." + weight;
}

// What one weight of a snapshot becomes in the file: its floats, or 8-bit rows and their scales.
struct StoredWeight {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
  std::vector<int8_t> q;       // int8-rows matrices
  std::vector<float> scales;   // (rows)
};

// w (rows, cols) row-major -> q, scale per row: scale = max |w| / 127, q = round(w / scale) (all 0 for a zero row).
void quantize_rows(std::span<const float> w, int64_t rows, int64_t cols, std::vector<int8_t>& q,
                   std::vector<float>& scales) {
  q.resize(static_cast<size_t>(rows * cols));
  scales.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w.data() + r * cols;
    float max = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, std::abs(row[c]));
    const float scale = max / 127.0f;
    scales[static_cast<size_t>(r)] = scale;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = scale > 0 ? std::nearbyint(row[c] / scale) : 0.0f;
      q[static_cast<size_t>(r * cols + c)] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

void check_snapshot(const Config& config, const TimelineSnapshot& s, size_t index) {
  for_each_weight(&config, s.weights, [&](const ConstWeightRef& ref) {
    if (!ref.stored) return;
    const bool fits = ref.is_matrix() ? ref.matrix->rows() == ref.rows && ref.matrix->cols() == ref.cols
                                      : ref.vector->size() == ref.rows;
    if (!fits)
      fail(ErrorKind::Shape, kWhere, "snapshot " + std::to_string(index) + " (step " + std::to_string(s.step) +
                                         "): weight '" + ref.name + "' does not have the config's shape");
    const float* p = ref.data();
    for (Eigen::Index i = 0; i < ref.size(); ++i)
      if (!std::isfinite(p[i]))
        fail(ErrorKind::Value, kWhere, "snapshot " + std::to_string(index) + " (step " + std::to_string(s.step) +
                                           "): weight '" + ref.name + "' holds " + std::to_string(p[i]));
  });
}

std::vector<std::byte> serialize(const TrainingTimeline& t, SnapshotStorage storage, const char* where) {
  const Config& config = t.model.config;
  std::map<std::string, std::string> metadata = model_description_metadata(t.model, kTimelineFormat);
  json entries = json::array();
  for (size_t i = 0; i < t.snapshots.size(); ++i) {
    const TimelineSnapshot& s = t.snapshots[i];
    if (i > 0 && s.step <= t.snapshots[i - 1].step)
      fail(ErrorKind::Input, where, "snapshot steps must rise: step " + std::to_string(s.step) + " after " +
                                        std::to_string(t.snapshots[i - 1].step));
    check_snapshot(config, s, i);
    entries.push_back({{"step", s.step}, {"epoch", s.epoch}, {"loss", s.loss}, {"valid_bleu", s.valid_bleu}});
    if (s.valid_perplexity >= 0) entries.back()["valid_perplexity"] = s.valid_perplexity;
  }
  metadata["timeline"] = json{{"storage", snapshot_storage_name(storage)}, {"snapshots", entries}}.dump();

  std::vector<StoredWeight> stored;  // kept alive until written: the tensors point into it
  for (size_t i = 0; i < t.snapshots.size(); ++i)
    for_each_weight(&config, t.snapshots[i].weights, [&](const ConstWeightRef& ref) {
      if (!ref.stored) return;
      StoredWeight& w = stored.emplace_back();
      w.name = tensor_name(i, ref.name);
      w.values = std::span<const float>(ref.data(), static_cast<size_t>(ref.size()));
      w.shape = ref.is_matrix() ? std::vector<int64_t>{ref.rows, ref.cols} : std::vector<int64_t>{ref.rows};
      if (storage == SnapshotStorage::Int8Rows && ref.is_matrix()) quantize_rows(w.values, ref.rows, ref.cols, w.q, w.scales);
    });
  std::vector<TensorToWrite> tensors;
  for (const StoredWeight& w : stored) {
    if (w.q.empty()) {
      tensors.push_back({w.name, w.shape, w.values, {}, storage == SnapshotStorage::Int8Rows});
      continue;
    }
    tensors.push_back({w.name, w.shape, {}, w.q, false});
    tensors.push_back({w.name + ".scale", {w.shape[0]}, w.scales, {}, true});
  }
  return serialize_safetensors(tensors, metadata, storage == SnapshotStorage::F16 ? DType::F16 : DType::F32);
}

const TensorView& tensor(const SafetensorsFile& file, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView* t = file.find(name);
  if (!t) fail(ErrorKind::Missing, kWhere, "'" + file.origin() + "' lacks tensor '" + name + "'");
  if (t->shape != shape)
    fail(ErrorKind::Shape, kWhere, "'" + file.origin() + "': tensor '" + name + "': expected " + shape_string(shape) +
                                       ", found " + shape_string(t->shape));
  return *t;
}

}  // namespace

const char* snapshot_storage_name(SnapshotStorage storage) {
  switch (storage) {
    case SnapshotStorage::F32: return "f32";
    case SnapshotStorage::F16: return "f16";
    case SnapshotStorage::Int8Rows: return "int8-rows";
  }
  return "?";
}

std::string snapshot_storage_description(SnapshotStorage storage) {
  switch (storage) {
    case SnapshotStorage::F32: return "32-bit floats: the weights exactly as they were";
    case SnapshotStorage::F16: return "16-bit floats: each weight within 0.05% of what it was";
    case SnapshotStorage::Int8Rows:
      return "8-bit integers with one scale per row (a weight matrix's row: max |w| / 127), biases and norms "
             "as 32-bit floats: each weight within 0.4% of its row's largest";
  }
  return "";
}

bool snapshot_storage_from_name(const std::string& name, SnapshotStorage& storage) {
  for (SnapshotStorage s : {SnapshotStorage::F32, SnapshotStorage::F16, SnapshotStorage::Int8Rows})
    if (name == snapshot_storage_name(s)) {
      storage = s;
      return true;
    }
  return false;
}

void record_snapshot(TrainingTimeline& timeline, int64_t step, int epoch, double loss, double valid_bleu,
                     const ModelWeights& weights, double valid_perplexity) {
  if (!timeline.snapshots.empty() && timeline.snapshots.back().step == step) {
    TimelineSnapshot& last = timeline.snapshots.back();
    if (valid_bleu >= 0 || valid_perplexity >= 0) {  // the epoch ended on this step: it carries the epoch's score
      last.valid_bleu = valid_bleu;
      last.valid_perplexity = valid_perplexity;
      last.epoch = epoch;
    }
    return;
  }
  timeline.snapshots.push_back({step, epoch, loss, valid_bleu, valid_perplexity, weights});
}

bool snapshot_due(int64_t step, bool epoch_end) {
  if (epoch_end || step == 0) return true;
  if (step <= 300) return step % 50 == 0;
  if (step <= 1000) return step % 100 == 0;
  return false;
}

std::vector<std::byte> serialize_timeline(const TrainingTimeline& timeline, SnapshotStorage storage) {
  return serialize(timeline, storage, "serialize_timeline");
}

void save_timeline(const TrainingTimeline& timeline, const std::string& path, SnapshotStorage storage,
                   const WriteRules& rules) {
  const std::vector<std::byte> bytes = serialize(timeline, storage, "save_timeline");
  const std::string error =
      write_user_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), rules);
  if (!error.empty()) fail(ErrorKind::File, "save_timeline", error);
}

TrainingTimeline load_timeline(const std::string& path) { return load_timeline(SafetensorsFile::open(path)); }

Model snapshot_model(const TrainingTimeline& timeline, size_t index) {
  if (index >= timeline.snapshots.size())
    fail(ErrorKind::Input, "snapshot_model",
         "snapshot " + std::to_string(index) + " asked for; the timeline has " +
             std::to_string(timeline.snapshots.size()) + " (0 to " + std::to_string(timeline.snapshots.size()) +
             " - 1)");
  Model model = timeline.model;
  model.weights = timeline.snapshots[index].weights;
  attach_packed_weights(model.weights);  // as load_model: decoding reads them packed (model/weights.h)
  return model;
}

TrainingTimeline load_timeline(const SafetensorsFile& file) {
  TrainingTimeline t;
  t.model = read_model_description(file, kTimelineFormat);
  const Config& config = t.model.config;
  const auto it = file.metadata().find("timeline");
  if (it == file.metadata().end())
    fail(ErrorKind::Missing, kWhere, "'" + file.origin() + "' has no \"timeline\" entry in its metadata");
  const json meta = parse_json_text(it->second, kWhere, "'" + file.origin() + "': the \"timeline\" metadata");
  const json* snapshots = nullptr;
  std::string storage;
  if (meta.is_object() && meta.contains("storage") && meta["storage"].is_string() && meta.contains("snapshots") &&
      meta["snapshots"].is_array()) {
    storage = meta["storage"].get<std::string>();
    snapshots = &meta["snapshots"];
  }
  if (!snapshots)
    fail(ErrorKind::Format, kWhere, "'" + file.origin() + "': the \"timeline\" metadata needs \"storage\" and "
                                                          "\"snapshots\" (an array)");
  if (!snapshot_storage_from_name(storage, t.storage))
    fail(ErrorKind::Unsupported, kWhere, "'" + file.origin() + "': snapshot storage '" + storage +
                                             "' is not one this version reads (f32, f16, int8-rows)");
  if (snapshots->size() > kMaxSnapshots)
    fail(ErrorKind::Format, kWhere, "'" + file.origin() + "' lists " + std::to_string(snapshots->size()) +
                                        " snapshots; at most " + std::to_string(kMaxSnapshots) + " are read");
  ModelWeights layout;  // empty matrices, the config's layers: for_each_weight walks names and shapes
  layout.encoder_layers.resize(static_cast<size_t>(config.n_encoder_layers));
  layout.decoder_layers.resize(static_cast<size_t>(config.n_decoder_layers));
  for (size_t i = 0; i < snapshots->size(); ++i) {
    const json& e = (*snapshots)[i];
    TimelineSnapshot s;
    try {
      s.step = e.at("step").get<int64_t>();
      s.epoch = e.at("epoch").get<int>();
      s.loss = e.at("loss").get<double>();
      s.valid_bleu = e.at("valid_bleu").get<double>();
      if (e.contains("valid_perplexity")) s.valid_perplexity = e.at("valid_perplexity").get<double>();
    } catch (const json::exception& error) {
      fail(ErrorKind::Format, kWhere, "'" + file.origin() + "': snapshot " + std::to_string(i) + " is damaged (" +
                                          error.what() + ")");
    }
    if (s.step < 0 || (!t.snapshots.empty() && s.step <= t.snapshots.back().step))
      fail(ErrorKind::Format, kWhere, "'" + file.origin() + "': snapshot steps must rise from 0 (snapshot " +
                                          std::to_string(i) + " is at step " + std::to_string(s.step) + ")");
    // Every tensor of the snapshot is checked (present, shape) before its weights are allocated.
    for_each_weight(&config, layout, [&](const WeightRef& ref) {
      if (!ref.stored) return;
      const std::string name = tensor_name(i, ref.name);
      const std::vector<int64_t> shape =
          ref.is_matrix() ? std::vector<int64_t>{ref.rows, ref.cols} : std::vector<int64_t>{ref.rows};
      const TensorView& v = tensor(file, name, shape);
      const bool int8 = t.storage == SnapshotStorage::Int8Rows && ref.is_matrix();
      if (int8 != (v.dtype == DType::I8) || (!int8 && !dtype_is_float_readable(v.dtype)))
        fail(ErrorKind::Format, kWhere, "'" + file.origin() + "': tensor '" + name + "' is " + dtype_name(v.dtype) +
                                            (int8 ? ", expected I8" : ", expected floats"));
      if (int8) tensor(file, name + ".scale", {ref.rows});
    });
    s.weights = allocate_weights(config);
    for_each_weight(&config, s.weights, [&](const WeightRef& ref) {
      if (!ref.stored) return;
      const std::string name = tensor_name(i, ref.name);
      const std::span<float> out(ref.data(), static_cast<size_t>(ref.size()));
      if (t.storage == SnapshotStorage::Int8Rows && ref.is_matrix()) {
        const std::vector<std::byte> q = file.find(name)->read_bytes();
        const std::vector<float> scales = file.find(name + ".scale")->to_floats();
        for (int64_t r = 0; r < ref.rows; ++r)
          for (int64_t c = 0; c < ref.cols; ++c) {
            const size_t k = static_cast<size_t>(r * ref.cols + c);
            out[k] = static_cast<float>(static_cast<int8_t>(q[k])) * scales[static_cast<size_t>(r)];
          }
      } else {
        file.find(name)->read_floats(out);
      }
      for (size_t k = 0; k < out.size(); ++k)
        if (!std::isfinite(out[k]))
          fail(ErrorKind::Value, kWhere, "'" + file.origin() + "': tensor '" + name + "' holds " +
                                             std::to_string(out[k]) + " at index " + std::to_string(k));
    });
    complete_shared_weights(config, s.weights);
    t.snapshots.push_back(std::move(s));
  }
  return t;
}

std::string timeline_path_for(const std::string& model_path) {
  const std::string suffix = ".safetensors";
  const bool has_suffix = model_path.size() > suffix.size() &&
                          model_path.compare(model_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? model_path.substr(0, model_path.size() - suffix.size()) : model_path) + ".timeline" + suffix;
}

}  // namespace sf
