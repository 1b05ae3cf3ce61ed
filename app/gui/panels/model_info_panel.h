// Panel: what the loaded model file holds. Its configuration (every key, with what it means), the parameter
// count, the vocabularies with their special tokens and a few sample tokens, the tokenizer settings, the
// family, and the provenance stored in the file (dataset, training command, epochs, scores), as
// `stepformer-cli info` prints them. Opened from the top bar ("Model info") or a script's `show model-info`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gui/app_state.h"

namespace sf::gui {

// A list of records in the provenance (the training history: one object per epoch), shown as a table.
struct ProvenanceTable {
  std::string name;                               // "history"
  std::vector<std::string> columns;               // the keys of the first record, in its order
  std::vector<std::vector<std::string>> rows;     // one per record, "" where a record lacks a column
};

// The rows of the panel for one model, computed once per model (not per frame): also what the tests check.
struct ModelInfo {
  std::string path;
  int64_t parameters = 0;
  std::vector<std::pair<std::string, std::string>> config;      // key, value as text, in config_to_json order
  std::vector<std::pair<std::string, std::string>> tokenizer;   // key, value
  std::vector<std::pair<std::string, std::string>> provenance;  // key (nested objects as "scores.bleu"), value
  std::vector<ProvenanceTable> provenance_tables;               // lists of objects, e.g. the per-epoch history
  std::vector<std::string> src_samples, tgt_samples;            // the first ordinary tokens of each vocabulary
};
ModelInfo describe_model(const Model& model, const std::string& path);

// "3,712,512"
std::string with_thousands(int64_t n);
// What a config key means, in a few words ("" for a key this build does not know).
const char* config_key_meaning(const std::string& key);

class ModelInfoPanel {
 public:
  // `warnings`: what loading the file reported (tensors the family does not know). `weights_note`: where the
  // weights on show come from when they are not the file's (a training snapshot and how it is stored), or "".
  void draw(const AppState& state, const std::vector<std::string>& warnings, const std::string& weights_note = "");

 private:
  const Model* described_ = nullptr;
  ModelInfo info_;
};

}  // namespace sf::gui
