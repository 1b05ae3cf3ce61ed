// The shared subword vocabulary (train/subwords.h, `stepformer-cli subwords`): byte for byte what
// python3-sentencepiece learns with the same options on Multi30k's training sentences, and the same pieces on every
// line of both languages' test sets (tests/reference/make_subword_fixtures.py); deterministic, no word unknown;
// bad sizes and files refused, the CLI's output never written over.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "model/model.h"
#include "model/sentencepiece.h"
#include "train/evaluate.h"
#include "file_bytes.h"
#include "multi30k_files.h"
#include "train/corpus.h"
#include "train/subwords.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using testing::sha256;
std::string read_file(const fs::path& path) { return testing::read_bytes(path); }

const nlohmann::json& fixture() {
  static const nlohmann::json j =
      nlohmann::json::parse(read_file(std::string(STEPFORMER_FIXTURE_DIR) + "/subwords/multi30k_bpe.json"));
  return j;
}

std::string multi30k_tok_dir() {
  const std::string raw = testing::multi30k_raw_dir();
  return raw.empty() ? raw : fs::path(raw).parent_path().string() + "/tok";
}

#define SKIP_WITHOUT_THE_TRAINER()                                                                         \
  if (!subword_learning_available()) GTEST_SKIP() << "this build has no SentencePiece trainer (libsentencepiece_train)"

// Every size of the fixture: the same model bytes as SentencePiece's Python binding, and the same pieces on every
// line of test_2016 in German and English.
TEST(Subwords, EqualSentencePiecesOwnBpeOnMulti30k) {
  SKIP_WITHOUT_THE_TRAINER();
  const std::string tok = multi30k_tok_dir();
  if (tok.empty())
    GTEST_SKIP() << "Multi30k's tokenized files were not found (set STEPFORMER_MULTI30K_DIR to the multi30k folder)";
  for (const auto& [file, hash] : fixture().at("files").items())
    ASSERT_EQ(sha256(read_file(tok + "/" + file)), hash.get<std::string>()) << file << " is not the file the fixture read";
  for (const auto& [size, want] : fixture().at("sizes").items()) {
    SCOPED_TRACE("vocabulary of " + size);
    SubwordOptions o;
    o.vocab_size = std::stoi(size);
    o.files = {tok + "/train.lc.norm.tok.de", tok + "/train.lc.norm.tok.en"};
    const std::string proto = learn_subwords(o);
    EXPECT_EQ(sha256(proto), want.at("sha256").get<std::string>());
    const SentencePieceModels model(proto, proto, "learned", "learned");
    for (const char* lang : {"de", "en"}) {
      const nlohmann::json& p = want.at("pieces").at(lang);
      std::string all;
      int lines = 0;
      for (const TokenSequence& sentence : read_token_lines(tok + "/test_2016_flickr.lc.norm.tok." + lang)) {
        std::string line, split;
        for (const std::string& w : sentence) line += (line.empty() ? "" : " ") + w;
        for (const Piece& piece : model.split(line, Side::Source)) split += (split.empty() ? "" : " ") + piece.piece;
        if (lines < 5) {
          EXPECT_EQ(split, p.at("first").at(lines).get<std::string>()) << lang << " line " << lines + 1;
        }
        all += (lines ? "\n" : "") + split;
        ++lines;
      }
      EXPECT_EQ(lines, p.at("lines").get<int>()) << lang;
      EXPECT_EQ(sha256(all), p.at("sha256").get<std::string>()) << lang << ": the pieces of some line differ";
    }
  }
}

// Any text: the same bytes twice, the special pieces at Stepformer's ids, and a word never seen split into known
// pieces (no <unk>) as long as its letters were seen.
TEST(Subwords, AreDeterministicAndLeaveNoWordUnknown) {
  SKIP_WITHOUT_THE_TRAINER();
  const fs::path dir = fs::temp_directory_path() / ("stepformer_subwords_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "a.txt");
    const char* words[] = {"hund", "katze", "mann", "frau", "läuft", "springt", "im", "park", "über", "die", "straße"};
    for (int i = 0; i < 400; ++i)
      out << words[i % 11] << ' ' << words[(i * 7 + 3) % 11] << ' ' << words[(i * 5 + 1) % 11] << " .\n";
  }
  SubwordOptions o;
  o.files = {(dir / "a.txt").string()};
  o.vocab_size = 80;
  const std::string first = learn_subwords(o), second = learn_subwords(o);
  EXPECT_EQ(first, second);
  const SentencePieceModels model(first, first, "a", "a");
  const std::vector<Piece> pieces = model.split("hundekatze springt", Side::Source);
  ASSERT_GE(pieces.size(), 3u);
  for (const Piece& p : pieces) EXPECT_NE(p.piece, "<unk>") << "'hundekatze' is made of seen letters";
  const std::vector<std::string> known = model.known_pieces(Side::Source);
  ASSERT_EQ(known.size(), 80u);
  EXPECT_EQ(std::vector<std::string>(known.begin(), known.begin() + 4),
            (std::vector<std::string>{"<unk>", "<pad>", "<bos>", "<eos>"}));
  fs::remove_all(dir);
}

