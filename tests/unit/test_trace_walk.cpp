// The one walk of a trace (for_each_trace_tensor, transformer/trace.h): every tensor of a pass of each shape, under
// the names docs/trace.md lists (its "Every name" block is compared with the walk, so the page cannot drift from
// the code), each with its stage and a shape equal to the tensor's; BERT's parts (token types, embedding norm,
// masked-LM head) in their stages.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "forward_fixture.h"
#include "train/init.h"
#include "transformer/forward.h"

namespace sf {
namespace {

using testing::shapes_file;

// A name with its layer index as `l`: "enc.1.self_attn.q" -> "enc.l.self_attn.q".
std::string generic(const std::string& name) { return std::regex_replace(name, std::regex("\\.[0-9]+\\."), ".l."); }

// Traces of every shape: an encoder-decoder with both final norms, a decoder-only and an encoder-only model.
// A Hugging Face BERT's pass (tests/fixtures/bert): the token types, the embedding norm and the masked-LM head.
Trace bert_trace() {
  const Model bert = open_model(std::string(STEPFORMER_FIXTURE_DIR) + "/bert/tiny-bert");
  return forward(bert.config, bert.weights, {2, 5, 4, 3}, {});
}

std::vector<Trace> traces_of_every_shape() {
  Config c;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 16;
  c.n_encoder_layers = c.n_decoder_layers = 2;
  c.src_vocab_size = c.tgt_vocab_size = 12;
  c.encoder_final_norm = c.decoder_final_norm = true;
  const ModelWeights w = initialize_weights(c, 7);
  std::vector<Trace> out = {forward(c, w, {2, 4, 5, 3}, {2, 6, 7})};
  const Model gpt = load_model(shapes_file("gpt_pre.model.safetensors"));
  out.push_back(forward(gpt.config, gpt.weights, {}, {2, 4, 6}));
  const Model bert = load_model(shapes_file("bert_pre.model.safetensors"));
  out.push_back(forward(bert.config, bert.weights, {2, 4, 6, 3}, {}));
  out.push_back(bert_trace());
  return out;
}

TEST(TraceWalk, EveryTensorHasItsStageAndShape) {
  for (const Trace& t : traces_of_every_shape()) {
    int previous = -1, count = 0;
    std::set<std::string> names;
    for_each_trace_tensor(t, [&](const TraceTensorRef& r) {
      EXPECT_GE(static_cast<int>(r.stage), previous) << r.name << ": the walk follows the pass";
      previous = static_cast<int>(r.stage);
      EXPECT_EQ(r.shape(), r.tensor().shape) << r.name;
      const bool in_layer = r.stage == TraceStage::EncoderLayer || r.stage == TraceStage::DecoderLayer;
      EXPECT_EQ(in_layer, r.layer >= 0) << r.name;
      if (in_layer) {
        std::string index = ".";
        index += std::to_string(r.layer);
        index += '.';
        EXPECT_NE(r.name.find(index), std::string::npos) << r.name;
      }
      EXPECT_TRUE(names.insert(r.name).second) << "twice: " << r.name;
      ++count;
    });
    // trace_tensors() is the walk, copied.
    const std::vector<NamedTensor> named = trace_tensors(t);
    ASSERT_EQ(static_cast<int>(named.size()), count);
    for (const NamedTensor& n : named) EXPECT_TRUE(names.count(n.name)) << n.name;
  }
}

TEST(TraceWalk, BertsPartsAreWalkedInTheirStages) {
  std::map<std::string, TraceStage> stages;
  for_each_trace_tensor(bert_trace(), [&](const TraceTensorRef& r) { stages[r.name] = r.stage; });
  for (const char* name : {"src.type_embed", "src.embed_sum", "src.embed_norm_mean", "src.embed_norm_std"}) {
    ASSERT_TRUE(stages.count(name)) << name;
    EXPECT_EQ(stages[name], TraceStage::SourceEmbedding) << name;
  }
  for (const char* name : {"head.dense", "head.act", "head.norm", "head.norm_mean", "head.norm_std"}) {
    ASSERT_TRUE(stages.count(name)) << name;
    EXPECT_EQ(stages[name], TraceStage::Output) << name;
  }
}

TEST(TraceWalk, DocsListEveryNameTheWalkGives) {
  std::set<std::string> walked;
  for (const Trace& t : traces_of_every_shape())
    for_each_trace_tensor(t, [&](const TraceTensorRef& r) { walked.insert(generic(r.name)); });
  std::ifstream in(std::string(STEPFORMER_SOURCE_DIR) + "/docs/trace.md");
  ASSERT_TRUE(in) << "docs/trace.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t section = doc.find("## Every name");
  ASSERT_NE(section, std::string::npos) << "docs/trace.md has no '## Every name' section";
  const size_t begin = doc.find("```\n", section), end = doc.find("```", begin + 4);
  ASSERT_TRUE(begin != std::string::npos && end != std::string::npos);
  std::set<std::string> listed;
  std::istringstream lines(doc.substr(begin + 4, end - begin - 4));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) listed.insert(line.substr(0, line.find(' ')));
  std::string block;
  for (const std::string& n : walked) block += n + "\n";
  EXPECT_EQ(listed, walked) << "the block docs/trace.md's '## Every name' should hold (one name a line):\n" << block;
}

}  // namespace
}  // namespace sf
