// A model of another shape (config.stacks) opened in the app. A decoder-only model (GPT) opens: its prompt is read
// after <bos>, continued token by token with the core's Decoder (the same tokens, the same trace), every stage of
// its shape draws, the stages it lacks (the encoder's, cross-attention, training) are refused by name, and
// interventions change its trace. An encoder-only model (BERT) opens too (its views: tests/gui/test_fill_blank.cpp).
// (The core's numbers against PyTorch: tests/unit/test_shapes_pytorch.cpp.)
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "gui/app.h"
#include "gui/app_state.h"
#include "gui/model_loader.h"
#include "gui/render/heatmap.h"
#include "gui/stages.h"
#include "headless_imgui.h"
#include "model/model.h"
#include "transformer/forward.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

const std::string kShapes = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/shapes/";
const std::string kGpt = kShapes + "gpt_pre.model.safetensors";
const std::string kPrompt = "the dog runs";  // ids 4 6 8 in the fixtures' word vocabulary

std::vector<int> ids_of(const std::vector<Token>& tokens) {
  std::vector<int> out;
  for (const Token& t : tokens) out.push_back(t.id);
  return out;
}

// [SECTION] the state: the prompt, the continuation, the trace

TEST(DecoderOnly, TheStateReadsBosAndThePromptAndContinuesItAsTheCoresDecoder) {
  for (const char* file : {"gpt_pre.model.safetensors", "gpt_post.model.safetensors"}) {
    SCOPED_TRACE(file);
    AppState state;
    ASSERT_TRUE(state.load_model(kShapes + file)) << state.error();
    ASSERT_TRUE(state.set_sentence(kPrompt)) << state.error();
    ASSERT_TRUE(state.ready()) << state.error();
    EXPECT_TRUE(state.decoder_only());
    const Config& c = state.model()->config;
    EXPECT_EQ(ids_of(state.source_tokens()), (std::vector<int>{4, 6, 8}));
    EXPECT_EQ(state.prompt_rows(), 3);
    // The core's own decoding of <bos> + prompt: the same continuation.
    Decoder reference(c, state.model()->weights, {4, 6, 8}, {}, state.decode_options());
    reference.run();
    EXPECT_EQ(state.translation(), reference.generated());
    ASSERT_FALSE(state.translation().empty());
    // The trace is one pass over <bos> + prompt + continuation (its last token's pass), with logits at every row:
    // the forward pass of the core over the same ids.
    const std::vector<int>& ids = state.trace().tgt.ids;
    ASSERT_GE(ids.size(), 4u);
    EXPECT_EQ(std::vector<int>(ids.begin(), ids.begin() + 4), (std::vector<int>{c.bos_id, 4, 6, 8}));
    EXPECT_FALSE(state.trace().has_encoder());
    const Trace expected = forward(c, state.model()->weights, {}, ids, {});
    ASSERT_EQ(state.trace().logits.rows(), static_cast<Eigen::Index>(ids.size()));
    EXPECT_LT((state.trace().logits - expected.logits).cwiseAbs().maxCoeff(), 1e-4f);
    // Row labels: inside the prompt each row predicts the prompt's next token (given), then the continuation.
    const std::vector<std::string> rows = state.decoder_row_labels();
    EXPECT_EQ(rows[0], "<bos> -> the");
    EXPECT_EQ(rows[2], "dog -> runs");
    EXPECT_EQ(rows[3], "runs -> " + state.target_token(state.translation()[0]));
    // The text shown: the prompt and what follows it.
    const std::string text = state.prompt_and_continuation_text();
    EXPECT_EQ(text.rfind("the dog runs", 0), 0u) << text;
    EXPECT_GT(text.size(), kPrompt.size()) << text;
    // The distribution generated token 0 was chosen from is row prompt_rows() of the pass (an exact cache).
    const RowVec first = state.chosen_distribution_logits(0);
    ASSERT_EQ(first.size(), state.trace().logits.cols());
    EXPECT_LT((first - state.trace().logits.row(3)).cwiseAbs().maxCoeff(), 1e-4f);
  }
}

