#include "model/hf_files.h"

#include <sys/stat.h>

#include "io/json_text.h"
#include "io/user_files.h"
#include "util/error.h"

namespace sf::hf {

std::string in_folder(const std::string& folder, const std::string& name) {
  return folder.empty() || folder.back() == '/' ? folder + name : folder + "/" + name;
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

}  // namespace sf::hf
