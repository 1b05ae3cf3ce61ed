// BERT from a Hugging Face folder (model/hf_bert.h, family "bert") against a PyTorch reference written from
// modeling_bert.py (tests/reference/make_bert_fixtures.py: random tiny BERT folders in the hub's layout): every
// traced tensor within 1e-5, the token types, the embedding norm and the masked-LM head's transform included, with a
// head off, positions off, a painted mask, padding and the padding mask off; a folder saved without the "bert."
// prefix (LayerNorm's old gamma/beta names, no decoder weight) and one with BertForPreTraining's pooler and
// next-sentence head open the same way; our model file keeps all of it (import-hf); stepformer-cli trace reads the
// folder; bad folders say what is wrong; training and the GPU refuse BERT's parts by name.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backend/device.h"
#include "decode/fill_mask.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/hf_bert.h"
#include "model/hf_marian.h"
#include "model/name_tables.h"
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
constexpr float kTolerance = 1e-5f;

std::string bert_fixture(const std::string& name) { return std::string(STEPFORMER_FIXTURE_DIR) + "/bert/" + name; }

class BertPytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(BertPytorch, EveryTracedTensorMatches) {
  const testing::ForwardFixture f = testing::load_forward_fixture(GetParam());
  EXPECT_EQ(f.model.family, "bert");
  const Trace trace = forward(f.model.config, f.model.weights, f.src, {}, f.interventions);
  const std::map<std::string, Tensor> ours = testing::tensors_by_name(trace);
  int compared = 0;
  ASSERT_NO_FATAL_FAILURE(testing::expect_tensors_match(f.expected, ours, kTolerance, "torch", compared));
  for (const auto& [name, tensor] : ours) EXPECT_TRUE(f.expected.count(name)) << "ours only: " << name;
  for (const char* bert_part : {"src.type_embed", "src.embed_sum", "src.embed_norm_mean", "src.embed_norm_std",
                                "head.dense", "head.act", "head.norm", "head.norm_mean", "head.norm_std"})
    EXPECT_TRUE(ours.count(bert_part)) << bert_part;
  EXPECT_GE(compared, 57);  // 2 layers of 22 tensors, 7 of the embeddings, enc.out, 5 of the head, logits, probs
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BertPytorch, ::testing::ValuesIn(testing::fixture_paths("bert")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = fs::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

TEST(Bert, TheFixturesCoverEveryIntervention) {
  std::set<std::string> cases;
  for (const std::string& path : testing::fixture_paths("bert")) cases.insert(testing::load_forward_fixture(path).case_name);
  for (const char* c : {"bert_plain", "bert_head_off", "bert_no_positions", "bert_painted", "bert_padded",
                        "bert_padding_off", "bert_bare_plain", "bert_pretraining_plain"})
    EXPECT_TRUE(cases.count(c)) << c;
}

// An intervention's recomputation (only the layers it reaches) gives the pass forward() gives with it.
TEST(Bert, RecomputingAfterAnInterventionGivesTheFullPass) {
  const testing::ForwardFixture plain = testing::load_forward_fixture(bert_fixture("bert_plain.trace.safetensors"));
  const Model& m = plain.model;
  for (const char* name : {"bert_head_off", "bert_no_positions", "bert_painted", "bert_all_off"}) {
    SCOPED_TRACE(name);
    const testing::ForwardFixture f = testing::load_forward_fixture(bert_fixture(std::string(name) + ".trace.safetensors"));
    ASSERT_EQ(f.src, plain.src);
    Trace t = forward(m.config, m.weights, plain.src, {});
    recompute(m.config, m.weights, f.interventions, t);
    const Tensor& want = f.expected.at("logits");
    ASSERT_EQ(t.logits.size(), static_cast<Eigen::Index>(want.data.size()));
    for (Eigen::Index i = 0; i < t.logits.size(); ++i)
      ASSERT_NEAR(t.logits.data()[i], want.data[static_cast<size_t>(i)], kTolerance) << i;
    EXPECT_NEAR(t.head.norm.out(1, 2), f.expected.at("head.norm").data[1 * m.config.d_model + 2], kTolerance);
  }
}

TEST(Bert, TheFolderIsReadAsBertComputes) {
  const Model m = open_model(bert_fixture("tiny-bert"));
  const Config& c = m.config;
  EXPECT_EQ(m.family, "bert");
  EXPECT_EQ(c.stacks, ModelStacks::EncoderOnly);
  EXPECT_EQ(c.d_model, 32);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_encoder_layers, 2);
  EXPECT_EQ(c.d_ff, 64);
  EXPECT_EQ(c.max_positions, 24);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_TRUE(c.embedding_norm);
  EXPECT_EQ(c.output_head, OutputHead::MaskedLM);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(c.norm_placement, NormPlacement::Post);
  EXPECT_EQ(c.activation, Activation::GELU);
  EXPECT_EQ(c.embedding_scale, EmbeddingScale::One);
  EXPECT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_TRUE(c.tie_output_embedding);
  EXPECT_TRUE(c.output_bias);
  EXPECT_EQ(m.src_vocab.token(c.pad_id), "[PAD]");
  EXPECT_EQ(m.src_vocab.token(c.unk_id), "[UNK]");
  EXPECT_EQ(m.src_vocab.token(c.bos_id), "[CLS]");
  EXPECT_EQ(m.src_vocab.token(c.eos_id), "[SEP]");
  EXPECT_EQ(m.src_vocab.token(c.mask_id), "[MASK]");
  EXPECT_EQ(m.src_vocab.token(m.src_vocab.size() - 1), "##p");  // id = vocab.txt's line number
  EXPECT_EQ(m.tokenizer.kind, "wordpiece");
  EXPECT_TRUE(m.tokenizer.wordpiece_lower_case);
  EXPECT_EQ(m.tokenizer.wordpiece_strip_accents, -1);
  EXPECT_TRUE(m.tokenizer.wordpiece_chinese_chars);
  EXPECT_EQ(m.weights.generator.weight, m.weights.src_embedding);  // the decoder is the word embedding
  EXPECT_EQ(m.provenance.value("hub_name", ""), "stepformer-tests/tiny-bert");
  // The text is read by WordPiece, not the word-level rules: [CLS] a man [SEP] (Bert.TheFoldersTextIsReadByWordPiece
  // has the rest).
  EXPECT_EQ(token_ids(encode_text(m, "a man", Side::Source)),
            (std::vector<int>{m.config.bos_id, m.src_vocab.id("a"), m.src_vocab.id("man"), m.config.eos_id}));
}

TEST(Bert, TheTokenizerConfigIsRead) {
  const BertTokenizerConfig bare = read_bert_tokenizer_config(bert_fixture("tiny-bert-bare"));
  EXPECT_FALSE(bare.do_lower_case);
  EXPECT_EQ(bare.strip_accents, 0);
  EXPECT_FALSE(bare.tokenize_chinese_chars);
  const Model m = open_model(bert_fixture("tiny-bert-bare"));
  EXPECT_FALSE(m.tokenizer.wordpiece_lower_case);
  EXPECT_EQ(m.tokenizer.wordpiece_strip_accents, 0);
  EXPECT_FALSE(m.tokenizer.wordpiece_chinese_chars);
  EXPECT_EQ(m.config.activation, Activation::GELUTanh);  // hidden_act gelu_new
  EXPECT_EQ(m.config.type_vocab_size, 3);
  // No tokenizer_config.json: BertTokenizer's defaults.
  const BertTokenizerConfig none = read_bert_tokenizer_config(bert_fixture("tiny-bert-pretraining"));
  EXPECT_TRUE(none.do_lower_case);
  EXPECT_EQ(none.strip_accents, -1);
  EXPECT_TRUE(none.tokenize_chinese_chars);
  EXPECT_EQ(none.mask_token, "[MASK]");
}

// BertForPreTraining's file: the same weights as tiny-bert, its pooler and next-sentence head known and not read.
TEST(Bert, APretrainingFileOpensWithoutWarnings) {
  std::vector<std::string> warnings;
  const Model pre = open_model(bert_fixture("tiny-bert-pretraining"), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const Model tiny = open_model(bert_fixture("tiny-bert"), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(pre.weights.src_token_types, tiny.weights.src_token_types);
  EXPECT_EQ(pre.weights.head_transform.weight, tiny.weights.head_transform.weight);
  EXPECT_EQ(pre.weights.generator.bias, tiny.weights.generator.bias);
  std::vector<std::string> bare_warnings;
  open_model(bert_fixture("tiny-bert-bare"), &bare_warnings);
  EXPECT_TRUE(bare_warnings.empty()) << bare_warnings.front();
}

TEST(Bert, OurModelFileKeepsEverything) {
  for (const DType storage : {DType::F32, DType::F16}) {
    const Model m = open_model(bert_fixture("tiny-bert"));
    const std::string path = ::testing::TempDir() + "/bert_roundtrip.safetensors";
    save_model(m, path, storage);
    const SafetensorsFile file = SafetensorsFile::open(path);
    ASSERT_NE(file.find("bert.embeddings.token_type_embeddings.weight"), nullptr);
    ASSERT_NE(file.find("cls.predictions.transform.LayerNorm.weight"), nullptr);
    ASSERT_NE(file.find("cls.predictions.bias"), nullptr);
    EXPECT_EQ(file.find("cls.predictions.decoder.weight"), nullptr);  // tied: not stored
    const Model back = load_model(path);
    EXPECT_EQ(back.family, "bert");
    EXPECT_EQ(config_to_json(back.config), config_to_json(m.config));
    EXPECT_EQ(back.src_vocab.tokens(), m.src_vocab.tokens());
    EXPECT_EQ(tokenizer_settings_to_json(back.tokenizer), tokenizer_settings_to_json(m.tokenizer));
    const std::vector<int> ids = {2, 5, 6, 4, 3};
    const Trace a = forward(m.config, m.weights, ids, {}), b = forward(back.config, back.weights, ids, {});
    EXPECT_LE((a.logits - b.logits).cwiseAbs().maxCoeff(), storage == DType::F32 ? 0.0f : 0.05f);
    fs::remove(path);
  }
}

// A copy of a fixture folder in a temporary folder, for breaking one file.
struct BrokenFolder {
  std::string path;
  explicit BrokenFolder(const std::string& fixture = "tiny-bert") {
    path = ::testing::TempDir() + "/broken-bert-" + std::to_string(::getpid());
    fs::remove_all(path);
    fs::copy(bert_fixture(fixture), path);
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
  // model.safetensors written again: each tensor through `change(name, values)`; a tensor is dropped where it
  // returns false.
  void edit_weights(const std::function<bool(const std::string&, std::vector<float>&)>& change) const {
    const std::string file_path = path + "/model.safetensors";
    std::vector<std::vector<float>> values;
    std::vector<TensorToWrite> tensors;
    {
      const SafetensorsFile file = SafetensorsFile::open(file_path);
      values.reserve(file.tensors().size());
      for (const TensorView& t : file.tensors()) {
        values.push_back(t.to_floats());
        if (change(t.name, values.back())) tensors.push_back({t.name, t.shape, values.back()});
      }
    }
    fs::remove(file_path);
    write_safetensors(file_path, tensors, {}, DType::F32);
  }
  void edit_config(const std::function<void(nlohmann::json&)>& f) const {
    nlohmann::json j = nlohmann::json::parse(read("config.json"));
    f(j);
    write("config.json", j.dump());
  }
};

std::string open_error(const std::string& folder, ErrorKind* kind = nullptr) {
  try {
    open_model(folder);
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

TEST(Bert, BadFoldersSayWhatIsWrong) {
  {  // a config that is not a BERT
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["model_type"] = "roberta", j["architectures"] = {"RobertaForMaskedLM"}; });
    ErrorKind kind{};
    const std::string e = open_error(b.path, &kind);
    EXPECT_NE(e.find("'roberta' model (RobertaForMaskedLM)"), std::string::npos) << e;
    EXPECT_NE(e.find("BERT (model_type \"bert\""), std::string::npos) << e;
    EXPECT_EQ(kind, ErrorKind::Format);
  }
  {  // no vocab.txt
    BrokenFolder b;
    fs::remove(b.path + "/vocab.txt");
    ErrorKind kind{};
    const std::string e = open_error(b.path, &kind);
    EXPECT_NE(e.find("has no vocab.txt"), std::string::npos) << e;
    EXPECT_EQ(kind, ErrorKind::Missing);
  }
  {  // a vocabulary longer than the embedding
    BrokenFolder b;
    b.write("vocab.txt", b.read("vocab.txt") + "extra\npieces\n");
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("holds 60 pieces but the model's embedding has 58 rows"), std::string::npos) << e;
  }
  {  // a shorter one: taken, the missing ids named
    BrokenFolder b;
    std::string text = b.read("vocab.txt");
    text.resize(text.rfind("##m\n"));  // the last two pieces gone
    b.write("vocab.txt", text);
    std::vector<std::string> warnings;
    const Model m = open_model(b.path, &warnings);
    EXPECT_EQ(m.src_vocab.token(57), "<unused 57>");
    ASSERT_FALSE(warnings.empty());
    EXPECT_NE(warnings.front().find("names 56 of the model's 58 ids"), std::string::npos) << warnings.front();
  }
  {  // a piece twice, an empty line
    BrokenFolder b;
    b.write("vocab.txt", b.read("vocab.txt").replace(b.read("vocab.txt").find("man\n"), 4, "a\n"));
    EXPECT_NE(open_error(b.path).find("the piece 'a' twice (lines 6 and 7)"), std::string::npos) << open_error(b.path);
    b.write("vocab.txt", "[PAD]\n\n[UNK]\n");
    EXPECT_NE(open_error(b.path).find("line 2 is empty"), std::string::npos) << open_error(b.path);
  }
  {  // no [MASK]
    BrokenFolder b;
    std::string text = b.read("vocab.txt");
    text.replace(text.find("[MASK]"), 6, "[MAZK]");
    b.write("vocab.txt", text);
    ErrorKind kind{};
    const std::string e = open_error(b.path, &kind);
    EXPECT_NE(e.find("has no [MASK] (BERT's mask token)"), std::string::npos) << e;
    EXPECT_EQ(kind, ErrorKind::Missing);
  }
  {  // an untied decoder
    BrokenFolder b;
    b.edit_weights([](const std::string& name, std::vector<float>& v) {
      if (name == "cls.predictions.decoder.weight") v[7] += 1.0f;
      return true;
    });
    ErrorKind kind{};
    const std::string e = open_error(b.path, &kind);
    EXPECT_NE(e.find("cls.predictions.decoder.weight differs from the word embedding (element 7)"), std::string::npos)
        << e;
    EXPECT_EQ(kind, ErrorKind::Unsupported);
  }
  {  // a BertModel: no masked-LM head
    BrokenFolder b;
    b.edit_weights([](const std::string& name, std::vector<float>&) { return !name.starts_with("cls."); });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("has no masked-LM head"), std::string::npos) << e;
  }
  {  // a missing tensor is named
    BrokenFolder b;
    b.edit_weights([](const std::string& name, std::vector<float>&) {
      return name != "bert.encoder.layer.1.intermediate.dense.bias";
    });
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("missing tensor 'bert.encoder.layer.1.intermediate.dense.bias'"), std::string::npos) << e;
  }
  {  // a truncated model.safetensors
    BrokenFolder b;
    const std::string bytes = b.read("model.safetensors");
    b.write("model.safetensors", bytes.substr(0, bytes.size() / 2));
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  }
  {  // a FIFO in place of config.json: refused, never waited on
    BrokenFolder b;
    fs::remove(b.path + "/config.json");
    ASSERT_EQ(::mkfifo((b.path + "/config.json").c_str(), 0600), 0);
    const std::string e = open_error(b.path);
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  }
  {  // the variants Stepformer does not compute, by name
    BrokenFolder b;
    b.edit_config([](nlohmann::json& j) { j["position_embedding_type"] = "relative_key"; });
    EXPECT_NE(open_error(b.path).find("position_embedding_type \"relative_key\""), std::string::npos);
    b.edit_config([](nlohmann::json& j) { j["position_embedding_type"] = "absolute", j["hidden_act"] = "quick_gelu"; });
    EXPECT_NE(open_error(b.path).find("hidden_act \"quick_gelu\""), std::string::npos);
    b.edit_config([](nlohmann::json& j) { j["hidden_act"] = "gelu", j["is_decoder"] = true; });
    EXPECT_NE(open_error(b.path).find("is_decoder"), std::string::npos);
    b.edit_config([](nlohmann::json& j) { j["is_decoder"] = false, j.erase("hidden_size"); });
    EXPECT_NE(open_error(b.path).find("has no \"hidden_size\""), std::string::npos);
  }
  {  // tokenizer_config.json of the wrong kind of value
    BrokenFolder b;
    b.write("tokenizer_config.json", R"({"strip_accents": "yes"})");
    EXPECT_NE(open_error(b.path).find("\"strip_accents\" is \"yes\""), std::string::npos) << open_error(b.path);
  }
}

// The GPU meets BERT's parts and refuses them by name (the CPU's backward has them: test_training_gradients).
TEST(Bert, TheGpuRefusesBertsPartsByName) {
  const Model m = open_model(bert_fixture("tiny-bert"));
  EXPECT_NE(model_not_for_gpu(m.config).find("token-type"), std::string::npos);
  Config no_types = m.config;
  no_types.type_vocab_size = 0;
  EXPECT_NE(model_not_for_gpu(no_types).find("embedding norm"), std::string::npos);
  no_types.embedding_norm = false;
  EXPECT_NE(model_not_for_gpu(no_types).find("masked-LM output head"), std::string::npos);
}

// stepformer-cli: trace reads the folder with --ids; import-hf writes a model file that computes the same.
struct CliRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

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

std::string ids_text(const std::vector<int>& ids) {
  std::string s;
  for (const int id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id);
  }
  return s;
}

