#include "model/vocabulary.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace sf {

Vocabulary::Vocabulary(std::vector<std::string> tokens, SpecialIds specials, const std::string& where)
    : tokens_(std::move(tokens)), specials_(specials) {
  index_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].empty())
      fail(ErrorKind::Format, ErrorCode::VocabularyTokenEmpty, where, {{"index", i}},
           "token " + std::to_string(i) + " is empty");
    const auto [it, inserted] = index_.emplace(tokens_[i], static_cast<int>(i));
    if (!inserted)
      fail(ErrorKind::Format, ErrorCode::VocabularyTokenTwice, where,
           {{"token", tokens_[i]}, {"first", it->second}, {"second", i}},
           "token '" + tokens_[i] + "' appears twice (ids " + std::to_string(it->second) + " and " +
               std::to_string(i) + ")");
  }
  auto check = [&](const char* name, int id) {
    if (id < 0 || id >= size())
      fail(ErrorKind::Config, ErrorCode::ConfigIdOutsideVocabulary, where,
           {{"key", name}, {"id", id}, {"size", size()}},
           std::string(name) + " (" + std::to_string(id) + ") is outside the vocabulary (size " +
               std::to_string(size()) + ")");
  };
  check("pad_id", specials_.pad);
  check("bos_id", specials_.bos);
  check("eos_id", specials_.eos);
  check("unk_id", specials_.unk);
}

const std::string& Vocabulary::token(int id) const {
  if (id < 0 || id >= size())
    fail(ErrorKind::Input, ErrorCode::TokenIdOutsideVocabulary, "Vocabulary::token", {{"id", id}, {"size", size()}},
         "id " + std::to_string(id) + " is outside the vocabulary (size " + std::to_string(size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

std::optional<int> Vocabulary::find(std::string_view token) const {
  const auto it = index_.find(std::string(token));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

int Vocabulary::id(std::string_view token) const { return find(token).value_or(specials_.unk); }

bool Vocabulary::is_special(int id) const {
  return id == specials_.pad || id == specials_.bos || id == specials_.eos || id == specials_.unk;
}

nlohmann::json Vocabulary::to_json() const { return nlohmann::json(tokens_); }

Vocabulary Vocabulary::from_json(const nlohmann::json& j, SpecialIds specials, const std::string& where) {
  if (!j.is_array()) fail(ErrorKind::Format, where, "expected a JSON array of token strings, got " + std::string(j.type_name()));
  std::vector<std::string> tokens;
  tokens.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) fail(ErrorKind::Format, where, "token " + std::to_string(i) + " is not a string: " + j[i].dump());
    tokens.push_back(j[i].get<std::string>());
  }
  return Vocabulary(std::move(tokens), specials, where);
}

}  // namespace sf
