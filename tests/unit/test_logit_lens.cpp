// The logit lens (explain/logit_lens.h): every layer's lens against a PyTorch reference written from each family's
// own module (tests/reference/make_logit_lens_fixtures.py: the final norm and the output head applied, in float64,
// to the torch-computed output of each layer), for both PyTorch families, Marian, GPT-2 and BERT, with and without
// interventions; the last layer's lens is the model's own logits, bit for bit; and the CLI writes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "decode/decoder.h"
#include "explain/logit_lens.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/tokenizer.h"
#include "transformer/forward.h"
#include "util/error.h"
#include "util/paths.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

constexpr float kTolerance = 1e-5f;

std::vector<std::string> lens_fixture_paths() {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(std::string(STEPFORMER_FIXTURE_DIR) + "/logit_lens"))
    if (e.path().string().ends_with(".lens.safetensors")) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The trace of the forward fixture a lens fixture was computed from, as our forward pass makes it.
struct LensCase {
  testing::ForwardFixture fixture;
  Trace trace;
  SafetensorsFile lens;
};

LensCase load_case(const std::string& lens_path) {
  SafetensorsFile lens = SafetensorsFile::open(lens_path);
  testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/" + lens.metadata().at("trace"));
  Trace trace = forward(f.model.config, f.model.weights, f.src, f.tgt, f.interventions);
  return {std::move(f), std::move(trace), std::move(lens)};
}

class LogitLensPytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(LogitLensPytorch, EveryLayerMatchesAndTheLastIsTheLogits) {
  const LensCase c = load_case(GetParam());
  const Config& config = c.fixture.model.config;
  const LogitLens lens = logit_lens(config, c.fixture.model.weights, c.trace);
  const bool encoder_only = config.stacks == ModelStacks::EncoderOnly;
  EXPECT_EQ(lens.stack, encoder_only ? AttentionKind::Encoder : AttentionKind::Decoder);
  EXPECT_EQ(c.lens.metadata().at("stack"), encoder_only ? "enc" : "dec");
  const size_t layers = encoder_only ? c.trace.encoder.size() : c.trace.decoder.size();
  ASSERT_EQ(lens.logits.size(), layers);
  ASSERT_GE(layers, 2u) << "a fixture with an earlier layer to look through";
  for (size_t l = 0; l < layers; ++l) {
    const std::string name = logit_lens_name(lens.stack, static_cast<int>(l));
    SCOPED_TRACE(name);
    const TensorView* want = c.lens.find(name);
    ASSERT_NE(want, nullptr);
    const Mat& got = lens.logits[l];
    ASSERT_EQ(want->shape, (std::vector<int64_t>{got.rows(), got.cols()}));
    const std::vector<float> w = want->to_floats();
    float worst = 0;
    for (Eigen::Index i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got.data()[i] - w[static_cast<size_t>(i)]));
    EXPECT_LE(worst, kTolerance);
  }
  // The last layer's lens is what the pass itself computed: the same functions on the same numbers.
  ASSERT_EQ(lens.logits.back().rows(), c.trace.logits.rows());
  EXPECT_TRUE(lens.logits.back() == c.trace.logits) << "the last layer's lens differs from the logits";
  // An earlier layer's is not (a lens that returned the logits for every layer would pass the line above).
  EXPECT_GT((lens.logits.front() - c.trace.logits).cwiseAbs().maxCoeff(), 1e-3f);
}

