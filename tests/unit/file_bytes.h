// A file's bytes, and the sha256 of bytes by the system's sha256sum: how tests hold a file to the one a fixture
// was made from (test_subwords.cpp, test_subword_translator.cpp).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sf::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "" when sha256sum cannot be run.
inline std::string sha256(const std::string& bytes) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / ("stepformer_sha_" + std::to_string(::getpid()));
  std::ofstream(tmp, std::ios::binary) << bytes;
  FILE* pipe = ::popen(("sha256sum '" + tmp.string() + "'").c_str(), "r");
  char hash[65] = {};
  const size_t n = pipe ? std::fread(hash, 1, 64, pipe) : 0;
  if (pipe) ::pclose(pipe);
  std::filesystem::remove(tmp);
  return n == 64 ? std::string(hash) : std::string();
}

}  // namespace sf::testing
