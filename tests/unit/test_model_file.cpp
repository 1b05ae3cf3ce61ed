// Model files: save/load round trips for every family, the committed PyTorch-converted fixtures, and one test
// per malformed input, each checking the error's kind and that its message names the fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "io/safetensors.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

// [SECTION] helpers

Config tiny_config(const std::string& family) {
  Config c;
  c.d_model = 8;            // C
  c.n_heads = 2;            // H
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 1;
  c.d_ff = 12;              // F
  c.src_vocab_size = 7;     // Vs
  c.tgt_vocab_size = 9;     // Vt
  c.max_positions = 10;     // P
  if (family == kFamilyPytorchTutorial) c.encoder_final_norm = c.decoder_final_norm = true;
  if (family == kFamilySeq2SeqTutorial) c.positional_encoding = PositionalEncoding::Learned;
  if (family == kFamilyFromScratch) {
    c.attention = AttentionStyle::ReshapeHeads;
    c.embedding_scale = EmbeddingScale::One;
  }
  if (family == kFamilyMarian) {  // separate vocabularies here: model.{encoder,decoder}.embed_tokens, tied output
    c.sinusoid_layout = SinusoidLayout::Halves;
    c.activation = Activation::SiLU;
    c.tie_output_embedding = true;
  }
  return c;
}

std::vector<std::string> tokens(int n, const std::string& stem) {
  std::vector<std::string> t = {"<unk>", "<pad>", "<bos>", "<eos>"};
  for (int i = 4; i < n; ++i) t.push_back(stem + std::to_string(i));
  return t;
}

// A model with deterministic random weights.
Model tiny_model(const std::string& family, const Config& config, unsigned seed = 1) {
  Model m;
  m.family = family;
  m.config = config;
  const SpecialIds ids{config.pad_id, config.bos_id, config.eos_id, config.unk_id};
  m.src_vocab = Vocabulary(tokens(config.src_vocab_size, "quelle"), ids);
  m.tgt_vocab = Vocabulary(tokens(config.tgt_vocab_size, "target"), ids);
  m.tokenizer.source_language = "de";
  m.tokenizer.target_language = "en";
  m.provenance = {{"dataset", "unit test"}, {"command", "tiny_model()"}, {"scores", {{"bleu", 1.5}}}};
  m.weights = allocate_weights(config);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const WeightSlot& slot : weight_slots(family, config, m.weights))
    for (const auto& part : slot.parts)
      for (float& x : part) x = uniform(rng);
  complete_shared_weights(config, m.weights);
  return m;
}
Model tiny_model(const std::string& family) { return tiny_model(family, tiny_config(family)); }

// A model file taken apart, so a test can break one thing and put it back together.
struct EditableFile {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
  std::map<std::string, std::string> metadata;

  explicit EditableFile(const std::vector<std::byte>& bytes) {
    const auto file = SafetensorsFile::from_bytes(bytes);
    for (const auto& t : file.tensors()) {
      names.push_back(t.name);
      shapes.push_back(t.shape);
      values.push_back(t.to_floats());
    }
    metadata = file.metadata();
  }
  size_t index(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return i;
    ADD_FAILURE() << "no tensor " << name;
    return 0;
  }
  void erase(const std::string& name) {
    const size_t i = index(name);
    names.erase(names.begin() + static_cast<std::ptrdiff_t>(i));
    shapes.erase(shapes.begin() + static_cast<std::ptrdiff_t>(i));
    values.erase(values.begin() + static_cast<std::ptrdiff_t>(i));
  }
  void add(const std::string& name, std::vector<int64_t> shape, std::vector<float> v) {
    names.push_back(name);
    shapes.push_back(std::move(shape));
    values.push_back(std::move(v));
  }
  std::vector<std::byte> bytes() const {
    std::vector<TensorToWrite> t;
    for (size_t i = 0; i < names.size(); ++i) t.push_back({names[i], shapes[i], values[i]});
    return serialize_safetensors(t, metadata);
  }
  Model load(std::vector<std::string>* warnings = nullptr) const {
    return load_model(SafetensorsFile::from_bytes(bytes(), "edited.safetensors"), warnings);
  }
};