// What the app keeps of the lens: per layer and row the k likeliest tokens with their probabilities, and the
// probability of the chosen token, against the softmax of the PyTorch reference's lens.
TEST_P(LogitLensPytorch, TheTopTokensAndTheChosenTokensProbabilityLayerByLayer) {
  const LensCase c = load_case(GetParam());
  const Config& config = c.fixture.model.config;
  const std::vector<Mat> outputs = last_stack_outputs(config, c.trace);
  const int rows = static_cast<int>(outputs.at(0).rows());
  std::vector<int> chosen(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) chosen[static_cast<size_t>(r)] = (r * 7 + 3) % static_cast<int>(c.trace.logits.cols());
  chosen.back() = -1;  // (a row without a chosen token)
  const LogitLensTop top = logit_lens_top(config, c.fixture.model.weights, outputs, chosen, 5);
  ASSERT_EQ(top.layers, static_cast<int>(outputs.size()));
  ASSERT_EQ(top.rows, rows);
  ASSERT_EQ(top.k, 5);
  const std::string stack = config.stacks == ModelStacks::EncoderOnly ? "enc" : "dec";
  for (int l = 0; l < top.layers; ++l) {
    const TensorView* want = c.lens.find("logit_lens." + stack + "." + std::to_string(l));
    ASSERT_NE(want, nullptr);
    const std::vector<float> w = want->to_floats();
    const int V = static_cast<int>(want->shape[1]);
    for (int r = 0; r < rows; ++r) {
      // the reference row's softmax and order
      std::vector<double> p(static_cast<size_t>(V));
      double m = -1e30, sum = 0;
      for (int v = 0; v < V; ++v) m = std::max(m, static_cast<double>(w[static_cast<size_t>(r * V + v)]));
      for (int v = 0; v < V; ++v) sum += p[static_cast<size_t>(v)] = std::exp(w[static_cast<size_t>(r * V + v)] - m);
      for (double& x : p) x /= sum;
      std::vector<int> order(static_cast<size_t>(V));
      for (int v = 0; v < V; ++v) order[static_cast<size_t>(v)] = v;
      std::sort(order.begin(), order.end(), [&](int a, int b) { return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)]; });
      for (int i = 0; i < 5; ++i) {
        EXPECT_NEAR(top.p(l, r, i), p[static_cast<size_t>(order[static_cast<size_t>(i)])], 1e-5) << l << "," << r << "," << i;
        // (a tie within the tolerance may order two ids either way: then their probabilities agree)
        if (i + 1 < V && p[static_cast<size_t>(order[static_cast<size_t>(i)])] - p[static_cast<size_t>(order[static_cast<size_t>(i + 1)])] > 1e-5) {
          EXPECT_EQ(top.id(l, r, i), order[static_cast<size_t>(i)]) << l << "," << r << "," << i;
        }
      }
      if (chosen[static_cast<size_t>(r)] < 0) {
        EXPECT_EQ(top.chosen_p(l, r), -1.0f);
      } else {
        EXPECT_NEAR(top.chosen_p(l, r), p[static_cast<size_t>(chosen[static_cast<size_t>(r)])], 1e-5);
      }
    }
  }
  EXPECT_THROW(logit_lens_top(config, c.fixture.model.weights, outputs, std::vector<int>(static_cast<size_t>(rows + 1), 0), 5),
               Error);
  // Cancelled before it starts: no layer.
  const std::atomic<bool> cancelled{true};
  EXPECT_EQ(logit_lens_top(config, c.fixture.model.weights, outputs, chosen, 5, &cancelled).layers, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LogitLensPytorch, ::testing::ValuesIn(lens_fixture_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = fs::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

// Every family and both kinds of stack are covered, with interventions.
TEST(LogitLensFixtures, CoverEveryFamilyAndInterventions) {
  std::set<std::string> families;
  bool with_interventions = false, encoder_only = false;
  for (const std::string& path : lens_fixture_paths()) {
    const LensCase c = load_case(path);
    families.insert(c.fixture.family);
    with_interventions |= !c.fixture.interventions.heads_off.empty() || !c.fixture.interventions.custom_masks.empty();
    encoder_only |= c.fixture.model.config.stacks == ModelStacks::EncoderOnly;
  }
  EXPECT_EQ(families, (std::set<std::string>{"bert", "gpt2", "marian", "pytorch-tutorial", "seq2seq-tutorial"}));
  EXPECT_TRUE(with_interventions);
  EXPECT_TRUE(encoder_only);
}

// The shipped translator as the app reads it: greedy decoding's final traced pass (KV caches, one step at a
// time); its last layer's lens is the logits it chose its tokens by.
TEST(LogitLens, TheShippedTranslatorsDecodedTraceEndsAtItsLogits) {
  const Model m = load_model(shipped_model_path("de-en"));
  const std::vector<int> src = token_ids(encode_text(m, "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.", Side::Source));
  Decoder d(m.config, m.weights, src, {}, DecodeOptions{});
  d.run();
  const Trace& t = d.trace();
  const LogitLens lens = logit_lens(m.config, m.weights, t);
  ASSERT_EQ(lens.logits.size(), static_cast<size_t>(m.config.n_decoder_layers));
  ASSERT_EQ(lens.logits.back().rows(), t.logits.rows());
  EXPECT_LE((lens.logits.back() - t.logits).cwiseAbs().maxCoeff(), 1e-5f);
  Eigen::Index last_layer_choice = 0;
  lens.logits.back().row(0).maxCoeff(&last_layer_choice);
  EXPECT_EQ(m.tgt_vocab.token(static_cast<int>(last_layer_choice)), "a");
}

TEST(LogitLens, ATraceWithoutTheLastStackOrABatchIsRefused) {
  const testing::ForwardFixture f =
      testing::load_forward_fixture(std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.trace.safetensors");
  Trace encoded = forward(f.model.config, f.model.weights, f.src, f.tgt, f.interventions);
  encoded.decoder.clear();  // an encoder pass alone
  try {
    logit_lens(f.model.config, f.model.weights, encoded);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("no decoder layers"), std::string::npos) << e.what();
  }
  const Trace whole = forward(f.model.config, f.model.weights, f.src, f.tgt, f.interventions);
  EXPECT_THROW(logit_lens_layer(f.model.config, f.model.weights, whole, 2), Error);
  EXPECT_THROW(logit_lens_layer(f.model.config, f.model.weights, whole, -1), Error);
  Trace batch = whole;
  batch.sequences = 2;
  EXPECT_THROW(logit_lens(f.model.config, f.model.weights, batch), Error);
}

// stepformer-cli trace --logit-lens: logit_lens.dec.L (T, V) per decoder layer beside the trace (for BERT
// logit_lens.enc.L (S, V)), equal to the PyTorch reference; the last equal to the file's logits.
std::string read_log(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int run_cli(const std::string& args, const fs::path& log) {
  const std::string cmd = std::string(STEPFORMER_CLI_PATH) + " trace " + args + " --device cpu > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CliTraceLogitLens, WritesEveryLayersLensForATranslatorAndABert) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer_logit_lens_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"pt_pre", "bert_plain"}) {
    SCOPED_TRACE(name);
    const LensCase c = load_case(std::string(STEPFORMER_FIXTURE_DIR) + "/logit_lens/" + name + ".lens.safetensors");
    const std::string model = std::string(STEPFORMER_FIXTURE_DIR) + "/" +
                              fs::path(c.lens.metadata().at("trace")).parent_path().string() + "/" +
                              SafetensorsFile::open(std::string(STEPFORMER_FIXTURE_DIR) + "/" + c.lens.metadata().at("trace"))
                                  .metadata().at("model");
    auto ids = [](const std::vector<int>& v) {
      std::string s;
      for (int id : v) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
      }
      return s;
    };
    const fs::path out = dir / (std::string(name) + ".trace.safetensors");
    const bool bert = c.fixture.model.config.stacks == ModelStacks::EncoderOnly;
    const std::string args = "'" + model + "' --ids --src '" + ids(c.fixture.src) + "'" +
                             (bert ? std::string() : " --tgt '" + ids(c.fixture.tgt) + "'") + " --logit-lens --out '" +
                             out.string() + "'";
    ASSERT_EQ(run_cli(args, dir / "log.txt"), 0) << read_log(dir / "log.txt");
    const SafetensorsFile file = SafetensorsFile::open(out.string());
    const std::string stack = bert ? "enc" : "dec";
    const std::vector<float> logits = file.find("logits")->to_floats();
    for (int l = 0; l < 2; ++l) {
      const std::string lens_name = "logit_lens." + stack + "." + std::to_string(l);
      const TensorView* got = file.find(lens_name);
      ASSERT_NE(got, nullptr) << lens_name;
      const TensorView* want = c.lens.find(lens_name);
      ASSERT_EQ(got->shape, want->shape);
      const std::vector<float> g = got->to_floats(), w = want->to_floats();
      for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], kTolerance) << lens_name << " " << i;
      if (l == 1) {
        EXPECT_EQ(g, logits) << "the last layer's lens is the logits";
      }
    }
    EXPECT_EQ(file.find("logit_lens." + stack + ".2"), nullptr);
    EXPECT_EQ(file.find(std::string("logit_lens.") + (bert ? "dec" : "enc") + ".0"), nullptr);
  }
  // Without the flag, no lens.
  const fs::path plain = dir / "plain.trace.safetensors";
  ASSERT_EQ(run_cli("'" + std::string(STEPFORMER_FIXTURE_DIR) + "/forward/pt_pre.model.safetensors' --ids --src '2 5 6 3' "
                    "--tgt '2 4' --out '" + plain.string() + "'", dir / "log.txt"),
            0);
  EXPECT_EQ(SafetensorsFile::open(plain.string()).find("logit_lens.dec.0"), nullptr);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf
