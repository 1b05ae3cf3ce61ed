// libFuzzer target: a Hugging Face BERT folder as a user downloads (or damages) it, read by sf::load_hf_bert
// (model/hf_bert.h): config.json, vocab.txt and tokenizer_config.json, and the WordPiece tokenizer (model/wordpiece.h)
// vocab.txt makes.
//
// The input is split at the line "====" into up to four parts: config.json, vocab.txt, tokenizer_config.json,
// written into a folder of this process (a part that is not there is a file that is not there), and a text to
// tokenize. The folder has no model.safetensors (the weights' parser is fuzz_safetensors_header's), so a load that
// gets that far ends in sf::Error(Missing) naming it. Then, when vocab.txt's lines make a WordPiece on their own
// (lower-casing and cased), the text and a few fixed ones are encoded and decoded.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, an exception other than sf::Error, a load that
// succeeds without weights, or pieces that break their promises: every id inside the vocabulary, every span inside
// the text and in order, [CLS] first and [SEP] last (abort() on each).
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/hf_bert/, from the tiny-bert fixture's files).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "model/hf_bert.h"
#include "model/wordpiece.h"
#include "fuzz_folder.h"
#include "util/error.h"

namespace {

void check_pieces(const sf::WordPiece& wp, std::string_view text) {
  const std::vector<sf::WordPieceToken> tokens = wp.encode(text);
  if (tokens.size() < 2 || tokens.front().id != wp.cls_id() || tokens.back().id != wp.sep_id()) std::abort();
  size_t at = 0;
  std::vector<int> ids;
  for (const sf::WordPieceToken& t : tokens) {
    if (t.id < 0 || t.id >= wp.size() || t.begin > t.end || t.end > text.size() || t.begin < at) std::abort();
    at = t.begin;
    ids.push_back(t.id);
  }
  wp.decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts = sf::fuzz::parts(input, 4);
  const std::string& dir = sf::fuzz::folder("bert");
  const char* names[] = {"config.json", "vocab.txt", "tokenizer_config.json"};
  for (size_t i = 0; i < 3; ++i) sf::fuzz::put(dir, names[i], i < parts.size() ? &parts[i] : nullptr);
  try {
    sf::load_hf_bert(dir, nullptr, /*read_weights=*/false);
    std::abort();  // there are no weights: a load must not succeed
  } catch (const sf::Error&) {
  }
  if (parts.size() > 1) {
    std::vector<std::string> lines;
    for (size_t at = 0; at <= parts[1].size();) {
      const size_t end = parts[1].find('\n', at);
      lines.emplace_back(parts[1].substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
      if (end == std::string_view::npos) break;
      at = end + 1;
    }
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    for (const bool lower : {true, false}) {
      try {
        sf::WordPieceOptions options;
        options.lower_case = lower;
        const sf::WordPiece wp = sf::WordPiece::from_vocab(lines, options);
        const std::string_view texts[] = {"A man's [MASK] dog, running!  \t\xe6\x88\x91\xe7\x88\xb1 caf\xc3\xa9",
                                          "\xff\xfe [mask] \xc3", ""};
        for (std::string_view text : texts) check_pieces(wp, text);
        if (parts.size() > 3) check_pieces(wp, parts[3]);
      } catch (const sf::Error&) {
      }
    }
  }
  return 0;
}
