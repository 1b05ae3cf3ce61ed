// stepformer-cli attribute: the file's layout (attribution (T-1, S + T-1), f, f_baseline for ig, the ids), each
// row equal to the core's one-row attribution (itself held equal to PyTorch autograd: test_attribution.cpp), the
// greedy translation as the target without --tgt, every shape, and bad requests refused with exit code 1 or 2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "decode/decoder.h"
#include "explain/attribution.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "transformer/forward.h"
#include "util/paths.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun attribute(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("stepformer_attribute_log_" + std::to_string(::getpid()));
  const std::string cmd = std::string(STEPFORMER_CLI_PATH) + " attribute " + args + " > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

std::string ids_text(const std::vector<int>& v) {
  std::string s;
  for (int id : v) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

class CliAttribute : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stepformer_cli_attribute_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// A translator with --ids: the target sequence's tokens 1.. scored, row t from the source and inputs 0..t; every
// row the core's gradient x input (or integrated gradients) of that row; ig writes f_baseline.
TEST_F(CliAttribute, EveryRowIsTheCoresAttributionOfTheNextToken) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  const std::string model = std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.model.safetensors";
  std::vector<int> sequence = f.tgt;
  sequence.push_back(f.model.config.eos_id);  // T = inputs + 1
  const int S = static_cast<int>(f.src.size()), T = static_cast<int>(sequence.size());
  for (const char* method : {"gxi", "ig"}) {
    SCOPED_TRACE(method);
    const std::string file = out(std::string(method) + ".safetensors");
    const CliRun r = attribute("'" + model + "' --ids --src '" + ids_text(f.src) + "' --tgt '" + ids_text(sequence) +
                            "' --method " + method + " --steps 8 --head-off dec.1.2 --out '" + file + "'");
    ASSERT_EQ(r.status, 0) << r.out;
    const SafetensorsFile a = SafetensorsFile::open(file);
    const TensorView* values = a.find("attribution");
    ASSERT_NE(values, nullptr);
    ASSERT_EQ(values->shape, (std::vector<int64_t>{T - 1, S + T - 1}));
    const std::vector<float> v = values->to_floats(), fs_ = a.find("f")->to_floats();
    ASSERT_EQ(fs_.size(), static_cast<size_t>(T - 1));
    EXPECT_EQ(a.find("f_baseline") != nullptr, std::string(method) == "ig");
    EXPECT_EQ(a.metadata().at("method"), method);
    EXPECT_EQ(nlohmann::json::parse(a.metadata().at("interventions")).at("heads_off").at(0), "dec.0.1");
    Interventions iv;
    iv.heads_off.push_back(parse_head_ref("dec.1.2"));
    for (int t = 0; t < T - 1; ++t) {
      const int token = sequence[static_cast<size_t>(t + 1)];
      const TokenAttribution one =
          std::string(method) == "ig"
              ? integrated_gradients(f.model.config, f.model.weights, f.src, f.tgt, iv, t, token, 8)
              : gradient_x_input(f.model.config, f.model.weights, f.src, f.tgt, iv, t, token);
      EXPECT_NEAR(fs_[static_cast<size_t>(t)], one.f, 1e-5) << t;
      for (int j = 0; j < S; ++j)
        EXPECT_NEAR(v[static_cast<size_t>(t * (S + T - 1) + j)], one.source[static_cast<size_t>(j)], 1e-5f) << t;
      for (int j = 0; j < T - 1; ++j) {
        const float got = v[static_cast<size_t>(t * (S + T - 1) + S + j)];
        EXPECT_NEAR(got, one.target[static_cast<size_t>(j)], 1e-5f) << t << ", " << j;
        if (j > t) {
          EXPECT_EQ(got, 0.0f) << "row " << t << " reads no input after it";
        }
      }
    }
    EXPECT_EQ(a.find("tgt.ids")->to_floats().size(), static_cast<size_t>(T));
  }
}

// Without --tgt the shipped translator's greedy translation is the target (start token to end token, as the
// Decoder gives it); text is tokenized as `trace` does; rollout rows are shares that sum to 1.
TEST_F(CliAttribute, WithoutATargetTheGreedyTranslationIsScored) {
  const std::string model = shipped_model_path("de-en");
  const std::string file = out("rollout.safetensors");
  const CliRun r = attribute("'" + model + "' --src 'ein hund rennt durch den schnee .' --method rollout --out '" + file + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  const SafetensorsFile a = SafetensorsFile::open(file);
  const Model m = load_model(model);
  const std::vector<float> src_ids = a.find("src.ids")->to_floats(), tgt_ids = a.find("tgt.ids")->to_floats();
  const std::vector<int> src(src_ids.begin(), src_ids.end());
  Decoder decoder(m.config, m.weights, src, {}, DecodeOptions{});
  decoder.run();
  std::vector<int> want = {m.config.bos_id};
  for (int id : decoder.generated()) want.push_back(id);
  EXPECT_EQ(std::vector<int>(tgt_ids.begin(), tgt_ids.end()), want);
  EXPECT_EQ(want.back(), m.config.eos_id);
  EXPECT_EQ(a.metadata().at("decoded"), "true");
  const TensorView* values = a.find("attribution");
  const int64_t rows = values->shape[0], cols = values->shape[1];
  ASSERT_EQ(rows, static_cast<int64_t>(want.size()) - 1);
  ASSERT_EQ(cols, static_cast<int64_t>(src.size() + want.size()) - 1);
  const std::vector<float> v = values->to_floats();
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += v[static_cast<size_t>(i * cols + j)];
    EXPECT_NEAR(sum, 1.0, 1e-4) << i;
  }
  EXPECT_NE(r.out.find("by rollout"), std::string::npos) << r.out;
}

// A GPT: the prompt then its greedy continuation (S = 0); a BERT: (S, S), each row its likeliest token there.
TEST_F(CliAttribute, ADecoderOnlyAndAnEncoderOnlyModel) {
  {
    const std::string file = out("gpt.safetensors");
    const CliRun r = attribute("'" + shipped_model_path("gpt-en") + "' --src 'a dog' --max-length 4 --out '" + file + "'");
    ASSERT_EQ(r.status, 0) << r.out;
    const SafetensorsFile a = SafetensorsFile::open(file);
    const int64_t T = static_cast<int64_t>(a.find("tgt.ids")->to_floats().size());
    EXPECT_GE(T, 4);  // <bos> a dog + at least one generated
    EXPECT_LE(T, 7);
    EXPECT_EQ(a.find("attribution")->shape, (std::vector<int64_t>{T - 1, T - 1}));
    EXPECT_EQ(a.find("src.ids"), nullptr);
  }
  {
    const std::string file = out("bert.safetensors");
    const CliRun r = attribute("'" + shipped_model_path("bert-en") + "' --src 'a man in an orange [MASK] .' --method ig "
                            "--steps 4 --out '" + file + "'");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("completeness"), std::string::npos) << r.out;
    const SafetensorsFile a = SafetensorsFile::open(file);
    const int64_t S = static_cast<int64_t>(a.find("src.ids")->to_floats().size());
    EXPECT_EQ(a.find("attribution")->shape, (std::vector<int64_t>{S, S}));
    const std::vector<std::string> scored = nlohmann::json::parse(a.metadata().at("scored_tokens"));
    EXPECT_EQ(scored.at(6), "shirt") << "the blank's likeliest word (docs/training.md)";
  }
}

TEST_F(CliAttribute, BadRequestsAreRefused) {
  const std::string model = std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.model.safetensors";
  const std::string file = out("bad.safetensors");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--ids --src '2 5 3' --tgt '2' --out '" + file + "'", "nothing after the first to score"},
      {"--ids --src '2 5 3' --method saliency --out '" + file + "'", "gxi (gradient x input)"},
      {"--ids --src '2 5 3' --steps 0 --out '" + file + "'", "--steps"},
      {"--ids --src '2 5 3' --tgt '2 99999 3' --out '" + file + "'", "outside"},
      {"--ids --src '2 5 3' --out '" + model + "'", "model"},
  };
  for (const auto& [args, says] : cases) {
    const CliRun r = attribute("'" + model + "' " + args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.out.find(says), std::string::npos) << args << ": " << r.out;
    EXPECT_FALSE(fs::exists(file)) << args;
  }
  const CliRun bert = attribute("'" + shipped_model_path("bert-en") + "' --src 'a dog .' --tgt 'x' --out '" + file + "'");
  EXPECT_EQ(bert.status, 1);
  EXPECT_NE(bert.out.find("encoder_only"), std::string::npos) << bert.out;
}

}  // namespace
}  // namespace sf
