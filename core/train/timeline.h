// A training run's timeline: the weights at chosen steps, so that a class can watch a model learn again without
// training it (the app scrubs through the snapshots; every stage then shows the model as it was).
//
// The file (a safetensors file beside the model it ends in, MODEL.timeline.safetensors by convention) holds:
//   __metadata__: the model's description as a model file has it (model.h: family, config, vocabularies,
//                 tokenizer, provenance) with "format": "stepformer-timeline", and "timeline": a JSON object
//                 {"storage": "f32" | "f16" | "int8-rows", "snapshots": [{"step", "epoch", "loss", "valid_bleu"}]}
//                 (a language model's snapshot at an epoch's end also has "valid_perplexity", its valid_bleu -1);
//   tensors:      "snapshot.I.NAME" for snapshot I and each weight the family stores (NAME: our names, as in a
//                 "stepformer" model file). With "int8-rows" a matrix is 8-bit integers q with one F32 scale per
//                 row in "snapshot.I.NAME.scale" (w = q * scale, scale = max |w| of the row / 127: each weight
//                 within half a step, 0.4% of its row's largest), and vectors (biases, norms) stay F32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/user_files.h"
#include "model/model.h"

namespace sf {

enum class SnapshotStorage { F32, F16, Int8Rows };
const char* snapshot_storage_name(SnapshotStorage storage);  // "f32", "f16", "int8-rows"
// A sentence for Model info: how the numbers are stored and how far they can be from the trained ones.
std::string snapshot_storage_description(SnapshotStorage storage);

struct TimelineSnapshot {
  int64_t step = 0;         // optimiser steps taken (0: the weights before training)
  int epoch = 0;            // the epoch it was taken in (0 for step 0)
  double loss = 0;          // the epoch's running training loss when taken (0 at step 0)
  double valid_bleu = -1;   // validation BLEU when taken at an epoch's end; -1 otherwise
  double valid_perplexity = -1;  // a language model's (decoder-only) validation perplexity there instead; -1 otherwise
  ModelWeights weights;     // every weight, shared ones completed (complete_shared_weights)
};

struct TrainingTimeline {
  Model model;  // what the run trains: description only (model.weights empty)
  std::vector<TimelineSnapshot> snapshots;  // rising steps
  SnapshotStorage storage = SnapshotStorage::F32;  // how the file it was read from stored them
};

// The schedule of a run's snapshots: step 0, every 50 steps up to step 300, every 100 up to 1,000, and the end
// of every epoch: dense while the model changes fastest, sparse once it settles.
bool snapshot_due(int64_t step, bool epoch_end);

// Appends a snapshot of `weights` at `step`. When the last snapshot is of this very step, nothing is added; an
// epoch's end (valid_bleu >= 0, or a language model's valid_perplexity >= 0) on a scheduled step sets that
// snapshot's validation score and epoch.
void record_snapshot(TrainingTimeline& timeline, int64_t step, int epoch, double loss, double valid_bleu,
                     const ModelWeights& weights, double valid_perplexity = -1);
// The storage named `name` ("f32", "f16", "int8-rows"); false when no storage has that name.
bool snapshot_storage_from_name(const std::string& name, SnapshotStorage& storage);

// Writes the timeline under `rules` (io/user_files.h: atomic, never onto an input, a link or a non-regular
// file). Checks every snapshot's weights against the model's config, and that steps rise, first.
void save_timeline(const TrainingTimeline& timeline, const std::string& path, SnapshotStorage storage,
                   const WriteRules& rules = WriteRules{true, {}, {}});
std::vector<std::byte> serialize_timeline(const TrainingTimeline& timeline, SnapshotStorage storage);

// The model as it was at snapshot `index`: the timeline's description with that snapshot's weights.
// Throws ErrorKind::Input for an index outside the snapshots.
Model snapshot_model(const TrainingTimeline& timeline, size_t index);

// Reads a timeline file; ErrorKind::Format when it is not one (or is damaged), Missing/Shape/Value as
// load_model for its tensors.
TrainingTimeline load_timeline(const std::string& path);
TrainingTimeline load_timeline(const SafetensorsFile& file);

// Where the timeline of the model at `model_path` lies by convention: "X.safetensors" -> "X.timeline.safetensors".
std::string timeline_path_for(const std::string& model_path);

}  // namespace sf
