// The shipped subword translator (issue #54) against independent references
// (tests/reference/make_subword_translator_fixtures.py -> tests/fixtures/subwords/translator.safetensors):
//   - its pieces: python3-sentencepiece, given the SentencePiece model the file carries, splits every line of
//     Multi30k's test set in both languages as the model's words_bpe tokenizer does (each word alone);
//   - its first greedy decoding steps: PyTorch's own Transformer layers in float64 on the file's weights give the
//     same log-probabilities over the whole vocabulary (within 1e-5) and choose the same pieces.
//   - its score: `stepformer-cli eval` on test_2016_flickr gives the BLEU recorded when it was shipped, greedy and
//     with beam search (4, length penalty 2.0), within 0.05: a changed model, tokenizer, decoder or BLEU is caught.
// A changed model file fails the first check by name (regenerate the fixture with the script).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "decode/decoder.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "command_run.h"
#include "file_bytes.h"
#include "multi30k_files.h"
#include "train/corpus.h"
#include "train/evaluate.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using testing::sha256;
using testing::read_bytes;

const SafetensorsFile& fixture() {
  static const SafetensorsFile f =
      SafetensorsFile::open(std::string(STEPFORMER_FIXTURE_DIR) + "/subwords/translator.safetensors");
  return f;
}

std::string meta(const std::string& key) { return fixture().metadata().at(key); }

// The model the fixture was made from, which must be the shipped file as it is now.
const Model& shipped() {
  static const Model m = [] {
    const std::string path = std::string(STEPFORMER_SOURCE_DIR) + "/" + meta("model");
    EXPECT_EQ(sha256(read_bytes(path)), meta("model_sha256"))
        << path << " is not the model the fixture was made from: run tests/reference/make_subword_translator_fixtures.py";
    return load_model(path);
  }();
  return m;
}

std::vector<int64_t> ints(const std::string& name) {
  const TensorView* t = fixture().find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  const std::vector<std::byte> bytes = t->read_bytes();
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(ShippedSubwordTranslator, PiecesEqualSentencePiecesOwnOnBothTestSets) {
  const Model& m = shipped();
  ASSERT_EQ(m.tokenizer.kind, "words_bpe");
  const std::string raw = testing::multi30k_raw_dir();
  if (raw.empty()) GTEST_SKIP() << "Multi30k was not found (set STEPFORMER_MULTI30K_DIR to the multi30k folder)";
  const std::string tok = fs::path(raw).parent_path().string() + "/tok";
  const nlohmann::json want = nlohmann::json::parse(meta("pieces"));
  for (const char* lang : {"de", "en"}) {
    const std::vector<TokenSequence> lines = read_token_lines(tok + "/test_2016_flickr.lc.norm.tok." + lang);
    const std::vector<TokenSequence> pieces = pieces_of(m, lines, lang == std::string("de") ? Side::Source : Side::Target);
    ASSERT_EQ(static_cast<int>(pieces.size()), want.at(lang).at("lines").get<int>()) << lang;
    std::string all;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string line;
      for (const std::string& p : pieces[i]) line += (line.empty() ? "" : " ") + p;
      if (i < 3) EXPECT_EQ(line, want.at(lang).at("first").at(i).get<std::string>()) << lang << " line " << i + 1;
      all += (i ? "\n" : "") + line;
    }
    EXPECT_EQ(sha256(all), want.at(lang).at("sha256").get<std::string>()) << lang << ": the pieces of some line differ";
  }
}