// A Hugging Face GPT-2 folder (tests/fixtures/gpt2): byte-level pieces, nothing before the prompt. Its first row
// reads the prompt's first token and predicts its second; the last prompt row chooses the first new token.
TEST(DecoderOnly, AGpt2FolderReadsThePromptAsItIsInByteLevelPieces) {
  AppState state;
  const std::string folder = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/gpt2/tiny-gpt2";
  ASSERT_TRUE(state.load_model(folder)) << state.error();
  ASSERT_TRUE(state.set_sentence("A man in an orange shirt")) << state.error();
  ASSERT_TRUE(state.ready()) << state.error();
  const Model& m = *state.model();
  EXPECT_EQ(m.tokenizer.kind, "byte_bpe");
  EXPECT_EQ(state.prompt_start(), 0);
  const std::vector<int> prompt = ids_of(state.source_tokens());
  ASSERT_EQ(prompt, token_ids(encode_text(m, "A man in an orange shirt", Side::Target, false)));
  EXPECT_EQ(state.prompt_rows(), static_cast<int>(prompt.size()) - 1);
  const std::vector<int>& ids = state.trace().tgt.ids;
  ASSERT_GT(ids.size(), prompt.size());
  EXPECT_EQ(std::vector<int>(ids.begin(), ids.begin() + static_cast<long>(prompt.size())), prompt);  // no <bos>
  DecodeOptions options = state.decode_options();
  options.max_length = static_cast<int>(state.translation().size());  // (the app writes a continuation of 24)
  Decoder reference(m.config, m.weights, prompt, {}, options);
  reference.run();
  EXPECT_EQ(state.translation(), reference.generated());
  // Pieces as the model reads them: " man" is shown with a visible space mark, never as GPT-2's "Ġ".
  const std::vector<std::string> labels = state.source_labels();
  ASSERT_GE(labels.size(), 2u);
  EXPECT_EQ(labels[0], "A");
  EXPECT_EQ(labels[1], "\u2423man");
  for (const std::string& l : labels) EXPECT_EQ(l.find("\u0120"), std::string::npos) << l;
  // Row 0 reads "A" and predicts the prompt's " man"; the last prompt row predicts the first new token.
  const std::vector<std::string> rows = state.decoder_row_labels();
  EXPECT_EQ(rows[0], "A -> \u2423man");
  const RowVec first = state.chosen_distribution_logits(0);
  EXPECT_LT((first - state.trace().logits.row(state.prompt_rows())).cwiseAbs().maxCoeff(), 1e-4f);
}

TEST(DecoderOnly, ThePromptIsCheckedAndASourcePaddingRefused) {
  AppState state;
  ASSERT_TRUE(state.load_model(kGpt)) << state.error();
  ASSERT_TRUE(state.set_sentence(kPrompt)) << state.error();
  const std::vector<int> before = state.translation();
  EXPECT_FALSE(state.set_sentence("   "));
  EXPECT_FALSE(state.error().empty());
  // Sixteen positions: <bos> and fourteen words leave room for one more token, fifteen words none.
  std::string long_prompt;
  for (int i = 0; i < 15; ++i) long_prompt += "the ";
  EXPECT_FALSE(state.set_sentence(long_prompt));
  EXPECT_NE(state.error().find("15"), std::string::npos) << state.error();
  EXPECT_FALSE(state.set_source_padding(2));
  EXPECT_EQ(state.translation(), before);
  EXPECT_EQ(state.sentence(), kPrompt);
}

TEST(DecoderOnly, GenerationStepsSamplesAndSearchesABeam) {
  AppState state;
  ASSERT_TRUE(state.load_model(kGpt)) << state.error();
  ASSERT_TRUE(state.set_sentence(kPrompt)) << state.error();
  // Token by token: back to the prompt, then three steps, each a longer pass.
  ASSERT_TRUE(state.restart()) << state.error();
  EXPECT_TRUE(state.translation().empty());
  EXPECT_EQ(state.trace().tgt.ids.size(), 4u);  // <bos> + the prompt: its last row predicts the first token
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(state.step()) << state.error();
    EXPECT_EQ(state.translation().size(), static_cast<size_t>(i));
  }
  EXPECT_TRUE(state.step_back());
  EXPECT_EQ(state.translation().size(), 2u);
  // Sampling: the core's Decoder with the same options draws the same tokens.
  DecodeOptions sample = state.decode_options();
  sample.strategy = DecodeStrategy::Sample;
  sample.sampling.temperature = 1.5f;
  sample.sampling.top_k = 5;
  sample.seed = 7;
  ASSERT_TRUE(state.set_decode_options(sample)) << state.error();
  ASSERT_TRUE(state.run_to_end() || state.decoding_finished()) << state.error();
  DecodeOptions expected_options = sample;
  expected_options.max_length = kContinuationTokens;
  Decoder sampled(state.model()->config, state.model()->weights, {4, 6, 8}, {}, expected_options);
  sampled.run();
  EXPECT_EQ(state.translation(), sampled.generated());
  // Beam search: a tree of hypotheses, the best one shown.
  DecodeOptions beam = state.decode_options();
  beam.strategy = DecodeStrategy::Beam;
  beam.beam_width = 3;
  ASSERT_TRUE(state.set_decode_options(beam)) << state.error();
  ASSERT_TRUE(state.run_to_end() || state.decoding_finished()) << state.error();
  ASSERT_TRUE(state.decoder());
  EXPECT_GT(state.decoder()->tree().size(), 3u);
  EXPECT_FALSE(state.translation().empty());
}