EditableFile editable(const Model& m) { return EditableFile(serialize_model(m)); }

Error load_error(const EditableFile& f) {
  try {
    f.load();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an sf::Error";
  return Error(ErrorKind::File, "");
}

void expect_error(const EditableFile& f, ErrorKind kind, const std::string& needle) {
  const Error e = load_error(f);
  EXPECT_EQ(e.kind(), kind) << error_kind_name(e.kind()) << ": " << e.what();
  EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  EXPECT_NE(std::string(e.what()).find("[load_model]"), std::string::npos) << e.what();
}

void expect_same_weights(const Model& a, const Model& b, float tolerance = 0.0f) {
  auto sa = weight_slots(a.family, a.config, a.weights);
  auto sb = weight_slots(b.family, b.config, b.weights);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    ASSERT_EQ(sa[i].name, sb[i].name);
    for (size_t p = 0; p < sa[i].parts.size(); ++p)
      for (size_t k = 0; k < sa[i].parts[p].size(); ++k)
        ASSERT_NEAR(sa[i].parts[p][k], sb[i].parts[p][k], tolerance) << sa[i].name << " part " << p << " index " << k;
  }
}

// The running test's name as one path component: a parameterised test is "RoundTripF32IsExact/0", and a
// slash would leave the folder "stepformer_mf_PID_RoundTripF32IsExact" behind after the test removed "/0".
std::string safe_test_name() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("stepformer_mf_" + std::to_string(::getpid()) + "_" +
                                        safe_test_name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// [SECTION] round trips

class ModelFileFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelFileFamilies, RoundTripF32IsExact) {
  TempDir dir;
  const Model m = tiny_model(GetParam());
  save_model(m, dir.file("m.safetensors"));
  std::vector<std::string> warnings;
  const Model back = load_model(dir.file("m.safetensors"), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(back.family, GetParam());
  EXPECT_EQ(config_to_json(back.config), config_to_json(m.config));
  EXPECT_EQ(back.src_vocab.tokens(), m.src_vocab.tokens());
  EXPECT_EQ(back.tgt_vocab.tokens(), m.tgt_vocab.tokens());
  EXPECT_EQ(back.tokenizer.source_language, "de");
  EXPECT_EQ(back.provenance, m.provenance);
  EXPECT_EQ(back.parameter_count(), m.parameter_count());
  expect_same_weights(m, back);
  EXPECT_EQ(back.weights.decoder_layers[0].cross_attn.v.weight, m.weights.decoder_layers[0].cross_attn.v.weight);
}

TEST_P(ModelFileFamilies, RoundTripF16IsClose) {
  TempDir dir;
  const Model m = tiny_model(GetParam());
  save_model(m, dir.file("m.safetensors"), DType::F16);
  EXPECT_EQ(SafetensorsFile::open(dir.file("m.safetensors")).tensors()[0].dtype, DType::F16);
  const Model back = load_model(dir.file("m.safetensors"));
  expect_same_weights(m, back, 2.45e-4f);  // |x| <= 1: half an F16 ulp is at most 2^-12
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, ModelFileFamilies,
                         ::testing::Values(kFamilyStepformer, kFamilyPytorchTutorial, kFamilySeq2SeqTutorial,
                                           kFamilyFromScratch, kFamilyMarian),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

TEST(ModelFile, ParameterCountMatchesTheArchitecture) {
  const int64_t C = 8, F = 12, Vs = 7, Vt = 9;
  const int64_t attention = 4 * (C * C + C), norm = 2 * C, ffn = F * C + F + C * F + C;
  const int64_t expected = Vs * C + Vt * C + 2 * (attention + 2 * norm + ffn) + 1 * (2 * attention + 3 * norm + ffn) +
                           2 * norm + Vt * C + Vt;
  EXPECT_EQ(tiny_model(kFamilyPytorchTutorial).parameter_count(), expected);
  // learned positions add 2 P C, no final norms
  EXPECT_EQ(tiny_model(kFamilySeq2SeqTutorial).parameter_count(), expected - 2 * norm + 2 * 10 * C);
}

TEST(ModelFile, NativeSharedAndTiedEmbeddingsAreStoredOnce) {
  Config c = tiny_config(kFamilyStepformer);
  c.tgt_vocab_size = c.src_vocab_size;
  c.share_embeddings = true;
  c.tie_output_embedding = true;
  c.bias = false;
  const Model m = tiny_model(kFamilyStepformer, c);
  const EditableFile f(serialize_model(m));
  for (const auto& name : f.names) {
    EXPECT_NE(name, "tgt_embedding.weight");
    EXPECT_NE(name, "generator.weight");
    EXPECT_EQ(name.find(".bias") != std::string::npos && name.find("norm") == std::string::npos, false) << name;
  }
  const Model back = f.load();
  EXPECT_EQ(back.weights.tgt_embedding, back.weights.src_embedding);
  EXPECT_EQ(back.weights.generator.weight, back.weights.src_embedding);
  EXPECT_EQ(back.weights.generator.bias.size(), 0);
  EXPECT_EQ(back.parameter_count(), m.parameter_count());
}

TEST(ModelFile, PytorchTutorialSplitsInProjIntoQKV) {
  const Model m = tiny_model(kFamilyPytorchTutorial);
  const EditableFile f(serialize_model(m));
  const auto& in_proj = f.values[f.index("transformer.decoder.layers.0.multihead_attn.in_proj_weight")];
  ASSERT_EQ(in_proj.size(), 3u * 8 * 8);
  const auto& cross = m.weights.decoder_layers[0].cross_attn;
  EXPECT_EQ(in_proj[0], cross.q.weight(0, 0));
  EXPECT_EQ(in_proj[8 * 8 + 3 * 8 + 5], cross.k.weight(3, 5));    // rows C..2C-1 are W_k
  EXPECT_EQ(in_proj[2 * 8 * 8 + 7 * 8 + 1], cross.v.weight(7, 1)); // rows 2C..3C-1 are W_v
  const auto& in_bias = f.values[f.index("transformer.decoder.layers.0.multihead_attn.in_proj_bias")];
  EXPECT_EQ(in_bias[8 + 2], cross.k.bias(2));
}

TEST(ModelFile, SaveIsAtomicAndRefusesBadModels) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const Model good = tiny_model(kFamilyStepformer);
  save_model(good, path);

  Model nan = good;
  nan.weights.encoder_layers[1].ffn.fc2.weight(2, 3) = std::nanf("");
  try {
    save_model(nan, path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("tensor 'encoder.layers.1.ffn.fc2.weight' holds NaN"), std::string::npos) << e.what();
  }
  Model wrong_shape = good;
  wrong_shape.weights.decoder_layers[0].ffn.fc1.weight = Mat::Zero(8, 12);
  try {
    save_model(wrong_shape, path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(std::string(e.what()).find("weight 'decoder.layers.0.ffn.fc1.weight': expected (12, 8), found (8, 12)"),
              std::string::npos) << e.what();
  }
  Model bad_config = good;
  bad_config.config.n_heads = 3;
  EXPECT_THROW(save_model(bad_config, path), Error);

  // the file written first is still there, whole, and nothing else is in the directory
  expect_same_weights(good, load_model(path));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
}

// [SECTION] malformed model files, one fault each

TEST(ModelFileErrors, ShapeMismatchNamesTensorAndBothShapes) {
  EditableFile f = editable(tiny_model(kFamilyPytorchTutorial));
  const size_t i = f.index("transformer.decoder.layers.0.linear1.weight");
  f.shapes[i] = {8, 12};  // transposed: (C, F) instead of (F, C)
  expect_error(f, ErrorKind::Shape, "tensor 'transformer.decoder.layers.0.linear1.weight': expected (12, 8), found (8, 12)");
}

TEST(ModelFileErrors, MissingTensor) {
  EditableFile f = editable(tiny_model(kFamilySeq2SeqTutorial));
  f.erase("decoder.layers.0.encoder_attention.fc_v.bias");
  expect_error(f, ErrorKind::Missing, "missing tensor 'decoder.layers.0.encoder_attention.fc_v.bias' (8,)");
}

TEST(ModelFileErrors, NaNAndInfInAWeight) {
  EditableFile f = editable(tiny_model(kFamilyStepformer));
  f.values[f.index("encoder.layers.0.self_attn.k.weight")][9] = std::nanf("");
  expect_error(f, ErrorKind::Value, "tensor 'encoder.layers.0.self_attn.k.weight' holds NaN at flat index 9");
  f = editable(tiny_model(kFamilyStepformer));
  f.values[f.index("generator.bias")][2] = -INFINITY;
  expect_error(f, ErrorKind::Value, "tensor 'generator.bias' holds Inf at flat index 2");
}

TEST(ModelFileErrors, UnknownExtraTensorIsAWarning) {
  EditableFile f = editable(tiny_model(kFamilyPytorchTutorial));
  f.add("positional_encoding.pos_embedding", {10, 1, 8}, std::vector<float>(80, 0.0f));
  std::vector<std::string> warnings;
  EXPECT_NO_THROW(f.load(&warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unknown tensor 'positional_encoding.pos_embedding' F32 (10, 1, 8)"), std::string::npos)
      << warnings[0];
}

TEST(ModelFileErrors, NonFloatWeight) {
  const EditableFile f = editable(tiny_model(kFamilyStepformer));
  // Relabel generator.bias as I32 in the header (same byte size, so the offsets stay valid).
  const auto bytes = f.bytes();
  std::string image(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const size_t at = image.find("\"generator.bias\":{\"data_offsets\"");
  ASSERT_NE(at, std::string::npos);
  const size_t dtype = image.find("\"dtype\":\"F32\"", at);
  image.replace(dtype, 13, "\"dtype\":\"I32\"");
  try {
    load_model(SafetensorsFile::from_bytes(std::as_bytes(std::span(image.data(), image.size()))));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("tensor 'generator.bias' has dtype I32"), std::string::npos) << e.what();
  }
}

TEST(ModelFileErrors, ConfigOutOfRange) {
  auto with_config = [](const std::function<void(nlohmann::json&)>& edit) {
    EditableFile f = editable(tiny_model(kFamilyStepformer));
    nlohmann::json c = nlohmann::json::parse(f.metadata["config"]);
    edit(c);
    f.metadata["config"] = c.dump();
    return f;
  };
  expect_error(with_config([](auto& c) { c["n_heads"] = 3; }), ErrorKind::Config, "n_heads (3) does not divide d_model (8)");
  expect_error(with_config([](auto& c) { c["n_encoder_layers"] = 0; }), ErrorKind::Config,
               "n_encoder_layers must be positive, got 0");
  expect_error(with_config([](auto& c) { c["unk_id"] = 7; }), ErrorKind::Config,
               "unk_id (7) is outside the vocabulary (size 7)");
  expect_error(with_config([](auto& c) { c["eos_id"] = -1; }), ErrorKind::Config, "eos_id (-1) is outside the vocabulary");
  expect_error(with_config([](auto& c) { c["activation"] = "swish"; }), ErrorKind::Config, "'activation'");
  expect_error(with_config([](auto& c) { c.erase("d_model"); }), ErrorKind::Config, "missing key 'd_model'");
  expect_error(with_config([](auto& c) { c["src_vocab_size"] = 8; }), ErrorKind::Config,
               "holds 7 tokens, but the config's src_vocab_size is 8");
  // The config is consistent but the tensors were made for another one: the shapes say so.
  expect_error(with_config([](auto& c) { c["d_ff"] = 16; }), ErrorKind::Shape,
               "tensor 'encoder.layers.0.ffn.fc1.weight': expected (16, 8), found (12, 8)");
}

TEST(ModelFileErrors, FamilyAndConfigDisagree) {
  EditableFile f = editable(tiny_model(kFamilyPytorchTutorial));
  nlohmann::json c = nlohmann::json::parse(f.metadata["config"]);
  c["encoder_final_norm"] = false;
  f.metadata["config"] = c.dump();
  expect_error(f, ErrorKind::Config, "family 'pytorch-tutorial' needs encoder_final_norm and decoder_final_norm true");
}

TEST(ModelFileErrors, BadMetadata) {
  const EditableFile good = editable(tiny_model(kFamilyStepformer));
  EditableFile f = good;
  f.metadata["config"] = "{\"d_model\": 8,";
  expect_error(f, ErrorKind::Format, "\"config\" is not valid JSON");
  f = good;
  f.metadata.erase("format");
  expect_error(f, ErrorKind::Missing, "not a Stepformer model");
  f = good;
  f.metadata["format"] = "gguf";
  expect_error(f, ErrorKind::Format, "\"format\" is 'gguf', expected 'stepformer-model'");
  f = good;
  f.metadata["format_version"] = "2";
  expect_error(f, ErrorKind::Unsupported, "format_version '2' is not supported");
  f = good;
  f.metadata["family"] = "llama";
  expect_error(f, ErrorKind::Format, "unknown family 'llama'");
  f = good;
  f.metadata.erase("tgt_vocab");
  expect_error(f, ErrorKind::Missing, "no __metadata__ \"tgt_vocab\"");
  f = good;
  f.metadata["src_vocab"] = R"(["<unk>", "<pad>", "<bos>", "<eos>", "a", "b", "a"])";
  expect_error(f, ErrorKind::Format, "token 'a' appears twice (ids 4 and 6)");
  f = good;
  f.metadata["src_vocab"] = R"(["<unk>", "<pad>", "<bos>", "<eos>", "a", "b", 7])";
  expect_error(f, ErrorKind::Format, "token 6 is not a string");
  f = good;
  f.metadata["tokenizer"] = R"({"lowercase": "yes"})";
  expect_error(f, ErrorKind::Format, "key 'lowercase' is not true or false");
  f = good;
  f.metadata["provenance"] = "[1]";
  expect_error(f, ErrorKind::Format, "\"provenance\" is not a JSON object");
  f = good;
  f.metadata.erase("tokenizer");
  std::vector<std::string> warnings;
  f.load(&warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no tokenizer settings"), std::string::npos);
}

TEST(ModelFileErrors, AHugeConfigWithTinyTensorsAllocatesNothing) {
  // A hostile file may claim an enormous model; the shape check runs before any allocation.
  EditableFile f = editable(tiny_model(kFamilyStepformer));
  nlohmann::json c = nlohmann::json::parse(f.metadata["config"]);
  c["d_model"] = 65536;
  c["n_heads"] = 1;
  f.metadata["config"] = c.dump();
  expect_error(f, ErrorKind::Shape, "tensor 'src_embedding.weight': expected (7, 65536), found (7, 8)");
}

TEST(ModelFileErrors, TruncatedModelFile) {
  TempDir dir;
  save_model(tiny_model(kFamilyStepformer), dir.file("m.safetensors"));
  fs::resize_file(dir.file("m.safetensors"), fs::file_size(dir.file("m.safetensors")) - 100);
  try {
    load_model(dir.file("m.safetensors"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find("the file is truncated"), std::string::npos) << e.what();
  }
}

// [SECTION] the committed PyTorch fixtures (tools/convert_pytorch.py on tiny random models of each family;
// tests/reference/make_model_fixtures.py wrote them and the expected values)

float member_value(const ModelWeights& w, const std::string& member, int row, int col) {
  // "encoder_layers.1.self_attn.k.weight", "generator.bias", "src_positions", ...
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = member.find('.', start);
    parts.push_back(member.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  auto linear = [&](const LinearWeights& l, const std::string& which) {
    return which == "weight" ? l.weight(row, col) : l.bias(col);
  };
  auto norm = [&](const LayerNormWeights& n, const std::string& which) {
    return which == "gamma" ? n.gamma(col) : n.beta(col);
  };
  auto attention = [&](const AttentionWeights& a, const std::string& proj, const std::string& which) {
    const LinearWeights& l = proj == "q" ? a.q : proj == "k" ? a.k : proj == "v" ? a.v : a.out;
    return linear(l, which);
  };
  const std::string& head = parts[0];
  if (head == "src_embedding") return w.src_embedding(row, col);
  if (head == "tgt_embedding") return w.tgt_embedding(row, col);
  if (head == "src_positions") return w.src_positions(row, col);
  if (head == "tgt_positions") return w.tgt_positions(row, col);
  if (head == "generator") return linear(w.generator, parts.at(1));
  if (head == "encoder_norm") return norm(w.encoder_norm, parts.at(1));
  if (head == "decoder_norm") return norm(w.decoder_norm, parts.at(1));
  const size_t layer = std::stoul(parts.at(1));
  const std::string& part = parts.at(2);
  if (head == "encoder_layers") {
    const auto& l = w.encoder_layers.at(layer);
    if (part == "self_attn") return attention(l.self_attn, parts.at(3), parts.at(4));
    if (part == "self_attn_norm") return norm(l.self_attn_norm, parts.at(3));
    if (part == "ffn") return linear(parts.at(3) == "fc1" ? l.ffn.fc1 : l.ffn.fc2, parts.at(4));
    if (part == "ffn_norm") return norm(l.ffn_norm, parts.at(3));
  } else if (head == "decoder_layers") {
    const auto& l = w.decoder_layers.at(layer);
    if (part == "self_attn") return attention(l.self_attn, parts.at(3), parts.at(4));
    if (part == "cross_attn") return attention(l.cross_attn, parts.at(3), parts.at(4));
    if (part == "self_attn_norm") return norm(l.self_attn_norm, parts.at(3));
    if (part == "cross_attn_norm") return norm(l.cross_attn_norm, parts.at(3));
    if (part == "ffn") return linear(parts.at(3) == "fc1" ? l.ffn.fc1 : l.ffn.fc2, parts.at(4));
    if (part == "ffn_norm") return norm(l.ffn_norm, parts.at(3));
  }
  ADD_FAILURE() << "unknown member " << member;
  return NAN;
}

class PytorchFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(PytorchFixtures, LoadAndMatchTheValuesPyTorchWrote) {
  const std::string stem = std::string(STEPFORMER_FIXTURE_DIR) + "/models/" + GetParam();
  std::ifstream in(stem + ".expected.json");
  ASSERT_TRUE(in) << "missing " << stem << ".expected.json";
  const nlohmann::json expected = nlohmann::json::parse(in);

  std::vector<std::string> warnings;
  const Model m = load_model(stem + ".safetensors", &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(m.family, expected["family"].get<std::string>());
  EXPECT_EQ(config_to_json(m.config), expected["config"]) << "as PyTorch's script wrote it";
  EXPECT_EQ(m.parameter_count(), expected["parameter_count"].get<int64_t>());  // sum(p.numel()) in PyTorch
  EXPECT_EQ(m.src_vocab.tokens(), expected["src_vocab"].get<std::vector<std::string>>());
  EXPECT_EQ(m.tgt_vocab.tokens(), expected["tgt_vocab"].get<std::vector<std::string>>());
  EXPECT_EQ(m.provenance["dataset"], expected["provenance"]["dataset"]);
  EXPECT_EQ(m.tokenizer.source_language, expected["tokenizer"]["source_language"].get<std::string>());
  ASSERT_GE(expected["checks"].size(), 10u);
  for (const auto& check : expected["checks"]) {
    const std::string member = check["member"];
    EXPECT_EQ(member_value(m.weights, member, check["row"], check["col"]), check["value"].get<float>())
        << member << " (" << check["row"] << ", " << check["col"] << ") from " << check["tensor"];
  }
}

INSTANTIATE_TEST_SUITE_P(Committed, PytorchFixtures,
                         ::testing::Values("pytorch_tutorial_tiny", "seq2seq_tutorial_tiny", "pytorch_tutorial_tiny_norm_first",
                                           "from_scratch_tiny"));

// [SECTION] fuzz seed: a micro model, small enough for the fuzzer to mutate quickly

// The fuzz seeds' micro model: one layer each side, C = 4, five tokens, three positions.
Config micro_config() {
  Config c;
  c.d_model = 4;
  c.n_heads = 2;
  c.n_encoder_layers = 1;
  c.n_decoder_layers = 1;
  c.d_ff = 4;
  c.src_vocab_size = 5;
  c.tgt_vocab_size = 5;
  c.max_positions = 3;
  return c;
}

// A seed for the model-file fuzzer that reaches the SentencePiece path: a micro Marian model carrying the two
// small SentencePiece models of the tiny-separate fixture (tokenizer kind "sentencepiece", I8 tensors).
TEST(ModelFile, FuzzSeedWithSentencePieceIsAValidModel) {
  Config c = micro_config();
  c.sinusoid_layout = SinusoidLayout::Halves;
  c.activation = Activation::SiLU;
  c.share_embeddings = c.tie_output_embedding = true;
  c.bos_id = c.pad_id;
  Model m = tiny_model(kFamilyMarian, c, 9);
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/marian/tiny-separate/" + name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  m.tokenizer.kind = "sentencepiece";
  m.sentencepiece = std::make_shared<const SentencePieceModels>(read("source.spm"), read("target.spm"), "source.spm",
                                                                "target.spm");
  m.generation.present = true;
  m.generation.never_generate = {c.pad_id};
  const auto bytes = serialize_model(m, DType::F16);
  EXPECT_LE(bytes.size(), 16384u);  // the fuzzer's -max_len (tests/run_fuzz.sh)
  const std::string path =
      std::string(STEPFORMER_SOURCE_DIR) + "/tests/fuzz/corpus/safetensors_header/micro_marian.safetensors";
  if (std::getenv("STEPFORMER_UPDATE_FUZZ_CORPUS"))
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "run with STEPFORMER_UPDATE_FUZZ_CORPUS=1 to write " << path;
  const Model back = load_model(path);
  ASSERT_TRUE(back.sentencepiece);
  EXPECT_EQ(back.sentencepiece->proto(Side::Target), m.sentencepiece->proto(Side::Target));
  const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(committed.size() == bytes.size() && std::memcmp(committed.data(), bytes.data(), bytes.size()) == 0)
      << "serialize_model no longer writes the committed seed " << path;
}

TEST(ModelFile, FuzzSeedIsAValidModel) {
  Config c = micro_config();
  c.positional_encoding = PositionalEncoding::Learned;
  c.encoder_final_norm = true;
  const Model m = tiny_model(kFamilyStepformer, c, 7);
  const auto bytes = serialize_model(m, DType::F16);
  const std::string path = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fuzz/corpus/safetensors_header/micro_model.safetensors";
  if (std::getenv("STEPFORMER_UPDATE_FUZZ_CORPUS")) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "run with STEPFORMER_UPDATE_FUZZ_CORPUS=1 to write " << path;
  EXPECT_NO_THROW(load_model(path));  // a seed the fuzzer starts from must be a valid model
  // The seed is what serialize_model writes today (rewrite it as above when the format changes on purpose),
  // every tensor in the dtype asked for.
  const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(committed.size() == bytes.size() && std::memcmp(committed.data(), bytes.data(), bytes.size()) == 0)
      << "serialize_model no longer writes the committed seed " << path;
  const SafetensorsFile as_f16 = SafetensorsFile::from_bytes(bytes, "seed");
  for (const TensorView& t : as_f16.tensors()) EXPECT_EQ(t.dtype, DType::F16) << t.name;
  const SafetensorsFile as_f32 = SafetensorsFile::from_bytes(serialize_model(m, DType::F32), "seed");
  for (const TensorView& t : as_f32.tensors()) EXPECT_EQ(t.dtype, DType::F32) << t.name;
}

}  // namespace
}  // namespace sf
