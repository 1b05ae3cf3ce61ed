// A model file whose weights are a hole: the header of a model of `config` (its tensors' names, shapes and
// offsets), then a file as long as they are, made with ftruncate (sparse: gigabytes declared, none written, every
// value reading 0). What a file that declares a huge model costs before its values are read: the tests of the
// memory checks and of cancelling a load.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/name_tables.h"

namespace sf::testing {

// `like` is a model file of `family` whose metadata (vocabularies, tokenizer, provenance) is taken; its config
// is replaced by `config` (vocabulary sizes kept). Returns the bytes the header declares for the weights.
inline uint64_t write_sparse_model(const std::string& path, Config config, const std::string& like,
                                   const std::string& family = "stepformer") {
  const SafetensorsFile small = SafetensorsFile::open(like);
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [key, value] : small.metadata()) meta[key] = value;
  const Config small_config = config_from_json(nlohmann::json::parse(small.metadata().at("config")));
  config.src_vocab_size = small_config.src_vocab_size;
  config.tgt_vocab_size = small_config.tgt_vocab_size;
  meta["config"] = config_to_json(config).dump();
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const TensorSpec& spec : weight_layout(family, config)) {
    const uint64_t bytes = static_cast<uint64_t>(spec.numel()) * 4;
    header[spec.name] = {{"dtype", "F32"}, {"shape", spec.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 0;
  char prefix[8];
  std::memcpy(prefix, &length, 8);
  const bool ok = ::write(fd, prefix, 8) == 8 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::ftruncate(fd, static_cast<off_t>(8 + length + offset)) == 0;
  ::close(fd);
  return ok ? offset : 0;
}

}  // namespace sf::testing
