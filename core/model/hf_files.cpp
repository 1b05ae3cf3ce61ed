#include "model/hf_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <span>
#include <vector>

#include "io/json_text.h"
#include "io/user_files.h"
#include "model/hf_marian.h"  // hf_hub_name
#include "util/error.h"

namespace sf::hf {

std::string in_folder(const std::string& folder, const std::string& name) {
  return folder.empty() || folder.back() == '/' ? folder + name : folder + "/" + name;
}

void require_folder(const std::string& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(ErrorKind::File, ErrorCode::NotAFolder, kWhere, {{"path", folder}}, "'" + folder + "' is not a folder");
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

nlohmann::json read_json_file(const std::string& path, uint64_t limit, const char* what) {
  const std::string text = read_user_file(path, limit, what, kWhere);
  return parse_json_text(text, kWhere, "'" + path + "'");
}

int config_int(const nlohmann::json& j, const char* key, const std::string& path, std::optional<int> fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    fail(ErrorKind::Missing, kWhere, "'" + path + "' has no \"" + key + "\"");
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > (1 << 24))
    fail(ErrorKind::Format, kWhere, "'" + path + "': \"" + key + "\" is " + it->dump() + ", not a size or an id");
  return static_cast<int>(it->get<int64_t>());
}

bool config_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& path) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(ErrorKind::Format, kWhere, "'" + path + "': \"" + key + "\" is " + it->dump() + ", not true or false");
  return it->get<bool>();
}

std::string config_string(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double config_number(const nlohmann::json& j, const char* key, double fallback, const std::string& path) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) fail(ErrorKind::Format, kWhere, "'" + path + "': \"" + key + "\" is " + it->dump() + ", not a number");
  return it->get<double>();
}

std::string model_type(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) fail(ErrorKind::Format, kWhere, "'" + path + "' is not a JSON object");
  return config_string(j, "model_type");
}

std::string describe_model(const nlohmann::json& j) {
  const std::string type = config_string(j, "model_type");
  std::string architectures;
  if (const auto it = j.find("architectures"); it != j.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) architectures += (architectures.empty() ? "" : ", ") + a.get<std::string>();
  if (type.empty()) return architectures.empty() ? "a model that names no model_type" : "a model of " + architectures;
  return "a '" + type + "' model" + (architectures.empty() ? "" : " (" + architectures + ")");
}

nlohmann::json folder_provenance(const nlohmann::json& config, const std::string& folder, const char* source) {
  return {{"source", source},
          {"folder", folder},
          {"hub_name", hf_hub_name(folder, config_string(config, "_name_or_path"))},
          {"transformers_version", config_string(config, "transformers_version", "?")}};
}

std::string weights_path(const std::string& folder, const std::string& weights_file, const char* kind,
                         const char* holds) {
  if (!weights_file.empty()) return weights_file;
  const std::string path = in_folder(folder, "model.safetensors");
  if (path_exists(path)) return path;
  if (path_exists(in_folder(folder, "pytorch_model.bin")))
    fail(ErrorKind::Missing, kWhere,
         "'" + folder + "' has pytorch_model.bin but no model.safetensors: convert it with `stepformer-cli import-hf " +
             folder + " --out MODEL.safetensors` (needs Debian's python3-torch), then open that file");
  fail(ErrorKind::Missing, kWhere,
       "'" + folder + "' has no model.safetensors (a " + kind + " folder holds " + holds + ")");
}

std::string required_file(const std::string& folder, const std::string& name, const char* kind, const char* holds,
                          const char* where) {
  const std::string path = in_folder(folder, name);
  if (!path_exists(path))
    fail(ErrorKind::Missing, where,
         "'" + folder + "' has no " + name + " (a " + kind + " folder holds " + holds + ")");
  return path;
}

nlohmann::json read_config_of_type(const std::string& config_path, const char* type, const char* opens,
                                   const char* where) {
  nlohmann::json j = read_json_file(config_path, kMaxJsonBytes, "a config.json");
  if (model_type(j, config_path) != type)
    fail(ErrorKind::Format, where,
         "'" + config_path + "' describes " + describe_model(j) + "; this reader opens " + opens);
  return j;
}

void require_tied_copy(const SafetensorsFile& file, const std::string& copy, const std::string& original,
                       const std::string& original_label, const char* what, const char* model, const char* where) {
  const TensorView* a_view = file.find(copy);
  const TensorView* b_view = file.find(original);
  if (!a_view || !b_view) return;
  if (a_view->shape != b_view->shape)
    fail(ErrorKind::Unsupported, where,
         "'" + file.origin() + "': " + copy + " " + shape_string(a_view->shape) + " is not the shape of " +
             original_label + " " + shape_string(b_view->shape) + ": an untied " + what + " is not " + model + "'s");
  std::vector<float> a(1 << 16), b(1 << 16);
  for (int64_t first = 0; first < a_view->numel(); first += static_cast<int64_t>(a.size())) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(a.size()), a_view->numel() - first));
    a_view->read_floats(first, std::span<float>(a.data(), n));
    b_view->read_floats(first, std::span<float>(b.data(), n));
    for (size_t i = 0; i < n; ++i)
      if (a[i] != b[i])
        fail(ErrorKind::Unsupported, where,
             "'" + file.origin() + "': " + copy + " differs from " + original_label + " (element " +
                 std::to_string(first + static_cast<int64_t>(i)) + "): Stepformer computes " + model + " with its " +
                 what + " tied to " + original_label);
  }
}

}  // namespace sf::hf
