// A renaming task (source word wN -> target word vN, 2 to 5 words a line) in the layout training reads:
// DIR/{train,val}.lc.norm.tok.{SRC,TGT}. Small enough that a model learns it in seconds; the unit tests of the
// trainer and the app's live-training tests train on it.
#pragma once
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>

namespace sf::testing {

inline void write_renaming_corpus(const std::filesystem::path& dir, const std::string& src_language,
                                  const std::string& tgt_language, int train_lines, int val_lines, unsigned words,
                                  unsigned seed) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(seed);
  for (const auto& [split, n] : {std::pair<std::string, int>{"train", train_lines}, {"val", val_lines}}) {
    std::ofstream src(dir / (split + ".lc.norm.tok." + src_language)), tgt(dir / (split + ".lc.norm.tok." + tgt_language));
    for (int i = 0; i < n; ++i) {
      const unsigned length = 2 + rng() % 4;
      for (unsigned k = 0; k < length; ++k) {
        const unsigned w = rng() % words;
        src << (k ? " " : "") << "w" << w;
        tgt << (k ? " " : "") << "v" << w;
      }
      src << "\n";
      tgt << "\n";
    }
  }
}

}  // namespace sf::testing