TEST(ShippedSubwordTranslator, FirstGreedyStepsEqualPyTorch) {
  const Model& m = shipped();
  const int steps = std::stoi(meta("steps"));
  const nlohmann::json sentences = nlohmann::json::parse(meta("sentences"));
  ASSERT_GE(sentences.size(), 3u);
  for (size_t k = 0; k < sentences.size(); ++k) {
    const std::string sentence = sentences[k].get<std::string>();
    SCOPED_TRACE(sentence);
    // The app's way in: the text through the word rules, then each word's pieces.
    const std::vector<int> src = token_ids(encode_text(m, sentence, Side::Source));
    const std::vector<int64_t> want_src = ints("src_ids." + std::to_string(k));
    ASSERT_EQ(std::vector<int64_t>(src.begin(), src.end()), want_src);
    DecodeOptions greedy;
    greedy.max_length = steps + 5;
    Decoder decoder(m.config, m.weights, src, {}, greedy);
    for (int s = 0; s < steps; ++s) ASSERT_TRUE(decoder.step());
    const Mat logits = decoder.chosen_logits();  // (steps, V)
    const TensorView* ref = fixture().find("logprobs." + std::to_string(k));
    ASSERT_NE(ref, nullptr);
    const std::vector<float> want = ref->to_floats();
    ASSERT_EQ(logits.rows(), steps);
    ASSERT_EQ(static_cast<size_t>(logits.size()), want.size());
    // Log-probabilities within 1e-5 (relative beyond |log p| = 1: a piece at log p = -25 is held to 2.5e-4, float
    // rounding's share there), probabilities within 1e-6, over the whole vocabulary.
    double worst_log = 0, worst_p = 0;
    for (int s = 0; s < steps; ++s) {
      const RowVec row = logits.row(s);
      const double top = row.maxCoeff();
      double sum = 0;
      for (Eigen::Index v = 0; v < row.size(); ++v) sum += std::exp(static_cast<double>(row(v)) - top);
      const double lse = top + std::log(sum);
      for (Eigen::Index v = 0; v < row.size(); ++v) {
        const double got = row(v) - lse, ref = want[static_cast<size_t>(s * row.size() + v)];
        worst_log = std::max(worst_log, std::abs(got - ref) / std::max(1.0, std::abs(ref)));
        worst_p = std::max(worst_p, std::abs(std::exp(got) - std::exp(ref)));
      }
    }
    EXPECT_LT(worst_log, 1e-5) << "log-probabilities differ from PyTorch's";
    EXPECT_LT(worst_p, 1e-6) << "probabilities differ from PyTorch's";
    std::printf("  %s: log p within %.2e (relative past 1), p within %.2e of PyTorch's\n", sentence.c_str(), worst_log,
                worst_p);
    const std::vector<int> chosen = decoder.generated();
    const std::vector<int64_t> want_chosen = ints("chosen." + std::to_string(k));
    EXPECT_EQ(std::vector<int64_t>(chosen.begin(), chosen.begin() + steps), want_chosen);
  }
}

// The shipped model's test_2016_flickr BLEU (README, docs/training.md): the trainer's own figures at the end of its
// run, in the model's provenance; beam search of width 4 with the length penalty chosen on validation (2.0).
constexpr double kShippedGreedyBleu = 40.27, kShippedBeamBleu = 41.51;

double eval_bleu(const std::string& model, const std::string& tok, const std::string& extra) {
  const testing::CommandRun r = testing::run_command(std::string(STEPFORMER_CLI_PATH) + " eval '" + model + "' --src '" +
                                                     tok + "/test_2016_flickr.lc.norm.tok.de' --ref '" + tok +
                                                     "/test_2016_flickr.lc.norm.tok.en' --device cpu" + extra + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.rfind("BLEU = ");
  EXPECT_NE(at, std::string::npos) << r.output;
  return at == std::string::npos ? -1 : std::stod(r.output.substr(at + 7));
}

TEST(ShippedSubwordTranslator, EvalScoresTheShippedBleuOnTest2016) {
  const Model& m = shipped();
  EXPECT_NEAR(m.provenance.at("test_bleu_greedy").get<double>(), kShippedGreedyBleu, 0.005);
  EXPECT_NEAR(m.provenance.at("test_bleu_beam").get<double>(), kShippedBeamBleu, 0.005);
  const std::string raw = testing::multi30k_raw_dir();
  if (raw.empty()) GTEST_SKIP() << "Multi30k was not found (set STEPFORMER_MULTI30K_DIR to the multi30k folder)";
  const std::string tok = fs::path(raw).parent_path().string() + "/tok";
  const std::string path = std::string(STEPFORMER_SOURCE_DIR) + "/" + meta("model");
  EXPECT_NEAR(eval_bleu(path, tok, ""), kShippedGreedyBleu, 0.05) << "greedy";
  const double alpha = m.provenance.at("test_length_penalty").get<double>();
  EXPECT_EQ(alpha, 2.0);
  EXPECT_NEAR(eval_bleu(path, tok, " --beam 4 --length-penalty 2"), kShippedBeamBleu, 0.05) << "beam 4";
}

}  // namespace
}  // namespace sf