TEST(DecoderOnly, InterventionsChangeTheTrace) {
  AppState state;
  ASSERT_TRUE(state.load_model(kGpt)) << state.error();
  ASSERT_TRUE(state.set_sentence(kPrompt)) << state.error();
  const Trace plain = state.trace();
  const Eigen::Index rows = 4;  // <bos> + the prompt: the rows every pass below shares
  // Causal mask off: the model sees the future (row 0 attends past itself).
  Interventions no_causal;
  no_causal.causal_mask = false;
  ASSERT_TRUE(state.set_interventions(no_causal)) << state.error();
  EXPECT_EQ(plain.decoder[0].self_attn.probs[0](0, 1), 0.0f);
  EXPECT_GT(state.trace().decoder[0].self_attn.probs[0](0, 1), 0.0f);
  // A head off: the layer's attention output changes, and with it the logits.
  Interventions head_off;
  head_off.heads_off.push_back({AttentionKind::Decoder, 0, 1});
  ASSERT_TRUE(state.set_interventions(head_off)) << state.error();
  EXPECT_GT((state.trace().logits.topRows(rows) - plain.logits.topRows(rows)).cwiseAbs().maxCoeff(), 1e-4f);
  // Positions off: no position vector is added.
  Interventions no_positions;
  no_positions.positional_encoding = false;
  ASSERT_TRUE(state.set_interventions(no_positions)) << state.error();
  EXPECT_EQ(state.trace().tgt.pos.cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_GT(plain.tgt.pos.cwiseAbs().maxCoeff(), 0.0f);
  // A forced token after the prompt: the continuation takes it.
  ASSERT_TRUE(state.set_interventions(Interventions{})) << state.error();
  ASSERT_TRUE(state.force_token(0, 13)) << state.error();  // "ball"
  ASSERT_FALSE(state.translation().empty());
  EXPECT_EQ(state.translation()[0], 13);
  EXPECT_EQ(state.trace().tgt.ids[4], 13);
  // An encoder head names a stack the model does not have: refused, the trace kept.
  Interventions encoder_head;
  encoder_head.heads_off.push_back({AttentionKind::Encoder, 0, 0});
  EXPECT_FALSE(state.set_interventions(encoder_head));
}

TEST(ModelShapes, EveryShapeOpensInTheStateAndTheBackgroundLoader) {
  // An encoder-only model (BERT) opens as the other two do (its views: tests/gui/test_fill_blank.cpp).
  AppState state;
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  ASSERT_FALSE(state.translation().empty());
  ASSERT_TRUE(state.load_model(kShapes + "bert_post.model.safetensors")) << state.error();
  EXPECT_EQ(state.model()->config.stacks, ModelStacks::EncoderOnly);
  EXPECT_TRUE(state.encoder_only());
  for (const char* file : {"bert_post.model.safetensors", "bert_mlm.model.safetensors", "gpt_pre.model.safetensors"}) {
    const LoadedModel loaded = read_model_file(kShapes + file, nullptr);
    EXPECT_NE(loaded.model, nullptr) << file << ": " << loaded.error;
  }
}

TEST(ModelShapes, TheExampleSentenceBecomesAPromptAndBack) {
  AppState state;
  state.keep_sentence(kDefaultSentence);
  ASSERT_TRUE(state.load_model(kGpt)) << state.error();
  EXPECT_EQ(state.sentence(), kDefaultPrompt);
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  EXPECT_EQ(state.sentence(), kDefaultSentence);
}

// [SECTION] the app: stages of the shape, refused stages, every panel drawn

class GptApp : public ::testing::Test {
 protected:
  void start(const std::string& stage = "") {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = kGpt;
    options.sentence = kPrompt;
    options.stage = stage;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  void frame(int key = -1) { testing::headless_frame(*app_, key); }
  std::set<std::string> drawn() const {
    std::set<std::string> names;
    for (const auto& p : heatmap_placements()) names.insert(p.name);
    return names;
  }
  std::unique_ptr<App> app_;
};

TEST_F(GptApp, EveryStageOfItsShapeDrawsAndRightWalksOnlyThose) {
  start();
  frame();
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  const std::vector<Stage> shape = stages_of_shape(ModelStacks::DecoderOnly);
  for (Stage s : {Stage::EncoderAttention, Stage::EncoderAddNorm, Stage::EncoderFeedForward, Stage::CrossAttention})
    EXPECT_EQ(std::count(shape.begin(), shape.end(), s), 0) << stage_name(s);
  // Right from the tokens visits each stage of the shape once, in the table's order, and comes back.
  std::vector<Stage> visited{app_->stage()};
  for (size_t i = 0; i < shape.size(); ++i) {
    frame(GLFW_KEY_RIGHT);
    frame();
    visited.push_back(app_->stage());
  }
  visited.pop_back();
  EXPECT_EQ(visited, shape);
  EXPECT_EQ(app_->stage(), Stage::Tokens);
  // Each stage draws from the trace without an error, with its own pictures.
  const struct {
    Stage stage;
    const char* map;  // a heatmap it must draw ("": none)
  } expect[] = {{Stage::Tokens, "thumbnail_6"},         {Stage::Embedding, "decoder_input"},
                {Stage::Positional, "sinusoidal_similarity"}, {Stage::EncoderQkv, "q"},
                {Stage::DecoderAttention, "attention"}, {Stage::EncoderConcat, ""},
                {Stage::DecoderAddNorm, ""},           {Stage::DecoderFeedForward, ""},
                {Stage::AllHeads, ""},                 {Stage::Output, ""},
                {Stage::Decoding, ""},                 {Stage::Interventions, ""},
                {Stage::Training, "training_self_head"}};
  for (const auto& e : expect) {
    SCOPED_TRACE(stage_name(e.stage));
    ASSERT_TRUE(app_->go_to(stage_name(e.stage))) << app_->state().error();
    frame();
    frame();
    EXPECT_EQ(app_->stage(), e.stage);
    EXPECT_TRUE(app_->state().error().empty()) << app_->state().error();
    EXPECT_EQ(app_->attention().kind, AttentionKind::Decoder);
    EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 200);
    if (e.map[0]) {
      EXPECT_TRUE(drawn().count(e.map)) << e.map;
    }
    EXPECT_FALSE(drawn().count("thumbnail_7")) << "a decoder-only model's path has seven pictures";
  }
  EXPECT_EQ(text_argument_errors(), 0);
}

TEST_F(GptApp, TheStagesItLacksAreRefusedByName) {
  start();
  frame();
  const struct {
    const char* missing;
    Stage shown;
  } refused[] = {{"encoder-attention", Stage::DecoderAttention},
                 {"cross-attention", Stage::DecoderAttention},
                 {"encoder-feed-forward", Stage::DecoderFeedForward}};
  for (const auto& r : refused) {
    SCOPED_TRACE(r.missing);
    ASSERT_TRUE(app_->go_to("decoder-attention"));
    EXPECT_FALSE(app_->go_to(r.missing));
    EXPECT_EQ(app_->stage(), r.shown);
    EXPECT_NE(app_->state().error().find(r.missing), std::string::npos) << app_->state().error();
  }
  ASSERT_TRUE(app_->go_to("decoder-attention"));
  app_->select_head({AttentionKind::Cross, 0, 0});
  EXPECT_EQ(app_->stage(), Stage::DecoderAttention);
  // T opens the Training stage: a GPT can be trained here too (the gpt-classroom recipe).
  frame(GLFW_KEY_T);
  frame();
  EXPECT_EQ(app_->stage(), Stage::Training);
}

TEST_F(GptApp, AStageAskedForOnTheCommandLineThatItLacksIsSaidAndItsCounterpartShown) {
  start("encoder-attention");
  frame();
  EXPECT_EQ(app_->stage(), Stage::DecoderAttention);
  ASSERT_TRUE(app_->dialog().current());
  const std::string problem = app_->dialog().current()->problem;
  EXPECT_NE(problem.find("encoder-attention"), std::string::npos) << problem;
  EXPECT_NE(problem.find("decoder-attention"), std::string::npos) << problem;
}

}  // namespace
}  // namespace sf::gui
