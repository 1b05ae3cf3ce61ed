// GPT-2 from a Hugging Face folder (model/hf_gpt2.h, family "gpt2") against a PyTorch reference written from
// modeling_gpt2.py (tests/reference/make_gpt2_fixtures.py: random tiny GPT-2 folders in the hub's layout, the
// byte-level BPE of tests/fixtures/gpt2_bpe): every traced tensor within 1e-5 with heads off, the causal mask off,
// positions off and a painted mask; greedy, beam search (transformers' scoring) and seeded sampling give the
// reference's tokens, with and without the KV cache; a folder saved without the "transformer." prefix, with old
// mask buffers and without lm_head opens the same way; our model file keeps all of it; bad folders say what is wrong.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decode/decoder.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/hf_gpt2.h"
#include "model/hf_marian.h"
#include "model/name_tables.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
constexpr float kTolerance = 1e-5f;

std::string gpt2_fixture(const std::string& name) { return std::string(STEPFORMER_FIXTURE_DIR) + "/gpt2/" + name; }

class Gpt2Pytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(Gpt2Pytorch, EveryTracedTensorMatches) {
  const testing::ForwardFixture f = testing::load_forward_fixture(GetParam());
  EXPECT_EQ(f.model.family, "gpt2");
  const Trace trace = forward(f.model.config, f.model.weights, {}, f.tgt, f.interventions);
  const std::map<std::string, Tensor> ours = testing::tensors_by_name(trace);
  int compared = 0;
  ASSERT_NO_FATAL_FAILURE(testing::expect_tensors_match(f.expected, ours, kTolerance, "torch", compared));
  for (const auto& [name, tensor] : ours) EXPECT_TRUE(f.expected.count(name)) << "ours only: " << name;
  EXPECT_GE(compared, 50);  // 2 layers of 22 tensors, the embeddings, the final norm and the output
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Gpt2Pytorch, ::testing::ValuesIn(testing::fixture_paths("gpt2")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = fs::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

TEST(Gpt2, TheFixturesCoverEveryIntervention) {
  std::set<std::string> cases;
  for (const std::string& path : testing::fixture_paths("gpt2")) cases.insert(testing::load_forward_fixture(path).case_name);
  for (const char* c : {"gpt2_plain", "gpt2_head_off", "gpt2_no_causal", "gpt2_no_positions", "gpt2_painted",
                        "gpt2_bare_plain"})
    EXPECT_TRUE(cases.count(c)) << c;
}

TEST(Gpt2, TheFolderIsReadAsGpt2Computes) {
  const Model m = open_model(gpt2_fixture("tiny-gpt2"));
  const Config& c = m.config;
  EXPECT_EQ(c.stacks, ModelStacks::DecoderOnly);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(c.norm_placement, NormPlacement::Pre);
  EXPECT_TRUE(c.decoder_final_norm);
  EXPECT_EQ(c.activation, Activation::GELUTanh);
  EXPECT_EQ(c.embedding_scale, EmbeddingScale::One);
  EXPECT_TRUE(c.tie_output_embedding);
  EXPECT_FALSE(c.output_bias);
  EXPECT_FALSE(c.starts_with_bos);
  EXPECT_EQ(c.d_ff, 4 * c.d_model);  // n_inner null
  EXPECT_EQ(m.tgt_vocab.token(c.eos_id), "<|endoftext|>");
  EXPECT_EQ(c.bos_id, c.eos_id);
  EXPECT_EQ(m.tokenizer.kind, "byte_bpe");
  // The output is the token embedding itself.
  EXPECT_EQ(m.weights.generator.weight, m.weights.tgt_embedding);
  // A GPT-2 reads the prompt as it is; an empty one starts from <|endoftext|>.
  EXPECT_EQ(decoder_only_input(c, {5, 6}), (std::vector<int>{5, 6}));
  EXPECT_EQ(decoder_only_input(c, {}), (std::vector<int>{c.bos_id}));
  // The prompt's tokens as the model reads them: pieces with their bytes and spans, nothing added.
  const std::string text = "A man in an orange shirt";
  const std::vector<Token> tokens = encode_text(m, text, Side::Target, false);
  const testing::ForwardFixture f = testing::load_forward_fixture(gpt2_fixture("gpt2_plain.trace.safetensors"));
  EXPECT_EQ(token_ids(tokens), f.tgt);
  std::string joined;
  for (const Token& t : tokens) {
    EXPECT_EQ(text.substr(t.begin, t.end - t.begin), t.surface);
    joined += t.surface;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(tokens[1].text.substr(0, 2), "\xC4\xA0");  // " man" is stored as "Ġman"
  EXPECT_EQ(tokens[1].surface[0], ' ');
  std::vector<std::string> pieces;
  for (const Token& t : tokens) pieces.push_back(t.text);
  EXPECT_EQ(decode_text(m, pieces, Side::Target), text);
}

// The reference's tokens: greedy, beam search as transformers' generate() scores it, and sampling with a seed.
TEST(Gpt2, GenerationGivesTheReferenceTokensWithAndWithoutTheCache) {
  for (const char* name : {"gpt2_plain", "gpt2_bare_plain"}) {
    SCOPED_TRACE(name);
    const std::string path = gpt2_fixture(std::string(name) + ".trace.safetensors");
    const testing::ForwardFixture f = testing::load_forward_fixture(path);
    const SafetensorsFile file = SafetensorsFile::open(path);
    const auto& meta = file.metadata();
    const Model& m = f.model;
    for (const bool cache : {true, false}) {
      SCOPED_TRACE(cache ? "KV cache" : "full passes");
      DecodeOptions base;
      apply_generation_defaults(m.generation, base);
      EXPECT_EQ(base.beam_scoring, BeamScoring::HuggingFace);
      base.max_length = std::stoi(meta.at("max_new"));
      base.use_kv_cache = cache;

      Decoder greedy(m.config, m.weights, f.tgt, {}, base);
      greedy.run();
      EXPECT_EQ(nlohmann::json(greedy.generated()), nlohmann::json::parse(meta.at("greedy")));
      EXPECT_EQ(greedy.start_tokens(), f.tgt);  // nothing before the prompt

      DecodeOptions beam = base;
      beam.strategy = DecodeStrategy::Beam;
      beam.beam_width = std::stoi(meta.at("beam_width"));
      beam.length_penalty = std::stof(meta.at("length_penalty"));
      Decoder b(m.config, m.weights, f.tgt, {}, beam);
      b.run();
      EXPECT_EQ(nlohmann::json(b.generated()), nlohmann::json::parse(meta.at("beam")));

      const nlohmann::json s = nlohmann::json::parse(meta.at("sampling"));
      DecodeOptions sample = base;
      sample.strategy = DecodeStrategy::Sample;
      sample.sampling.temperature = s.at("temperature").get<float>();
      sample.sampling.top_k = s.at("top_k").get<int>();
      sample.sampling.top_p = s.at("top_p").get<float>();
      sample.seed = s.at("seed").get<uint64_t>();
      Decoder d(m.config, m.weights, f.tgt, {}, sample);
      d.run();
      EXPECT_EQ(nlohmann::json(d.generated()), nlohmann::json::parse(meta.at("sample")));
    }
  }
}

TEST(Gpt2, KvCacheStepsEqualAFullPass) {
  const testing::ForwardFixture f = testing::load_forward_fixture(gpt2_fixture("gpt2_plain.trace.safetensors"));
  const Model& m = f.model;
  const Trace full = forward(m.config, m.weights, {}, f.tgt);
  const Trace none;
  KvCache cache = start_kv_cache(m.config, m.weights, none);
  for (size_t i = 0; i < f.tgt.size(); ++i) {
    const RowVec step = decode_step(m.config, m.weights, none, f.tgt[i], cache);
    EXPECT_LT((step - full.logits.row(static_cast<Eigen::Index>(i))).cwiseAbs().maxCoeff(), 1e-5f) << "step " << i;
  }
}

TEST(Gpt2, OurModelFileKeepsEverything) {
  for (const DType storage : {DType::F32, DType::F16}) {
    const Model m = open_model(gpt2_fixture("tiny-gpt2"));
    const std::string path = ::testing::TempDir() + "/gpt2_roundtrip.safetensors";
    save_model(m, path, storage);
    // The file holds GPT-2's own names, Conv1D's layout [in, out] included, and the merges.
    const SafetensorsFile file = SafetensorsFile::open(path);
    ASSERT_NE(file.find("transformer.h.0.attn.c_attn.weight"), nullptr);
    EXPECT_EQ(file.find("transformer.h.0.attn.c_attn.weight")->shape,
              (std::vector<int64_t>{m.config.d_model, 3 * m.config.d_model}));
    EXPECT_EQ(file.find("transformer.h.1.mlp.c_fc.weight")->shape,
              (std::vector<int64_t>{m.config.d_model, m.config.d_ff}));
    EXPECT_NE(file.find(kBpeMergesTensor), nullptr);
    EXPECT_EQ(file.find("lm_head.weight"), nullptr);
    const Model back = load_model(path);
    EXPECT_EQ(back.family, "gpt2");
    EXPECT_EQ(config_to_json(back.config), config_to_json(m.config));
    EXPECT_EQ(back.tgt_vocab.tokens(), m.tgt_vocab.tokens());
    ASSERT_TRUE(back.byte_bpe);
    EXPECT_EQ(back.byte_bpe->merges_text(), m.byte_bpe->merges_text());
    const std::string text = "Two dogs play in the snow, don't they? 😀";
    EXPECT_EQ(token_ids(encode_text(back, text, Side::Target, false)), token_ids(encode_text(m, text, Side::Target, false)));
    const float tolerance = storage == DType::F32 ? 0.0f : 2e-3f;
    EXPECT_LE((back.weights.decoder_layers[1].self_attn.k.weight - m.weights.decoder_layers[1].self_attn.k.weight)
                  .cwiseAbs().maxCoeff(), tolerance);
    EXPECT_LE((back.weights.decoder_layers[0].ffn.fc2.weight - m.weights.decoder_layers[0].ffn.fc2.weight)
                  .cwiseAbs().maxCoeff(), tolerance);
    const std::vector<int> ids = {5, 60, 700, 1256, 3};
    const Trace a = forward(m.config, m.weights, {}, ids), b = forward(back.config, back.weights, {}, ids);
    EXPECT_LE((a.logits - b.logits).cwiseAbs().maxCoeff(), storage == DType::F32 ? 0.0f : 0.05f);
    fs::remove(path);
  }
}

// A copy of tiny-gpt2 in a temporary folder, for breaking one file.
struct BrokenFolder {
  std::string path;
  BrokenFolder() {
    path = ::testing::TempDir() + "/broken-gpt2-" + std::to_string(::getpid());
    fs::remove_all(path);
    fs::copy(gpt2_fixture("tiny-gpt2"), path);
  }
  ~BrokenFolder() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    fs::remove(path + "/" + name);
    std::ofstream(path + "/" + name, std::ios::binary) << text;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // model.safetensors written again with tensor `name`'s element `index` set by `change`.
  void edit_weight(const std::string& name, size_t index, const std::function<void(float&)>& change) const {
    const std::string path = this->path + "/model.safetensors";
    std::vector<std::vector<float>> values;
    std::vector<TensorToWrite> tensors;
    {
      const SafetensorsFile file = SafetensorsFile::open(path);
      for (const TensorView& t : file.tensors()) values.push_back(t.to_floats());
      size_t i = 0;
      for (const TensorView& t : file.tensors()) {
        if (t.name == name) change(values[i][index]);
        tensors.push_back({t.name, t.shape, values[i]});
        ++i;
      }
    }
    fs::remove(path);
    write_safetensors(path, tensors, {}, DType::F32);
  }
  void edit_config(const std::function<void(nlohmann::json&)>& f) const {
    nlohmann::json j = nlohmann::json::parse(read("config.json"));
    f(j);
    write("config.json", j.dump());
  }
};

std::string open_error(const std::string& folder) {
  try {
    open_model(folder);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gpt2, BadFoldersSayWhatIsWrong) {
  {
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["model_type"] = "roberta", j["architectures"] = {"RobertaForMaskedLM"}; });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("'roberta' model (RobertaForMaskedLM)"), std::string::npos) << e;
    EXPECT_NE(e.find("GPT-2"), std::string::npos) << e;
  }
  {  // merges that name pieces the vocabulary lacks
    BrokenFolder b;
    b.write("merges.txt", "#version: 0.2\nĠ a\nzz qq\n");
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("merges.txt line 3"), std::string::npos) << e;
    EXPECT_NE(e.find("not this vocabulary's"), std::string::npos) << e;
  }
  {  // a vocabulary larger than the embedding
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["vocab_size"] = 1000; });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("1257 pieces but the model's embedding has 1000 rows"), std::string::npos) << e;
  }
  {  // an embedding larger than the vocabulary: the file's wte has 1257 rows, the config says 1300
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["vocab_size"] = 1300; });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("transformer.wte.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("(1300, 16)"), std::string::npos) << e;
  }
  for (const char* key : {"add_cross_attention", "scale_attn_by_inverse_layer_idx"}) {
    BrokenFolder b;
    b.edit_config([&](nlohmann::json& j) { j[key] = true; });
    EXPECT_NE(open_error(b.path).find(key), std::string::npos) << key;
  }
  {
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["activation_function"] = "quick_gelu"; });
    EXPECT_NE(open_error(b.path).find("quick_gelu"), std::string::npos);
  }
  {  // no merges.txt
    BrokenFolder b;
    fs::remove(b.path + "/merges.txt");
    EXPECT_NE(open_error(b.path).find("has no merges.txt"), std::string::npos);
  }
  {  // a FIFO where vocab.json belongs: refused, never waited on
    BrokenFolder b;
    fs::remove(b.path + "/vocab.json");
    ASSERT_EQ(::mkfifo((b.path + "/vocab.json").c_str(), 0600), 0);
    EXPECT_NE(open_error(b.path).find("vocab.json"), std::string::npos);
  }
  {  // an untied lm_head
    BrokenFolder b;
    b.edit_weight("lm_head.weight", 7, [](float& v) { v += 1.0f; });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("lm_head.weight differs from wte (element 7)"), std::string::npos) << e;
  }
  {  // a NaN weight
    BrokenFolder b;
    b.edit_weight("transformer.h.1.mlp.c_fc.weight", 3, [](float& v) { v = std::nanf(""); });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("transformer.h.1.mlp.c_fc.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("NaN"), std::string::npos) << e;
  }
}