TEST(Bert, CliTraceReadsTheFolder) {
  const testing::ForwardFixture f = testing::load_forward_fixture(bert_fixture("bert_plain.trace.safetensors"));
  const fs::path out = fs::temp_directory_path() / ("bert_trace_" + std::to_string(::getpid()) + ".safetensors");
  const CliRun run = cli({"trace", bert_fixture("tiny-bert"), "--src", ids_text(f.src), "--ids", "--out", out.string()});
  ASSERT_EQ(run.status, 0) << run.out;
  const SafetensorsFile file = SafetensorsFile::open(out.string());
  for (const char* name : {"logits", "head.norm", "src.type_embed", "src.embed_sum"}) {
    SCOPED_TRACE(name);
    const TensorView* got = file.find(name);
    ASSERT_NE(got, nullptr);
    const Tensor& want = f.expected.at(name);
    EXPECT_EQ(got->shape, want.shape);
    const std::vector<float> values = got->to_floats();
    for (size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(values[i], want.data[i], kTolerance) << i;
  }
  EXPECT_EQ(file.metadata().at("shape"), "encoder_only");
  fs::remove(out);
}

TEST(Bert, CliImportHfWritesAModelFileThatComputesTheSame) {
  const testing::ForwardFixture f = testing::load_forward_fixture(bert_fixture("bert_bare_plain.trace.safetensors"));
  const fs::path out = fs::temp_directory_path() / ("bert_import_" + std::to_string(::getpid()) + ".safetensors");
  const CliRun run = cli({"import-hf", bert_fixture("tiny-bert-bare"), "--out", out.string()});
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("family bert"), std::string::npos) << run.out;
  const Model m = load_model(out.string());
  EXPECT_EQ(m.family, "bert");
  EXPECT_EQ(m.tokenizer.kind, "wordpiece");
  EXPECT_FALSE(m.tokenizer.wordpiece_lower_case);
  EXPECT_EQ(m.provenance.value("converter", ""), "stepformer-cli import-hf");
  const Trace t = forward(m.config, m.weights, f.src, {});
  const Tensor& want = f.expected.at("logits");
  for (Eigen::Index i = 0; i < t.logits.size(); ++i)
    ASSERT_NEAR(t.logits.data()[i], want.data[static_cast<size_t>(i)], kTolerance);
  // Reopened, and saved again: the same bytes (nothing lost or added on the way).
  const Model folder = open_model(bert_fixture("tiny-bert-bare"));
  Model again = m;
  again.provenance = folder.provenance;
  Model direct = folder;
  EXPECT_EQ(serialize_model(again), serialize_model(direct));
  fs::remove(out);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// The folder's text goes through BERT's WordPiece with the folder's tokenizer_config.json (do_lower_case): [CLS]
// first, [SEP] last, "[MASK]" kept whole, "##" continuations; the same ids from our model file, and from
// `stepformer-cli tokenize`.
TEST(Bert, TheFoldersTextIsReadByWordPiece) {
  const Model m = open_model(bert_fixture("tiny-bert"));
  ASSERT_NE(m.wordpiece, nullptr);
  const std::string text = "Two Dogs playing in the [MASK] snow, players Greens.";
  const std::vector<Token> tokens = encode_text(m, text, Side::Source);
  std::vector<std::string> pieces;
  for (const Token& t : tokens) pieces.push_back(t.text);
  // (tests/reference/make_wordpiece_fixtures.py's reading of BertTokenizer gives these pieces with this vocab.txt)
  const std::vector<std::string> want = {"[CLS]", "two",  "dogs", "play", "##ing", "in",    "the", "[MASK]", "snow",
                                         ",",     "play", "##er", "##s",  "green", "##s",   ".",   "[SEP]"};
  EXPECT_EQ(pieces, want);
  ASSERT_EQ(tokens.size(), want.size());
  EXPECT_EQ(tokens.front().id, m.config.bos_id);
  EXPECT_EQ(tokens.back().id, m.config.eos_id);
  EXPECT_EQ(tokens[7].id, m.config.mask_id);
  EXPECT_EQ(tokens[2].surface, "Dogs");
  // The WordPiece of the folder's own files gives the same ids.
  const WordPiece wp = WordPiece::from_vocab_file(bert_fixture("tiny-bert") + "/vocab.txt", WordPieceOptions{});
  std::vector<int> wp_ids;
  for (const WordPieceToken& p : wp.encode(text)) wp_ids.push_back(p.id);
  EXPECT_EQ(token_ids(tokens), wp_ids);
  // Our model file keeps the tokenizer: the same ids after a save and a load.
  const std::string path = ::testing::TempDir() + "/bert_wordpiece.safetensors";
  save_model(m, path, DType::F32);
  const Model back = load_model(path);
  ASSERT_NE(back.wordpiece, nullptr);
  EXPECT_EQ(token_ids(encode_text(back, text, Side::Source)), wp_ids);
  EXPECT_EQ(decode_text(back, {"two", "dogs", "play", "##er", "##s"}, Side::Source), "two dogs players");
  fs::remove(path);
  // fill-mask fills the [MASK] the text holds (WordPiece marks it special: it is still the blank) with the pass's
  // own probabilities at that position, best first.
  const FillMaskResult filled = fill_mask(m, text, 3);
  ASSERT_EQ(filled.mask_position, 7);
  const Trace trace = forward(m.config, m.weights, token_ids(tokens), {});
  Eigen::Index best = 0;
  trace.probs.row(7).maxCoeff(&best);
  ASSERT_EQ(filled.candidates.size(), 3u);
  EXPECT_EQ(filled.candidates[0].id, static_cast<int>(best));
  EXPECT_NEAR(filled.candidates[0].probability, trace.probs(7, best), 1e-6);
  const CliRun filled_cli = cli({"fill-mask", bert_fixture("tiny-bert"), text, "--top", "1"});
  ASSERT_EQ(filled_cli.status, 0) << filled_cli.out;
  EXPECT_EQ(filled_cli.out.substr(0, filled_cli.out.find('\t')), m.src_vocab.token(static_cast<int>(best)));
  // stepformer-cli tokenize prints them, space-separated.
  const CliRun run = cli({"tokenize", bert_fixture("tiny-bert"), text});
  ASSERT_EQ(run.status, 0) << run.out;
  std::string ids;
  for (int id : wp_ids) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  EXPECT_EQ(run.out, ids + "\n");
}

}  // namespace
}  // namespace sf
