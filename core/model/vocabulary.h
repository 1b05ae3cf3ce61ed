// A word-level vocabulary: token strings indexed by id, with the special tokens of the config (pad, bos, eos,
// unk). Tokens are stored as the tokenizer produces them (lowercased, Moses-escaped: "&apos;s", "&quot;").
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sf {

struct SpecialIds {
  int pad = 1;
  int bos = 2;
  int eos = 3;
  int unk = 0;
};

class Vocabulary {
 public:
  Vocabulary() = default;
  // Throws ErrorKind::Format naming the first empty or duplicated token, ErrorKind::Config when a special id
  // lies outside the vocabulary. `where` prefixes the messages ("load_model", "src_vocab" ...).
  Vocabulary(std::vector<std::string> tokens, SpecialIds specials, const std::string& where = "Vocabulary");

  int size() const { return static_cast<int>(tokens_.size()); }
  bool empty() const { return tokens_.empty(); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  const SpecialIds& specials() const { return specials_; }

  // The token of an id; throws ErrorKind::Input for an id outside the vocabulary.
  const std::string& token(int id) const;
  // The id of a token; unk when it is not in the vocabulary.
  int id(std::string_view token) const;
  std::optional<int> find(std::string_view token) const;
  bool is_special(int id) const;

  // A JSON array of the token strings, index = id (the form stored in a model file's metadata).
  nlohmann::json to_json() const;
  // Throws ErrorKind::Format when `j` is not an array of strings, plus the constructor's checks.
  static Vocabulary from_json(const nlohmann::json& j, SpecialIds specials, const std::string& where);

 private:
  std::vector<std::string> tokens_;
  SpecialIds specials_;
  std::unordered_map<std::string, int> index_;
};

}  // namespace sf
