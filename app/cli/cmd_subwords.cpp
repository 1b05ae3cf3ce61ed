// stepformer-cli subwords --data DIR [--langs de,en] [--size N] --out FILE.spm
// Learns a shared subword (BPE) vocabulary from the training sentences of the languages given (train/subwords.h)
// and writes it as a SentencePiece model; prints how finely it splits each language's training text.
#include <cstdio>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/user_files.h"
#include "model/sentencepiece.h"
#include "train/corpus.h"
#include "train/subwords.h"
#include "util/error.h"

namespace sf::cli {

namespace {

void print_help() {
  std::printf(
      "usage: stepformer-cli subwords --data DIR [--langs de,en] [--size N] --out FILE.spm\n\n"
      "Learns a subword vocabulary shared by the languages given, as the paper's translator reads its text: byte-\n"
      "pair encoding (SentencePiece's BPE, Debian's libsentencepiece) on DIR/train.lc.norm.tok.LANG of each language\n"
      "(Multi30k's tokenized, lower-cased training sentences), every character kept, the special pieces at\n"
      "Stepformer's ids (<unk> 0, <pad> 1, <bos> 2, <eos> 3). Frequent words become one piece, rare ones several\n"
      "(\"zylinderhut\" -> \"zylinder\" \"hut\"), so no word is unknown. The same data and size give the same file.\n\n"
      "  --data DIR     the folder with train.lc.norm.tok.LANG\n"
      "  --langs A,B    the languages whose text is learned from together (default de,en)\n"
      "  --size N       pieces in the vocabulary, %d to %d (default 8000)\n"
      "  --out FILE     the SentencePiece model to write; an existing file is not replaced\n",
      kMinSubwordVocabulary, kMaxSubwordVocabulary);
}

}  // namespace

int run_subwords(const Args& args) {
  std::string data, langs = "de,en", out;
  int size = 8000;
  OptionParser p("subwords");
  p.value("--data", &data);
  p.value("--langs", &langs);
  p.value("--size", &size, kMinSubwordVocabulary, kMaxSubwordVocabulary);
  p.value("--out", &out);
  if (!p.parse(args)) return 2;
  if (p.help_requested()) {
    print_help();
    return 0;
  }
  if (data.empty() || out.empty() || !p.positional().empty()) {
    print_help();
    return 2;
  }
  SubwordOptions o;
  o.vocab_size = size;
  std::vector<std::string> languages;
  std::string language;
  for (std::istringstream in(langs); std::getline(in, language, ',');)
    if (!language.empty()) languages.push_back(language);
  if (languages.empty()) fail(ErrorKind::Input, "subwords", "--langs names no language");
  for (const std::string& l : languages) o.files.push_back(data + "/train.lc.norm.tok." + l);
  const WriteRules rules{.replace = false, .inputs = {data}, .allowed_folder = ""};
  if (const std::string problem = check_output_path(out, rules); !problem.empty()) fail(ErrorKind::File, "subwords", problem);
  const std::string proto = learn_subwords(o);
  if (const std::string problem = write_user_file(out, proto, rules); !problem.empty())
    fail(ErrorKind::File, "subwords", problem);
  std::printf("wrote %s: %d pieces (BPE, shared by %s), %s\n", out.c_str(), size, langs.c_str(),
              byte_size_text(proto.size()).c_str());
  // How finely it splits: pieces per word of each language's training text.
  const SentencePieceModels model(proto, proto, out, out, "subwords");
  for (size_t i = 0; i < languages.size(); ++i) {
    size_t words = 0, pieces = 0;
    for (const TokenSequence& sentence : read_token_lines(o.files[i])) {
      std::string line;
      for (const std::string& w : sentence) line += (line.empty() ? "" : " ") + w;
      words += sentence.size();
      pieces += model.split(line, Side::Source).size();
    }
    std::printf("  %s: %zu words in %zu pieces, %.3f pieces a word\n", languages[i].c_str(), words, pieces,
                words ? static_cast<double>(pieces) / static_cast<double>(words) : 0.0);
  }
  return 0;
}

}  // namespace sf::cli