// A file of 5 GB (sparse: no disk taken) whose header names the model's tensors and one huge one the family does
// not know: the model opens without reading it (warned), in the memory of its weights.
TEST(Gpt2, AFileOfFiveGigabytesOpensWithoutBeingRead) {
  BrokenFolder b;
  const SafetensorsFile small = SafetensorsFile::open(b.path + "/model.safetensors");
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (const TensorView& t : small.tensors()) values.push_back(t.to_floats());
  size_t i = 0;
  for (const TensorView& t : small.tensors()) tensors.push_back({t.name, t.shape, values[i++]});
  const std::string header_only = b.path + "/header.safetensors";
  // Write the real tensors, then grow the file with a hole and name the hole in the header: rebuild by hand.
  std::vector<std::byte> bytes = serialize_safetensors(tensors, {}, DType::F32);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(bytes.data()) + 8, header_length));
  const uint64_t data_bytes = bytes.size() - 8 - header_length;
  const uint64_t huge = 5ull << 30;
  header["padding.huge"] = {{"dtype", "F32"}, {"shape", {huge / 4}}, {"data_offsets", {data_bytes, data_bytes + huge}}};
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string path = b.path + "/model.safetensors";
  fs::remove(path);
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << text;
    out.write(reinterpret_cast<const char*>(bytes.data()) + 8 + header_length, static_cast<std::streamsize>(data_bytes));
  }
  fs::resize_file(path, 8 + text.size() + data_bytes + huge);
  ASSERT_GE(fs::file_size(path), huge);
  std::vector<std::string> warnings;
  const Model m = open_model(b.path, &warnings);
  EXPECT_EQ(m.config.n_decoder_layers, 2);
  bool named = false;
  for (const std::string& w : warnings) named = named || w.find("padding.huge") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(Gpt2, APromptLongerThanThePositionsIsRefusedWithTheNumbers) {
  const Model m = open_model(gpt2_fixture("tiny-gpt2"));
  const std::vector<int> long_prompt(static_cast<size_t>(m.config.max_positions + 5), 100);
  try {
    forward(m.config, m.weights, {}, long_prompt);
    FAIL() << "a prompt past n_positions was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(m.config.max_positions)), std::string::npos) << e.what();
  }
  try {
    Decoder d(m.config, m.weights, std::vector<int>(static_cast<size_t>(m.config.max_positions), 100));
    FAIL() << "a prompt filling every position was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaves no position"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sf