TEST(Subwords, BadSizesAndFilesAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer_subwords_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "empty.txt");
  std::ofstream(dir / "small.txt") << "ein hund .\n";
  // The kind of error learning fails with (nullopt: it did not fail).
  const auto kind_of = [](const SubwordOptions& o) -> std::optional<ErrorKind> {
    try {
      learn_subwords(o);
    } catch (const Error& e) {
      return e.kind();
    }
    return std::nullopt;
  };
  SubwordOptions o;
  o.files = {(dir / "small.txt").string()};
  for (int size : {0, kMinSubwordVocabulary - 1, kMaxSubwordVocabulary + 1}) {
    o.vocab_size = size;
    EXPECT_EQ(kind_of(o), ErrorKind::Input) << size;
  }
  o.vocab_size = 5000;  // more pieces than "ein hund ." can make: SentencePiece says so
  EXPECT_EQ(kind_of(o), ErrorKind::Input);
  o.vocab_size = 100;
  o.files = {(dir / "empty.txt").string()};
  EXPECT_EQ(kind_of(o), ErrorKind::Input);
  o.files = {(dir / "missing.txt").string()};
  EXPECT_EQ(kind_of(o), ErrorKind::File);
  o.files = {};
  EXPECT_EQ(kind_of(o), ErrorKind::Input);
  fs::remove_all(dir);
}

