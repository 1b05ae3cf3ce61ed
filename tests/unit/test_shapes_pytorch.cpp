// The two other shapes of Transformer (config.stacks: decoder-only like GPT, encoder-only like BERT) against PyTorch
// (tests/reference/make_shape_fixtures.py: random tiny models of our own word vocabulary, nn.TransformerEncoder
// layers, causal for decoder-only): every traced tensor within 1e-5 with heads off, the causal mask off and positions
// off; a decoder-only model's KV-cache steps equal its full passes; one training step's loss and gradients equal
// torch autograd's. Through the same passes as the encoder-decoder: decoder_pass without cross-attention, the
// encoder pass with its output head.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "backend/device.h"
#include "decode/decoder.h"
#include "decode/kv_cache.h"
#include "forward_fixture.h"
#include "training_fixture.h"
#include "model/name_tables.h"
#include "train/batched_model.h"
#include "train/init.h"
#include "train/parameters.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

constexpr float kTolerance = 1e-5f;

using testing::shapes_file;

class ShapesPytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapesPytorch, EveryTracedTensorMatches) {
  const testing::ForwardFixture f = testing::load_forward_fixture(GetParam());
  const Config& c = f.model.config;
  const Trace trace = forward(c, f.model.weights, f.src, f.tgt, f.interventions);
  const std::map<std::string, Tensor> ours = testing::tensors_by_name(trace);
  int compared = 0;
  ASSERT_NO_FATAL_FAILURE(testing::expect_tensors_match(f.expected, ours, kTolerance, "torch", compared));
  // Nothing of a stack the model lacks: no encoder record in a decoder-only trace, no cross-attention, no decoder
  // record in an encoder-only one; and every tensor we trace is one PyTorch's reference has.
  for (const auto& [name, tensor] : ours) EXPECT_TRUE(f.expected.count(name)) << "ours only: " << name;
  const bool decoder_only = c.stacks == ModelStacks::DecoderOnly;
  EXPECT_EQ(trace.has_encoder(), !decoder_only);
  EXPECT_EQ(trace.has_decoder(), decoder_only);
  EXPECT_TRUE(trace.has_output());
  for (const char* required : decoder_only ? std::vector<const char*>{"tgt.tok_embed", "dec.in", "dec.0.self_attn.probs",
                                                                      "dec.1.residual3", "dec.1.norm3", "dec.out", "logits"}
                                           : std::vector<const char*>{"src.tok_embed", "enc.in", "enc.0.self_attn.probs",
                                                                      "enc.1.residual2", "enc.out", "logits", "probs"})
    EXPECT_TRUE(f.expected.count(required)) << required;
  EXPECT_GT(compared, 40);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ShapesPytorch, ::testing::ValuesIn(testing::fixture_paths("shapes")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = std::filesystem::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

TEST(ShapesPytorchFixtures, CoverBothShapesAndEveryIntervention) {
  std::set<ModelStacks> shapes;
  bool head_off = false, no_causal = false, no_positions = false, padded = false, tied = false, pre = false;
  for (const std::string& path : testing::fixture_paths("shapes")) {
    const testing::ForwardFixture f = testing::load_forward_fixture(path);
    shapes.insert(f.model.config.stacks);
    head_off |= !f.interventions.heads_off.empty();
    no_causal |= !f.interventions.causal_mask && f.model.config.stacks == ModelStacks::DecoderOnly;
    no_positions |= !f.interventions.positional_encoding;
    for (int id : f.src) padded |= id == f.model.config.pad_id;
    tied |= f.model.config.tie_output_embedding;
    pre |= f.model.config.norm_placement == NormPlacement::Pre;
  }
  EXPECT_EQ(shapes, (std::set<ModelStacks>{ModelStacks::DecoderOnly, ModelStacks::EncoderOnly}));
  EXPECT_TRUE(head_off && no_causal && no_positions && padded && tied && pre);
}

// [SECTION] decoding: a decoder-only model continues a prompt

TEST(DecoderOnly, KvCacheStepsEqualFullPasses) {
  for (const char* name : {"gpt_pre", "gpt_post"}) {
    SCOPED_TRACE(name);
    const Model m = load_model(shapes_file(std::string(name) + ".model.safetensors"));
    const std::vector<int> tokens = {2, 4, 6, 8, 5, 7, 9};
    const Trace full = forward(m.config, m.weights, {}, tokens);
    const Trace none;  // no encoder pass: the cache has no cross-attention keys
    KvCache cache = start_kv_cache(m.config, m.weights, none);
    EXPECT_TRUE(cache.cross->keys.empty());
    for (size_t i = 0; i < tokens.size(); ++i) {
      const RowVec step = decode_step(m.config, m.weights, none, tokens[i], cache);
      EXPECT_LT((step - full.logits.row(static_cast<Eigen::Index>(i))).cwiseAbs().maxCoeff(), 1e-5f) << "step " << i;
    }
    // A chunk of three through the cache, then the rest: the same rows.
    KvCache chunked = start_kv_cache(m.config, m.weights, none);
    const Mat first = decode_chunk(m.config, m.weights, none, {2, 4, 6}, chunked, 3);
    const Mat rest = decode_chunk(m.config, m.weights, none, {8, 5, 7, 9}, chunked, 4);
    EXPECT_LT((first - full.logits.topRows(3)).cwiseAbs().maxCoeff(), 1e-5f);
    EXPECT_LT((rest - full.logits.bottomRows(4)).cwiseAbs().maxCoeff(), 1e-5f);
  }
}

TEST(DecoderOnly, DecoderContinuesThePromptWithAndWithoutTheCache) {
  const Model m = load_model(shapes_file("gpt_pre.model.safetensors"));
  const std::vector<int> prompt = {4, 6, 8};
  DecodeOptions options;
  options.max_length = 6;
  Decoder cached(m.config, m.weights, prompt, {}, options);
  options.use_kv_cache = false;
  Decoder uncached(m.config, m.weights, prompt, {}, options);
  cached.run();
  uncached.run();
  ASSERT_EQ(cached.generated(), uncached.generated());
  ASSERT_FALSE(cached.generated().empty());
  EXPECT_EQ(cached.start_tokens(), (std::vector<int>{m.config.bos_id, 4, 6, 8}));
  // Each generated token is the argmax of a full pass over <bos> + prompt + the tokens before it.
  std::vector<int> input = cached.start_tokens();
  for (int token : cached.generated()) {
    const Trace t = forward(m.config, m.weights, {}, input);
    Eigen::Index best = 0;
    t.logits.row(t.logits.rows() - 1).maxCoeff(&best);
    EXPECT_EQ(token, static_cast<int>(best));
    input.push_back(token);
  }
  // The trace of the pass that chose the last token: the decoder half only, over pass_input().
  const Trace t = cached.trace();
  EXPECT_FALSE(t.has_encoder());
  EXPECT_EQ(t.tgt.ids, cached.pass_input());
  const Trace want = forward(m.config, m.weights, {}, cached.pass_input());
  EXPECT_LT((t.logits - want.logits).cwiseAbs().maxCoeff(), 1e-5f);
  // Beam search's rows per prefix (chosen_logits) start after the prompt.
  options.use_kv_cache = true;
  options.strategy = DecodeStrategy::Beam;
  options.beam_width = 3;
  Decoder beam(m.config, m.weights, prompt, {}, options);
  beam.run();
  const Mat chosen = beam.chosen_logits();
  ASSERT_EQ(chosen.rows(), static_cast<Eigen::Index>(beam.generated().size()));
  std::vector<int> prefix = beam.start_tokens();
  for (Eigen::Index i = 0; i < chosen.rows(); ++i) {
    const Trace p = forward(m.config, m.weights, {}, prefix);
    EXPECT_LT((chosen.row(i) - p.logits.row(p.logits.rows() - 1)).cwiseAbs().maxCoeff(), 1e-5f) << i;
    prefix.push_back(beam.generated()[static_cast<size_t>(i)]);
  }
}

TEST(DecoderOnly, RefusesWhatItHasNot) {
  const Model gpt = load_model(shapes_file("gpt_pre.model.safetensors"));
  const Model bert = load_model(shapes_file("bert_post.model.safetensors"));
  // No source sentence, no cross-attention heads, no encoder pass; an encoder-only model does not generate.
  EXPECT_THROW(forward(gpt.config, gpt.weights, {4, 5}, {2, 4}), Error);
  Interventions cross;
  cross.heads_off.push_back({AttentionKind::Cross, 0, 0});
  EXPECT_THROW(forward(gpt.config, gpt.weights, {}, {2, 4}, cross), Error);
  Trace t;
  EXPECT_THROW(encode(gpt.config, gpt.weights, {2, 4}, {}, t), Error);
  EXPECT_THROW(forward(bert.config, bert.weights, {2, 4}, {2}), Error);
  EXPECT_THROW(Decoder(bert.config, bert.weights, {2, 4}), Error);
  // A prompt that fills every position leaves nothing to generate.
  EXPECT_THROW(Decoder(gpt.config, gpt.weights, std::vector<int>(static_cast<size_t>(gpt.config.max_positions), 4)),
               Error);
  // The GPU backend takes every shape (tests/cuda/test_cuda_shapes.cpp runs them there).
  EXPECT_EQ(model_not_for_gpu(gpt.config), "");
  EXPECT_EQ(model_not_for_gpu(bert.config), "");
  EXPECT_EQ(model_not_for_gpu(Config{}), "");
}

TEST(ModelShapes, ADecoderOnlyAndAnEncoderOnlyModelSaveAndLoadAsTheyWere) {
  for (const char* name : {"gpt_pre", "bert_post"}) {
    SCOPED_TRACE(name);
    const Model m = load_model(shapes_file(std::string(name) + ".model.safetensors"));
    const std::string path = ::testing::TempDir() + "/stepformer_shapes_" + name + ".safetensors";
    save_model(m, path);
    const Model back = load_model(path);
    std::remove(path.c_str());
    EXPECT_EQ(config_to_json(back.config), config_to_json(m.config));
    EXPECT_EQ(back.src_vocab.tokens(), m.src_vocab.tokens());
    EXPECT_EQ(back.tgt_vocab.tokens(), m.tgt_vocab.tokens());
    const bool decoder = m.config.has_decoder();
    const std::vector<int> ids = {2, 4, 6, 3};
    const Trace a = forward(m.config, m.weights, decoder ? std::vector<int>{} : ids, decoder ? ids : std::vector<int>{});
    const Trace b = forward(back.config, back.weights, decoder ? std::vector<int>{} : ids, decoder ? ids : std::vector<int>{});
    EXPECT_EQ((a.logits - b.logits).cwiseAbs().maxCoeff(), 0.0f);
  }
}

TEST(EncoderOnly, RecomputeAfterAnInterventionEqualsAFullPass) {
  for (const char* name : {"bert_post", "gpt_post"}) {
    SCOPED_TRACE(name);
    const Model m = load_model(shapes_file(std::string(name) + ".model.safetensors"));
    const bool decoder = m.config.has_decoder();
    const std::vector<int> ids = {2, 4, 6, 8, 3};
    Trace t = forward(m.config, m.weights, decoder ? std::vector<int>{} : ids, decoder ? ids : std::vector<int>{});
    Interventions iv;
    iv.heads_off.push_back({decoder ? AttentionKind::Decoder : AttentionKind::Encoder, 1, 1});
    iv.positional_encoding = false;
    recompute(m.config, m.weights, iv, t);
    const Trace want =
        forward(m.config, m.weights, decoder ? std::vector<int>{} : ids, decoder ? ids : std::vector<int>{}, iv);
    EXPECT_EQ((t.logits - want.logits).cwiseAbs().maxCoeff(), 0.0f);
  }
}

// The CLI's translating commands take encoder-decoder models only, and say which shape they were given.
TEST(ModelShapes, TheCliTranslateNamesTheShapeItCannotTranslateWith) {
  const std::string cli = STEPFORMER_CLI_PATH;
  const std::string log = ::testing::TempDir() + "/shapes_cli.log";
  const int rc = std::system((cli + " translate " + shapes_file("gpt_pre.model.safetensors") + " \"the dog\" > " + log +
                              " 2>&1").c_str());
  EXPECT_NE(rc, 0);
  std::FILE* f = std::fopen(log.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  EXPECT_NE(text.find("decoder_only"), std::string::npos) << text;
}

// [SECTION] training: one step's loss and gradients

class ShapesTraining : public ::testing::TestWithParam<const char*> {};

TEST_P(ShapesTraining, LossAndGradientsMatchAutograd) {
  const std::string name = GetParam();
  const Model model = load_model(shapes_file(name + ".model.safetensors"));
  const SafetensorsFile ref = SafetensorsFile::open(shapes_file(name + ".training.safetensors"));
  const Config& c = model.config;
  Batch batch;
  int rows = 0, cols = 0;
  batch.source = testing::read_ids(ref, "ids.src", &batch.size, &batch.source_length);
  batch.target_in = testing::read_ids(ref, "ids.tgt_in", &rows, &cols);
  batch.target_out = testing::read_ids(ref, "ids.tgt_out", &rows, &batch.target_length);
  if (c.has_decoder()) batch.source_length = 0;
  else batch.target_in.clear();
  for (int id : batch.target_out) batch.target_tokens += id != c.pad_id;

  BatchTrace trace;
  Mat dlogits;
  const LossResult r = batch_forward(c, model.weights, batch, {}, std::stof(ref.metadata().at("label_smoothing")),
                                     trace, &dlogits);
  EXPECT_NEAR(r.loss, std::stod(ref.metadata().at("loss")), 1e-5);
  ModelWeights grads = zeros_like(model.weights);
  batch_backward(c, model.weights, batch, trace, dlogits, grads);
  tie_gradients(c, grads);  // the tied output head's gradient joins its embedding's, as the trainer does
  const int compared =
      testing::expect_gradients_match(model.family, c, static_cast<const ModelWeights&>(grads), ref, name);
  EXPECT_GE(compared, 25);
}

INSTANTIATE_TEST_SUITE_P(Models, ShapesTraining, ::testing::Values("gpt_pre", "gpt_post", "bert_post", "bert_pre"));

// [SECTION] the config says the shape

TEST(ModelShapeConfig, StacksRoundTripAndAreChecked) {
  Config c;
  c.stacks = ModelStacks::DecoderOnly;
  c.n_encoder_layers = 0;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = 20;
  c.validate();
  const Config back = config_from_json(config_to_json(c));
  EXPECT_EQ(back.stacks, ModelStacks::DecoderOnly);
  EXPECT_EQ(back.n_encoder_layers, 0);
  EXPECT_EQ(config_to_json(back), config_to_json(c));
  // A stack the shape lacks must have no layers or vocabulary; one it has needs both.
  Config bad = c;
  bad.n_encoder_layers = 2;
  EXPECT_THROW(bad.validate(), Error);
  bad = c;
  bad.encoder_final_norm = true;
  EXPECT_THROW(bad.validate(), Error);
  bad = c;
  bad.stacks = ModelStacks::EncoderOnly;
  EXPECT_THROW(bad.validate(), Error);
  // A file before the key: an encoder-decoder, the generator's bias as every other layer's.
  nlohmann::json old = config_to_json(Config{});
  old.erase("stacks");
  old.erase("output_bias");
  old["src_vocab_size"] = 10;
  old["tgt_vocab_size"] = 10;
  old["bias"] = false;
  const Config read = config_from_json(old);
  EXPECT_EQ(read.stacks, ModelStacks::EncoderDecoder);
  EXPECT_FALSE(read.output_bias);
  // The families of translation checkpoints are encoder-decoder models.
  EXPECT_THROW(check_family_config(kFamilyPytorchTutorial, c, "test"), Error);
  // A decoder-only model's weights: no source embedding, no cross-attention, the generator over the target vocabulary.
  for (const TensorSpec& spec : weight_layout(kFamilyStepformer, c)) {
    EXPECT_EQ(spec.name.find("src_"), std::string::npos) << spec.name;
    EXPECT_EQ(spec.name.find("cross_attn"), std::string::npos) << spec.name;
    if (spec.name == "generator.weight") {
      EXPECT_EQ(spec.shape.at(0), 20);
    }
  }
}

}  // namespace
}  // namespace sf
