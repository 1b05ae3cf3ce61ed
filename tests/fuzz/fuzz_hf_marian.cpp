// libFuzzer target: a Hugging Face Marian folder as a user downloads (or damages) it, read by sf::load_hf_marian
// (model/hf_marian.h): config.json, vocab.json, generation_config.json, tokenizer_config.json and the
// SentencePiece models, each a parser a user's files reach.
//
// The input is split at the line "====" into up to five parts, written into a folder of this process as
// config.json, vocab.json, generation_config.json, tokenizer_config.json and source.spm (target.spm is the same
// bytes); a part that is not there is a file that is not there. The folder has no model.safetensors (the weights'
// parser is fuzz_safetensors_header's), so a load that gets that far ends in sf::Error(Missing) naming it.
// Then, when the SentencePiece part loads as a model on its own, a few sentences are split and joined with it.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, an exception other than sf::Error, or a load
// that succeeds without weights (abort()).
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/hf_marian/, the tiny-separate fixture's files).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "model/hf_marian.h"
#include "model/sentencepiece.h"
#include "fuzz_folder.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts = sf::fuzz::parts(input, 5);
  const std::string& dir = sf::fuzz::folder("hf");
  const char* names[] = {"config.json", "vocab.json", "generation_config.json", "tokenizer_config.json", "source.spm"};
  for (size_t i = 0; i < 5; ++i) sf::fuzz::put(dir, names[i], i < parts.size() ? &parts[i] : nullptr);
  sf::fuzz::put(dir, "target.spm", parts.size() > 4 ? &parts[4] : nullptr);
  try {
    sf::load_hf_marian(dir, nullptr, /*read_weights=*/false);
    std::abort();  // there are no weights: a load must not succeed
  } catch (const sf::Error&) {
  }
  if (parts.size() > 4) {
    try {
      const sf::SentencePieceModels spm(std::string(parts[4]), std::string(parts[4]), "source.spm", "target.spm");
      for (const char* text : {"Ein Hund läuft.", "", "   ", "\xff\xfe broken \xc3", ">>fra<< x"}) {
        std::vector<std::string> pieces;
        for (const sf::Piece& p : spm.split(text, sf::Side::Source)) {
          if (p.begin > p.end || p.end > std::string_view(text).size()) std::abort();
          pieces.push_back(p.piece);
        }
        spm.join(pieces, sf::Side::Target);
      }
    } catch (const sf::Error&) {
    }
  }
  return 0;
}
