// stepformer-cli with a GPT-2 folder (tests/fixtures/gpt2, written by tests/reference/make_gpt2_fixtures.py):
// tokenize prints the reference tokenizer's ids, generate the reference's greedy, beam and sampled tokens, trace
// the logits (T, V) of one pass over the prompt, import-hf a model file that computes the same; and each says what
// is wrong with what it cannot do.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/hf_marian.h"
#include "transformer/forward.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

std::string gpt2_fixture(const std::string& name) { return std::string(STEPFORMER_FIXTURE_DIR) + "/gpt2/" + name; }

struct CliRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

// Runs the CLI with `args` (each quoted for the shell) and returns its exit status and output.
CliRun cli(const std::vector<std::string>& args) {
  std::string cmd = STEPFORMER_CLI_PATH;
  for (const std::string& a : args) {
    std::string quoted = "'";
    for (char ch : a) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmd += " " + quoted + "'";
  }
  cmd += " 2>&1";
  CliRun r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string ids_line(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s + "\n";
}

struct Reference {
  testing::ForwardFixture f;
  std::map<std::string, std::string> meta;
  explicit Reference(const std::string& name)
      : f(testing::load_forward_fixture(gpt2_fixture(name + ".trace.safetensors"))),
        meta(SafetensorsFile::open(gpt2_fixture(name + ".trace.safetensors")).metadata()) {}
  std::vector<int> tokens(const char* key) const { return nlohmann::json::parse(meta.at(key)).get<std::vector<int>>(); }
};

TEST(CliGpt2, TokenizePrintsTheReferenceIds) {
  const Reference r("gpt2_plain");
  const CliRun ids = cli({"tokenize", gpt2_fixture("tiny-gpt2"), r.meta.at("prompt")});
  ASSERT_EQ(ids.status, 0) << ids.out;
  EXPECT_EQ(ids.out, ids_line(r.f.tgt));
  const CliRun pieces = cli({"tokenize", gpt2_fixture("tiny-gpt2"), r.meta.at("prompt"), "--pieces"});
  ASSERT_EQ(pieces.status, 0) << pieces.out;
  EXPECT_EQ(pieces.out.rfind("A \xC4\xA0man", 0), 0u) << pieces.out;  // "A", then "Ġman": the space as GPT-2 writes it
}

TEST(CliGpt2, TokenizeATranslatorPrintsTheSourceSidesIds) {
  const std::string model = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";
  const Model m = load_model(model);
  const std::string text = "Zwei Hunde spielen im Schnee.";
  const CliRun r = cli({"tokenize", model, text});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, ids_line(token_ids(encode_text(m, text, Side::Source))));
  EXPECT_EQ(r.out.rfind(std::to_string(m.config.bos_id) + " ", 0), 0u);  // what the encoder reads: <bos> first
}

TEST(CliGpt2, GeneratePrintsTheReferenceTokens) {
  for (const char* name : {"gpt2_plain", "gpt2_bare_plain"}) {
    SCOPED_TRACE(name);
    const Reference r(name);
    const std::string folder = gpt2_fixture(r.meta.at("model"));
    const std::string max_new = r.meta.at("max_new");
    const CliRun greedy = cli({"generate", folder, r.meta.at("prompt"), "--max-new", max_new, "--ids"});
    ASSERT_EQ(greedy.status, 0) << greedy.out;
    std::vector<int> want = r.tokens("greedy");
    if (!want.empty() && want.back() == r.f.model.config.eos_id) want.pop_back();  // the end token is not printed
    EXPECT_EQ(greedy.out, ids_line(want));
    const CliRun beam = cli({"generate", folder, r.meta.at("prompt"), "--max-new", max_new, "--beam",
                          r.meta.at("beam_width"), "--ids"});
    if (r.meta.at("length_penalty") == "1.0") {  // the CLI scores with the folder's length penalty (1.0)
      ASSERT_EQ(beam.status, 0) << beam.out;
      EXPECT_EQ(beam.out, ids_line(r.tokens("beam")));
    }
    const nlohmann::json s = nlohmann::json::parse(r.meta.at("sampling"));
    char temperature[32], top_p[32];
    std::snprintf(temperature, sizeof temperature, "%.9g", s.at("temperature").get<double>());
    std::snprintf(top_p, sizeof top_p, "%.9g", s.at("top_p").get<double>());
    const CliRun sample = cli({"generate", folder, r.meta.at("prompt"), "--max-new", max_new, "--temperature", temperature,
                            "--top-k", std::to_string(s.at("top_k").get<int>()), "--top-p", top_p, "--seed",
                            std::to_string(s.at("seed").get<uint64_t>()), "--ids"});
    ASSERT_EQ(sample.status, 0) << sample.out;
    EXPECT_EQ(sample.out, ids_line(r.tokens("sample")));
  }
  // As text: the greedy continuation, decoded.
  const Reference r("gpt2_plain");
  const CliRun text = cli({"generate", gpt2_fixture("tiny-gpt2"), r.meta.at("prompt"), "--max-new", "8"});
  ASSERT_EQ(text.status, 0) << text.out;
  std::vector<std::string> pieces;
  for (int id : r.tokens("greedy")) pieces.push_back(r.f.model.tgt_vocab.token(id));
  EXPECT_EQ(text.out, decode_text(r.f.model, pieces, Side::Target) + "\n");
}

