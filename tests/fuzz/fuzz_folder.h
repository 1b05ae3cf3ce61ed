// The folder the Hugging Face folder targets (fuzz_hf_marian, fuzz_hf_gpt2, fuzz_hf_bert) write an input's parts
// into, and the splitting of an input into those parts.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace sf::fuzz {

// A folder of this process under /tmp, made once ("/tmp/stepformer-fuzz-NAME-XXXXXX").
inline const std::string& folder(const char* name) {
  static const std::string path = [name] {
    std::string pattern = std::string("/tmp/stepformer-fuzz-") + name + "-XXXXXX";
    if (!::mkdtemp(pattern.data())) std::abort();
    return pattern;
  }();
  return path;
}

// Writes `bytes` as folder/file_name, or removes that file where `bytes` is null (a part the input lacks).
inline void put(const std::string& folder, const std::string& file_name, const std::string_view* bytes) {
  const std::string path = folder + "/" + file_name;
  if (!bytes) {
    std::remove(path.c_str());
    return;
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (!bytes->empty() && std::fwrite(bytes->data(), 1, bytes->size(), f) != bytes->size()) std::abort();
  std::fclose(f);
}

// The input cut at the lines "====" into at most `most` parts.
inline std::vector<std::string_view> parts(std::string_view input, size_t most) {
  std::vector<std::string_view> out;
  for (size_t at = 0; out.size() < most;) {
    const size_t end = input.find("\n====\n", at);
    out.push_back(input.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) break;
    at = end + 6;
  }
  return out;
}

}  // namespace sf::fuzz
