// What every Hugging Face folder reader shares (model/hf_marian.cpp, model/hf_gpt2.cpp, model/hf_bert.cpp): paths in the folder and
// config.json's values read with a message that names the file and the key.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "io/safetensors.h"

namespace sf::hf {

inline constexpr const char* kWhere = "open_hf";
inline constexpr uint64_t kMaxJsonBytes = 1u << 20;      // config.json and friends: a few KB
inline constexpr uint64_t kMaxVocabBytes = 64ull << 20;  // vocab.json: 1-2 MB for 50-65k pieces

std::string in_folder(const std::string& folder, const std::string& name);
// ErrorKind::File (NotAFolder) unless `folder` is a folder.
void require_folder(const std::string& folder);
bool path_exists(const std::string& path);
// A JSON file of the folder, at most `limit` bytes (io/user_files.h's rules: a FIFO or device is refused).
nlohmann::json read_json_file(const std::string& path, uint64_t limit, const char* what);

// config.json's integer `key` (required unless a fallback is given): ErrorKind::Missing when absent, Format when
// not a whole number in 0 .. 2^24.
int config_int(const nlohmann::json& j, const char* key, const std::string& path, std::optional<int> fallback = {});
bool config_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& path);
std::string config_string(const nlohmann::json& j, const char* key, const std::string& fallback = "");
// A number (float) `key`, or the fallback; ErrorKind::Format when present but not a number.
double config_number(const nlohmann::json& j, const char* key, double fallback, const std::string& path);

// FOLDER/NAME where the folder has it; else ErrorKind::Missing "'FOLDER' has no NAME (a KIND folder holds HOLDS)".
std::string required_file(const std::string& folder, const std::string& name, const char* kind, const char* holds,
                          const char* where);

// A hub folder's config.json (at most kMaxJsonBytes) read by the reader of one architecture: its model_type must be
// `type`, else ErrorKind::Format "'PATH' describes ...; this reader opens OPENS".
nlohmann::json read_config_of_type(const std::string& config_path, const char* type, const char* opens,
                                   const char* where);

// A tensor a hub file may carry as a copy of another (GPT-2's lm_head.weight of wte, BERT's masked-LM decoder of the
// word embedding) must be that tensor itself, as Stepformer computes the model tied: compared in chunks, never
// both whole in memory. Nothing to check where either is absent. ErrorKind::Unsupported naming the first element
// that differs: "'FILE': COPY differs from ORIGINAL (element N): Stepformer computes MODEL with its WHAT tied to
// ORIGINAL".
void require_tied_copy(const SafetensorsFile& file, const std::string& copy, const std::string& original,
                       const std::string& original_label, const char* what, const char* model, const char* where);

// config.json's model_type ("" when it names none), after checking the file is a JSON object.
std::string model_type(const nlohmann::json& j, const std::string& path);
// What a config describes, for messages: "a 'bert' model (BertForMaskedLM)".
std::string describe_model(const nlohmann::json& j);
// Where a folder reader's provenance starts: source, folder, hub name, transformers version (config.json's).
nlohmann::json folder_provenance(const nlohmann::json& config, const std::string& folder, const char* source);
// The weights to read: `weights_file` when given (import-hf's conversion), else the folder's model.safetensors;
// ErrorKind::Missing when absent, naming import-hf where there is a pytorch_model.bin, else the files `kind`'s
// folder holds (`holds`: "config.json, model.safetensors, vocab.json and merges.txt").
std::string weights_path(const std::string& folder, const std::string& weights_file, const char* kind,
                         const char* holds);

// The architectures Stepformer opens from a folder, for messages.
inline constexpr const char* kOpenedArchitectures =
    "Hugging Face Marian models (model_type \"marian\", the opus-mt translators), GPT-2 (model_type \"gpt2\", "
    "GPT2LMHeadModel) and BERT (model_type \"bert\", BertForMaskedLM)";

}  // namespace sf::hf
