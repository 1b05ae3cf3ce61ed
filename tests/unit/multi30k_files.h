// Multi30k's raw files for the tokenizer tests (test_marian.cpp, test_byte_bpe.cpp). Multi30k is not in the
// repository (../shared/data on the development machine): a test without it checks what it can and says it skipped
// the rest, and why.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace sf::testing {

// Multi30k's raw test set: STEPFORMER_MULTI30K_DIR, else the shared data beside the repository, else this
// workplace's copy. "" when none is there.
inline std::string multi30k_raw_dir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("STEPFORMER_MULTI30K_DIR")) candidates.push_back(env);
  candidates.push_back(std::string(STEPFORMER_SOURCE_DIR) + "/../shared/data/multi30k");
  candidates.push_back("/work/shared/data/multi30k");
  for (const std::string& c : candidates)
    if (std::filesystem::exists(c + "/raw/test_2016_flickr.de.gz")) return c + "/raw";
  return "";
}

// The lines of a .gz file (gzip -dc), split on \n.
inline std::vector<std::string> gzip_lines(const std::string& path) {
  std::vector<std::string> lines;
  FILE* pipe = ::popen(("gzip -dc '" + path + "'").c_str(), "r");
  if (!pipe) return lines;
  std::string all;
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) all.append(buffer, n);
  ::pclose(pipe);
  size_t start = 0;
  for (size_t nl; (nl = all.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(all.substr(start, nl - start));
  if (start < all.size()) lines.push_back(all.substr(start));
  return lines;
}

}  // namespace sf::testing
