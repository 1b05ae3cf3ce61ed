// libFuzzer target: a Hugging Face GPT-2 folder as a user downloads (or damages) it, read by sf::load_hf_gpt2
// (model/hf_gpt2.h): config.json, vocab.json and merges.txt, and the byte-level BPE (model/byte_bpe.h) those two
// make.
//
// The input is split at the line "====" into up to four parts: config.json, vocab.json, merges.txt, written into a
// folder of this process (a part that is not there is a file that is not there), and a text to tokenize. The folder
// has no model.safetensors (the weights' parser is fuzz_safetensors_header's), so a load that gets that far ends in
// sf::Error(Missing) naming it. Then, when vocab.json and merges.txt make a tokenizer on their own, the text (and a
// few fixed ones) are encoded and decoded with it.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, an exception other than sf::Error, a load that
// succeeds without weights, or a tokenizer that loses bytes: byte-level BPE covers every byte, so the pieces of a
// valid UTF-8 text are that text's bytes in order, their ids are the vocabulary's, and decoding gives the text back
// (abort() on each).
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/hf_gpt2/, from the tiny-gpt2 fixture's files).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "model/byte_bpe.h"
#include "model/hf_gpt2.h"
#include "fuzz_folder.h"
#include "util/error.h"
#include "util/utf8.h"

namespace {

// The round trip a byte-level BPE owes every valid UTF-8 text.
void check_round_trip(const sf::ByteBpe& bpe, std::string_view text) {
  if (text.size() > 4096 || sf::utf8_with_replacements(text) != text) return;  // valid UTF-8 only
  std::string joined;
  std::vector<int> ids;
  for (const sf::BytePiece& p : bpe.encode_pieces(text)) {
    if (p.id < 0 || p.id >= bpe.size()) std::abort();
    joined += p.bytes;
    ids.push_back(p.id);
  }
  if (joined != text) std::abort();
  if (bpe.decode(ids) != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts = sf::fuzz::parts(input, 4);
  const std::string& dir = sf::fuzz::folder("gpt2");
  const char* names[] = {"config.json", "vocab.json", "merges.txt"};
  for (size_t i = 0; i < 3; ++i) sf::fuzz::put(dir, names[i], i < parts.size() ? &parts[i] : nullptr);
  try {
    sf::load_hf_gpt2(dir, nullptr, /*read_weights=*/false);
    std::abort();  // there are no weights: a load must not succeed
  } catch (const sf::Error&) {
  }
  if (parts.size() > 2) {
    try {
      const sf::ByteBpe bpe = sf::ByteBpe::from_text(parts[1], parts[2], "vocab.json");
      for (std::string_view text : {std::string_view("A man's 3 dogs   ran.\n\tthen <|endoftext|> again"),
                                    std::string_view("\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 caf\xc3\xa9"),
                                    std::string_view("")})
        check_round_trip(bpe, text);
      if (parts.size() > 3) {
        check_round_trip(bpe, parts[3]);
        bpe.encode(parts[3]);  // invalid UTF-8 too: U+FFFD, never a crash
      }
    } catch (const sf::Error&) {
    }
  }
  return 0;
}