TEST(CliGpt2, GenerateSaysWhatItCannotDo) {
  const CliRun translator = cli({"generate", std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors", "Ein Hund"});
  EXPECT_EQ(translator.status, 1);
  EXPECT_NE(translator.out.find("encoder_decoder model"), std::string::npos) << translator.out;
  EXPECT_NE(translator.out.find("translate"), std::string::npos) << translator.out;
  const CliRun both = cli({"generate", gpt2_fixture("tiny-gpt2"), "a", "--greedy", "--top-k", "5"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.out.find("choose one of"), std::string::npos) << both.out;
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += " dog";  // 40 tokens, the model has 32 positions
  const CliRun too_long = cli({"generate", gpt2_fixture("tiny-gpt2"), long_prompt});
  EXPECT_EQ(too_long.status, 1);
  EXPECT_NE(too_long.out.find("32 positions"), std::string::npos) << too_long.out;
  const CliRun bad_seed = cli({"generate", gpt2_fixture("tiny-gpt2"), "a", "--seed", "-3"});
  EXPECT_EQ(bad_seed.status, 2) << bad_seed.out;
}

TEST(CliGpt2, TraceWritesThePassOverThePrompt) {
  const Reference r("gpt2_plain");
  const fs::path out = fs::temp_directory_path() / ("gpt2_trace_" + std::to_string(::getpid()) + ".safetensors");
  const CliRun run = cli({"trace", gpt2_fixture("tiny-gpt2"), "--src", r.meta.at("prompt"), "--out", out.string(),
                       "--device", "cpu"});
  ASSERT_EQ(run.status, 0) << run.out;
  const SafetensorsFile file = SafetensorsFile::open(out.string());
  const TensorView* logits = file.find("logits");
  ASSERT_NE(logits, nullptr);
  const int64_t T = static_cast<int64_t>(r.f.tgt.size());
  EXPECT_EQ(logits->shape, (std::vector<int64_t>{T, r.f.model.config.tgt_vocab_size}));
  const std::vector<float> got = logits->to_floats();
  const Tensor& want = r.f.expected.at("logits");
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want.data[i], 1e-5f) << i;
  EXPECT_EQ(file.metadata().at("shape"), "decoder_only");
  EXPECT_EQ(file.find("enc.out"), nullptr);
  // --tgt means nothing to a GPT: said, nothing written.
  fs::remove(out);
  const CliRun tgt = cli({"trace", gpt2_fixture("tiny-gpt2"), "--src", "a", "--tgt", "b", "--out", out.string()});
  EXPECT_EQ(tgt.status, 1);
  EXPECT_NE(tgt.out.find("--tgt is for translation models"), std::string::npos) << tgt.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliGpt2, ImportHfWritesAModelFileThatComputesTheSame) {
  const Reference r("gpt2_bare_plain");
  const fs::path out = fs::temp_directory_path() / ("gpt2_import_" + std::to_string(::getpid()) + ".safetensors");
  const CliRun run = cli({"import-hf", gpt2_fixture("tiny-gpt2-bare"), "--out", out.string()});
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("family gpt2"), std::string::npos) << run.out;
  const Model m = load_model(out.string());
  EXPECT_EQ(m.family, "gpt2");
  const Trace t = forward(m.config, m.weights, {}, r.f.tgt);
  const Tensor& want = r.f.expected.at("logits");
  for (Eigen::Index i = 0; i < t.logits.size(); ++i) ASSERT_NEAR(t.logits.data()[i], want.data[static_cast<size_t>(i)], 1e-5f);
  const CliRun tokens = cli({"tokenize", out.string(), r.meta.at("prompt")});
  EXPECT_EQ(tokens.out, ids_line(r.f.tgt));
  fs::remove(out);
}

}  // namespace
}  // namespace sf