// stepformer-cli subwords: writes the model (which loads, and splits as learned), prints pieces per word, never
// replaces a file; a bad size is bad usage (exit 2).
TEST(CliSubwords, WritesTheModelAndNeverReplacesAFile) {
  SKIP_WITHOUT_THE_TRAINER();
  const fs::path dir = fs::temp_directory_path() / ("stepformer_cli_subwords_" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  {
    std::ofstream de(dir / "data" / "train.lc.norm.tok.de"), en(dir / "data" / "train.lc.norm.tok.en");
    for (int i = 0; i < 200; ++i) {
      de << "ein mann " << (i % 2 ? "läuft" : "springt") << " im park .\n";
      en << "a man " << (i % 2 ? "runs" : "jumps") << " in the park .\n";
    }
  }
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string(STEPFORMER_CLI_PATH) + " subwords " + args + " > '" +
                            (dir / "log.txt").string() + "' 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const std::string out = (dir / "v.spm").string();
  ASSERT_EQ(run("--data '" + (dir / "data").string() + "' --size 64 --out '" + out + "'"), 0) << read_file(dir / "log.txt");
  const std::string log = read_file(dir / "log.txt");
  EXPECT_NE(log.find("64 pieces (BPE, shared by de,en)"), std::string::npos) << log;
  EXPECT_NE(log.find("de: 1200 words in"), std::string::npos) << log;
  const std::string bytes = read_file(out);
  SubwordOptions o;
  o.files = {(dir / "data" / "train.lc.norm.tok.de").string(), (dir / "data" / "train.lc.norm.tok.en").string()};
  o.vocab_size = 64;
  EXPECT_EQ(bytes, learn_subwords(o)) << "the file is the vocabulary learned from both languages";
  EXPECT_EQ(run("--data '" + (dir / "data").string() + "' --size 64 --out '" + out + "'"), 1);
  EXPECT_NE(read_file(dir / "log.txt").find("exists"), std::string::npos) << read_file(dir / "log.txt");
  EXPECT_EQ(read_file(out), bytes);
  EXPECT_EQ(run("--data '" + (dir / "data").string() + "' --size 3 --out '" + (dir / "w.spm").string() + "'"), 2);
  EXPECT_FALSE(fs::exists(dir / "w.spm"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// A translator trained on subwords (`train --subwords`): its file carries the SentencePiece model (tokenizer kind
// words_bpe) and its vocabulary is that model's pieces, shared by both sides; text goes through the word-level rules
// and then into pieces, each keeping its word's span; a word never seen is pieces, not <unk>; the pieces decode to
// the words they make; a corpus already tokenized ("&apos;s") is split as it is, not tokenized again.
TEST(SubwordTranslator, TrainsSavesAndReadsItsPieces) {
  SKIP_WITHOUT_THE_TRAINER();
  const fs::path dir = fs::temp_directory_path() / ("stepformer_subword_translator_" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  const char* de[] = {"ein hund läuft im park .", "eine katze springt über die straße .", "der mann &apos;s hut ."};
  const char* en[] = {"a dog runs in the park .", "a cat jumps over the street .", "the man &apos;s hat ."};
  for (const char* split : {"train", "val", "test_2016_flickr"}) {
    std::ofstream d(dir / "data" / (std::string(split) + ".lc.norm.tok.de"));
    std::ofstream e(dir / "data" / (std::string(split) + ".lc.norm.tok.en"));
    for (int i = 0; i < (std::string(split) == "train" ? 60 : 3); ++i) d << de[i % 3] << '\n', e << en[i % 3] << '\n';
  }
  auto cli = [&](const std::string& args) {
    const std::string cmd = std::string(STEPFORMER_CLI_PATH) + " " + args + " > '" + (dir / "log.txt").string() + "' 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const std::string data = (dir / "data").string(), spm = (dir / "v.spm").string(), out = (dir / "m.safetensors").string();
  ASSERT_EQ(cli("subwords --data '" + data + "' --size 70 --out '" + spm + "'"), 0) << read_file(dir / "log.txt");
  ASSERT_EQ(cli("train --data '" + data + "' --out '" + out + "' --subwords '" + spm + "' --share-embeddings --tie-output "
                "--d-model 16 --heads 2 --d-ff 32 --encoder-layers 1 --decoder-layers 1 --epochs 1 --batch-tokens 400 "
                "--warmup 10 --threads 1"),
            0)
      << read_file(dir / "log.txt");
  const std::string log = read_file(dir / "log.txt");
  EXPECT_NE(log.find("(shared BPE pieces of the tokenized words)"), std::string::npos) << log;
  const Model m = load_model(out);
  EXPECT_EQ(m.tokenizer.kind, "words_bpe");
  ASSERT_NE(m.sentencepiece, nullptr);
  EXPECT_EQ(m.sentencepiece->proto(Side::Source), read_file(spm));
  EXPECT_EQ(m.src_vocab.tokens(), m.tgt_vocab.tokens());
  EXPECT_EQ(m.src_vocab.tokens(), m.sentencepiece->known_pieces(Side::Source));
  EXPECT_TRUE(m.config.share_embeddings);
  // "Hundekatze" was never seen: pieces of seen letters, each with the word's span; <bos> first, <eos> last.
  const std::string text = "Ein Hundekatze läuft.";
  const std::vector<Token> tokens = encode_text(m, text, Side::Source);
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_TRUE(tokens.front().special);
  EXPECT_TRUE(tokens.back().special);
  std::vector<std::string> pieces;
  int of_the_new_word = 0;
  for (const Token& t : tokens) {
    if (t.special) continue;
    EXPECT_FALSE(t.unknown) << t.text;
    EXPECT_EQ(t.id, *m.src_vocab.find(t.text)) << t.text;
    EXPECT_EQ(text.substr(t.begin, t.end - t.begin), t.surface) << t.text;
    if (t.surface == "Hundekatze") ++of_the_new_word;
    pieces.push_back(t.text);
  }
  EXPECT_GE(of_the_new_word, 2) << "the new word is several pieces";
  EXPECT_EQ(subword_words(m, pieces, Side::Source), (std::vector<std::string>{"ein", "hundekatze", "läuft", "."}));
  EXPECT_EQ(decode_text(m, pieces, Side::Source), "ein hundekatze läuft.");
  // A tokenized corpus line is split as it is: "&apos;s" stays one word of pieces (not "&amp;apos;s").
  const std::vector<TokenSequence> split = pieces_of(m, {{"der", "mann", "&apos;s", "hut", "."}}, Side::Source);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(subword_words(m, split[0], Side::Source), (std::vector<std::string>{"der", "mann", "&apos;s", "hut", "."}));
  // eval reads it: the same pieces, BLEU on the words.
  EXPECT_EQ(cli("eval '" + out + "' --src '" + data + "/test_2016_flickr.lc.norm.tok.de' --ref '" + data +
                "/test_2016_flickr.lc.norm.tok.en'"),
            0)
      << read_file(dir / "log.txt");
  EXPECT_NE(read_file(dir / "log.txt").find("BLEU = "), std::string::npos);
  // The model is never written over the SentencePiece model it reads.
  const std::string spm_bytes = read_file(spm);
  EXPECT_EQ(cli("train --data '" + data + "' --out '" + spm + "' --subwords '" + spm + "' --epochs 1"), 1);
  EXPECT_NE(read_file(dir / "log.txt").find("not written over"), std::string::npos) << read_file(dir / "log.txt");
  EXPECT_EQ(read_file(spm), spm_bytes);
  // --share-embeddings without one vocabulary is refused.
  EXPECT_EQ(cli("train --data '" + data + "' --out '" + (dir / "n.safetensors").string() + "' --share-embeddings"), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf
