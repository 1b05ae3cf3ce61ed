// stepformer-cli trace: writes the trace of forward() under the documented names, with interventions, and
// reports bad input as an error exit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "decode/decoder.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "transformer/forward.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

struct CliModel {
  fs::path dir;
  fs::path model_path;
  Model model;
  CliModel() {
    dir = fs::temp_directory_path() / ("stepformer_cli_trace_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    model.config = testing::small_config();
    model.config.src_vocab_size = 12;
    model.config.tgt_vocab_size = 10;
    auto vocab = [](int n) {
      std::vector<std::string> t = {"<unk>", "<pad>", "<bos>", "<eos>"};
      for (int i = 4; i < n; ++i) t.push_back(std::string("w").append(std::to_string(i)));
      return Vocabulary(t, SpecialIds{});
    };
    model.src_vocab = vocab(12);
    model.tgt_vocab = vocab(10);
    model.weights = testing::random_weights(model.config, 5);
    model_path = dir / "model.safetensors";
    save_model(model, model_path.string());
  }
  ~CliModel() { fs::remove_all(dir); }

  int run(const std::string& args) const {
    // --device cpu: these tests hold the CLI to the CPU's own numbers (1e-6); tests/cuda checks --device cuda.
    const std::string cmd = std::string(STEPFORMER_CLI_PATH) + " trace " + model_path.string() + " --device cpu " + args +
                            " > " + (dir / "log.txt").string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

void expect_file_matches(const std::string& path, const Trace& want) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  int compared = 0;
  for (const NamedTensor& nt : trace_tensors(want)) {
    const TensorView* v = file.find(nt.name);
    ASSERT_NE(v, nullptr) << nt.name;
    ASSERT_EQ(v->shape, nt.tensor.shape) << nt.name;
    const std::vector<float> got = v->to_floats();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], nt.tensor.data[i], 1e-6f) << nt.name;
    ++compared;
  }
  EXPECT_GT(compared, 50);
}

TEST(CliTrace, IdsWithInterventions) {
  CliModel m;
  const std::string out = (m.dir / "trace.safetensors").string();
  ASSERT_EQ(m.run("--ids --src '5 6 7 1' --tgt '2 4 5' --head-off enc.2.3 --head-off cross.1.1 "
                  "--no-causal-mask --out " + out), 0);
  Interventions iv;
  iv.heads_off = {{AttentionKind::Encoder, 1, 2}, {AttentionKind::Cross, 0, 0}};
  iv.causal_mask = false;
  expect_file_matches(out, forward(m.model.config, m.model.weights, {5, 6, 7, 1}, {2, 4, 5}, iv));
  const SafetensorsFile file = SafetensorsFile::open(out);
  EXPECT_EQ(file.find("enc.0.self_attn.probs")->shape, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(file.find("dec.1.cross_attn.probs")->shape, (std::vector<int64_t>{4, 3, 4}));
  EXPECT_EQ(file.find("logits")->shape, (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(file.metadata().at("format"), "stepformer-trace");
  // The ids and tokens it ran on, and the interventions, as written.
  EXPECT_EQ(file.find("src.ids")->to_floats(), (std::vector<float>{5, 6, 7, 1}));
  EXPECT_EQ(file.find("tgt.ids")->to_floats(), (std::vector<float>{2, 4, 5}));
  EXPECT_EQ(nlohmann::json::parse(file.metadata().at("src_ids")), nlohmann::json({5, 6, 7, 1}));
  EXPECT_EQ(nlohmann::json::parse(file.metadata().at("tgt_tokens")), nlohmann::json({"<bos>", "w4", "w5"}));
  EXPECT_EQ(file.metadata().at("decoded"), "false");
  EXPECT_EQ(nlohmann::json::parse(file.metadata().at("interventions")),
            (nlohmann::json{{"heads_off", {"enc.1.2", "cross.0.0"}}, {"causal_mask", false}, {"padding_mask", true},
                            {"positional_encoding", true}}));
}

TEST(CliTrace, NoPaddingMaskLetsQueriesSeeThePads) {
  // A source ending in two pads (id 1): with the padding mask its keys are blocked; without it they are not,
  // and the trace is forward() without the padding mask.
  CliModel m;
  const std::string out = (m.dir / "trace.safetensors").string();
  ASSERT_EQ(m.run("--ids --src '5 6 1 1' --tgt '2 4' --out " + out), 0);
  const Trace masked = forward(m.model.config, m.model.weights, {5, 6, 1, 1}, {2, 4});
  expect_file_matches(out, masked);
  EXPECT_EQ(masked.encoder[0].self_attn.probs[0](0, 3), 0.0f);
  ASSERT_EQ(m.run("--ids --src '5 6 1 1' --tgt '2 4' --no-padding-mask --out " + out), 0);
  Interventions iv;
  iv.padding_mask = false;
  const Trace unmasked = forward(m.model.config, m.model.weights, {5, 6, 1, 1}, {2, 4}, iv);
  EXPECT_GT(unmasked.encoder[0].self_attn.probs[0](0, 3), 0.0f);
  expect_file_matches(out, unmasked);
  EXPECT_FALSE(nlohmann::json::parse(SafetensorsFile::open(out).metadata().at("interventions"))["padding_mask"]);
}

TEST(CliTrace, TextAndGreedy) {
  CliModel m;
  const std::string out = (m.dir / "trace.safetensors").string();
  // Text: the source is tokenized (with <bos>/<eos>), the decoder input is <bos> + target tokens.
  ASSERT_EQ(m.run("--src 'w5 w6' --tgt 'w7 w8' --no-pos-encoding --out " + out), 0);
  Interventions iv;
  iv.positional_encoding = false;
  expect_file_matches(out, forward(m.model.config, m.model.weights, {2, 5, 6, 3}, {2, 7, 8}, iv));
  // No target: greedy decoding, the final pass traced.
  ASSERT_EQ(m.run("--ids --src '5 6 7' --max-length 4 --out " + out), 0);
  DecodeOptions o;
  o.max_length = 4;
  Decoder d(m.model.config, m.model.weights, {5, 6, 7}, {}, o);
  d.run();
  expect_file_matches(out, d.trace());
}

TEST(CliTrace, BadInputIsAnError) {
  CliModel m;
  const std::string out = (m.dir / "trace.safetensors").string();
  EXPECT_EQ(m.run("--ids --src '5 60' --tgt '2' --out " + out), 1);       // id outside the vocabulary
  EXPECT_EQ(m.run("--ids --src '5 6' --tgt '2' --head-off dec.8.1 --out " + out), 1);  // no such layer
  EXPECT_EQ(m.run("--ids --src '5 6' --tgt '2' --head-off dec.0 --out " + out), 2);    // malformed: bad usage
  EXPECT_EQ(m.run("--ids --src '' --tgt '2' --out " + out), 1);           // empty
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace sf
