// An encoder-only model (BERT) in the app: its sentence is read whole between [CLS] and [SEP] in one traced pass
// (the core's forward, the same numbers), every stage of its shape draws (the attention stage says each token sees
// both sides), the stages it lacks are refused by name, interventions change its trace, and fill in the blank
// works: a click on a token (or the script's mask-token) turns its input id into config.mask_id and back, and the
// output stage's bars and heads are the trace's. A model without [MASK]: the click does nothing, and says why.
// (The core's encoder-only numbers against PyTorch: tests/unit/test_shapes_pytorch.cpp.)
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gui/app.h"
#include "gui/app_state.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "gui/script/script.h"
#include "gui/stages.h"
#include "headless_imgui.h"
#include "transformer/forward.h"

namespace sf::gui {
namespace {

const std::string kShapes = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/shapes/";
const std::string kMlm = kShapes + "bert_mlm.model.safetensors";     // [MASK] is id 14
const std::string kNoMask = kShapes + "bert_post.model.safetensors";  // no mask token
const std::string kSentence = "the dog sees a red ball";  // ids 4 6 9 5 12 13 in the fixtures' word vocabulary
const std::vector<int> kIds = {2, 4, 6, 9, 5, 12, 13, 3};  // [CLS] the dog sees a red ball [SEP]

std::vector<int> ids_of(const std::vector<Token>& tokens) {
  std::vector<int> out;
  for (const Token& t : tokens) out.push_back(t.id);
  return out;
}

float max_difference(const Mat& a, const Mat& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e30f;
  return (a - b).cwiseAbs().maxCoeff();
}

// [SECTION] the state: one pass over [CLS] sentence [SEP], the blanks

TEST(EncoderOnly, TheStateReadsTheSentenceBetweenClsAndSepInTheCoresForward) {
  for (const std::string& file : {kMlm, kNoMask, kShapes + "bert_pre.model.safetensors"}) {
    SCOPED_TRACE(file);
    AppState state;
    ASSERT_TRUE(state.load_model(file)) << state.error();
    ASSERT_TRUE(state.set_sentence(kSentence)) << state.error();
    ASSERT_TRUE(state.ready()) << state.error();
    EXPECT_TRUE(state.encoder_only());
    EXPECT_FALSE(state.decoder_only());
    EXPECT_EQ(ids_of(state.source_tokens()), kIds);
    const std::vector<std::string> labels = state.source_labels();
    ASSERT_EQ(labels.size(), kIds.size());
    EXPECT_EQ(labels.front(), "[CLS]");
    EXPECT_EQ(labels.back(), "[SEP]");
    EXPECT_EQ(labels[2], "dog");
    // The trace is the core's forward over the same ids: logits and probs at every position, (S, V).
    const Model& m = *state.model();
    const Trace reference = forward(m.config, m.weights, kIds, {}, {});
    EXPECT_EQ(state.trace().probs.rows(), static_cast<Eigen::Index>(kIds.size()));
    EXPECT_EQ(state.trace().probs.cols(), m.config.src_vocab_size);
    EXPECT_EQ(max_difference(state.trace().probs, reference.probs), 0.0f);
    EXPECT_EQ(max_difference(state.trace().encoder.back().out, reference.encoder.back().out), 0.0f);
    // The likeliest token at every position: the argmax of each row.
    const std::vector<int> predicted = state.predicted_ids();
    ASSERT_EQ(predicted.size(), kIds.size());
    for (size_t p = 0; p < kIds.size(); ++p) {
      Eigen::Index best = 0;
      reference.probs.row(static_cast<Eigen::Index>(p)).maxCoeff(&best);
      EXPECT_EQ(predicted[p], static_cast<int>(best)) << p;
    }
    // Nothing to decode: no decoder, no steps, no translation.
    EXPECT_FALSE(state.decoder());
    EXPECT_TRUE(state.translation().empty());
    EXPECT_FALSE(state.step());
    EXPECT_TRUE(state.translation_as_trained().empty());
  }
}

TEST(EncoderOnly, AMaskedTokenReadsMaskIdAndComesBack) {
  AppState state;
  ASSERT_TRUE(state.load_model(kMlm)) << state.error();
  ASSERT_TRUE(state.set_sentence(kSentence)) << state.error();
  const Model& m = *state.model();
  ASSERT_EQ(m.config.mask_id, 14);
  const Trace plain = state.trace();
  // "dog" (position 2) behind [MASK]: the input id is mask_id, the pass is the core's over those ids, and the
  // position's distribution changes.
  ASSERT_TRUE(state.toggle_mask(2)) << state.error();
  std::vector<int> masked = kIds;
  masked[2] = m.config.mask_id;
  EXPECT_EQ(ids_of(state.source_tokens()), masked);
  EXPECT_EQ(state.trace().src.ids, masked);
  EXPECT_EQ(state.masked_positions(), std::vector<int>{2});
  EXPECT_EQ(state.hidden_id(2), 6);  // "dog"
  EXPECT_EQ(state.hidden_id(3), -1);
  EXPECT_EQ(state.source_labels()[2], "[MASK]");
  EXPECT_EQ(max_difference(state.trace().probs, forward(m.config, m.weights, masked, {}, {}).probs), 0.0f);
  EXPECT_GT(max_difference(state.trace().probs, plain.probs), 1e-4f);
  // (appended: GCC 12 misreads a + of three strings as an overlapping copy, -Wrestrict)
  const std::string filled = std::string("[").append(state.source_token(state.predicted_ids()[2])).append("]");
  EXPECT_NE(state.filled_in_text().find(filled), std::string::npos) << state.filled_in_text();
  // A second blank, then the first word back.
  ASSERT_TRUE(state.toggle_mask(5)) << state.error();
  EXPECT_EQ(state.masked_positions(), (std::vector<int>{2, 5}));
  ASSERT_TRUE(state.toggle_mask(2)) << state.error();
  EXPECT_EQ(state.masked_positions(), std::vector<int>{5});
  EXPECT_EQ(state.source_tokens()[2].id, 6);
  EXPECT_EQ(state.source_tokens()[5].id, m.config.mask_id);
  ASSERT_TRUE(state.toggle_mask(5)) << state.error();
  EXPECT_EQ(ids_of(state.source_tokens()), kIds);
  EXPECT_EQ(max_difference(state.trace().probs, plain.probs), 0.0f);
  // [CLS], [SEP] and positions past the sentence are refused with a message, the ids kept.
  for (int bad : {0, 7, 8, -1}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(state.toggle_mask(bad));
    EXPECT_FALSE(state.error().empty());
    EXPECT_EQ(ids_of(state.source_tokens()), kIds);
  }
  // A new sentence starts without blanks.
  ASSERT_TRUE(state.toggle_mask(1)) << state.error();
  ASSERT_TRUE(state.set_sentence("a cat runs")) << state.error();
  EXPECT_TRUE(state.masked_positions().empty());
  EXPECT_EQ(ids_of(state.source_tokens()), (std::vector<int>{2, 5, 7, 8, 3}));
}

TEST(EncoderOnly, AModelWithoutAMaskTokenRefusesTheBlankAndSaysWhy) {
  AppState state;
  ASSERT_TRUE(state.load_model(kNoMask)) << state.error();
  ASSERT_TRUE(state.set_sentence(kSentence)) << state.error();
  EXPECT_FALSE(state.why_not_maskable(2).empty());
  EXPECT_FALSE(state.toggle_mask(2));
  EXPECT_NE(state.error().find("[MASK]"), std::string::npos) << state.error();
  EXPECT_EQ(ids_of(state.source_tokens()), kIds);
  // A translator's words cannot be masked either.
  AppState translator;
  ASSERT_TRUE(translator.load_model(default_model_path())) << translator.error();
  ASSERT_TRUE(translator.set_sentence(kDefaultSentence)) << translator.error();
  EXPECT_FALSE(translator.toggle_mask(2));
}

TEST(EncoderOnly, InterventionsChangeTheTraceAsTheCoresForward) {
  AppState state;
  ASSERT_TRUE(state.load_model(kMlm)) << state.error();
  ASSERT_TRUE(state.set_sentence(kSentence)) << state.error();
  ASSERT_TRUE(state.toggle_mask(3)) << state.error();
  const Model& m = *state.model();
  std::vector<int> ids = kIds;
  ids[3] = m.config.mask_id;
  const Trace plain = state.trace();
  Interventions head_off;
  head_off.heads_off.push_back({AttentionKind::Encoder, 0, 1});
  Interventions no_positions;
  no_positions.positional_encoding = false;
  Interventions painted;  // row 3 ([MASK]) may read only itself and [CLS]
  CustomMask mask;
  mask.where = {AttentionKind::Encoder, 1, 0};
  const Eigen::Index S = static_cast<Eigen::Index>(kIds.size());
  mask.blocked = Mat::Zero(S, S);
  for (Eigen::Index k = 1; k < S; ++k)
    if (k != 3) mask.blocked(3, k) = 1.0f;
  painted.custom_masks.push_back(mask);
  for (const Interventions& iv : {head_off, no_positions, painted}) {
    ASSERT_TRUE(state.set_interventions(iv)) << state.error();
    EXPECT_EQ(state.trace().src.ids, ids) << "the blank stays";
    EXPECT_EQ(max_difference(state.trace().probs, forward(m.config, m.weights, ids, {}, iv).probs), 0.0f);
    EXPECT_GT(max_difference(state.trace().probs, plain.probs), 1e-5f);
  }
  // Both sides: with no intervention, the blank's row attends to tokens after it as well as before.
  ASSERT_TRUE(state.set_interventions(Interventions{})) << state.error();
  EXPECT_GT(state.trace().encoder[0].self_attn.probs[0](3, 5), 0.0f);
  // A decoder head names a stack the model does not have: refused, the trace kept.
  Interventions decoder_head;
  decoder_head.heads_off.push_back({AttentionKind::Decoder, 0, 0});
  EXPECT_FALSE(state.set_interventions(decoder_head));
  EXPECT_EQ(max_difference(state.trace().probs, plain.probs), 0.0f);
}

TEST(EncoderOnly, ItsStagesAreTheEncodersAndTheOutput) {
  const std::vector<Stage> shape = stages_of_shape(ModelStacks::EncoderOnly);
  for (Stage s : {Stage::DecoderAttention, Stage::CrossAttention, Stage::DecoderAddNorm, Stage::DecoderFeedForward,
                  Stage::Decoding})
    EXPECT_EQ(std::count(shape.begin(), shape.end(), s), 0) << stage_name(s);
  for (Stage s : {Stage::Tokens, Stage::Embedding, Stage::Positional, Stage::EncoderQkv, Stage::EncoderAttention,
                  Stage::EncoderConcat, Stage::EncoderAddNorm, Stage::EncoderFeedForward, Stage::AllHeads,
                  Stage::Output, Stage::Interventions, Stage::Training})
    EXPECT_EQ(std::count(shape.begin(), shape.end(), s), 1) << stage_name(s);
}

// [SECTION] the app: every stage of the shape, clicks that mask, the output's bars and heads

class BertApp : public ::testing::Test {
 protected:
  void start(const std::string& model = kMlm, const std::string& stage = "") {
    testing::start_headless_imgui(true, ImVec2(1600, 1000));
    AppOptions options;
    options.model_path = model;
    options.sentence = kSentence;
    options.stage = stage;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  void frame(int key = -1) { testing::headless_frame(*app_, key); }
  void frame_at(ImVec2 mouse, bool down) {
    ImGui::GetIO().MouseDown[0] = down;
    testing::headless_frame(*app_, -1, mouse);
  }
  // A click (press, release) at the middle of the item `name` with `index`; false when none was drawn.
  bool click(const std::string& name, int index) {
    const ItemPlacement* item = find(name, index);
    if (!item) return false;
    const ImVec2 at((item->min.x + item->max.x) / 2, (item->min.y + item->max.y) / 2);
    frame_at(at, false);
    frame_at(at, true);
    frame_at(at, false);
    app_->mutable_state().finish_background();
    frame_at(ImVec2(-1, -1), false);
    return true;
  }
  static const ItemPlacement* find(const std::string& name, int index) {
    for (const ItemPlacement& p : item_placements())
      if (p.name == name && p.index == index) return &p;
    return nullptr;
  }
  std::set<std::string> drawn() const {
    std::set<std::string> names;
    for (const auto& p : heatmap_placements()) names.insert(p.name);
    return names;
  }
  std::unique_ptr<App> app_;
};

TEST_F(BertApp, EveryStageOfItsShapeDrawsAndRightWalksOnlyThose) {
  start();
  frame();
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  const std::vector<Stage> shape = stages_of_shape(ModelStacks::EncoderOnly);
  std::vector<Stage> visited{app_->stage()};
  for (size_t i = 0; i < shape.size(); ++i) {
    frame(GLFW_KEY_RIGHT);
    frame();
    visited.push_back(app_->stage());
  }
  visited.pop_back();
  EXPECT_EQ(visited, shape);
  EXPECT_EQ(app_->stage(), Stage::Tokens);
  const struct {
    Stage stage;
    const char* map;   // a heatmap it must draw ("": none)
    const char* item;  // an item it must record ("": none)
  } expect[] = {{Stage::Tokens, "thumbnail_6", "token.predicted"},
                {Stage::Embedding, "encoder_input", ""},
                {Stage::Positional, "", ""},
                {Stage::EncoderQkv, "q", ""},
                {Stage::EncoderAttention, "attention", "attention.both_sides"},
                {Stage::EncoderConcat, "", ""},
                {Stage::EncoderAddNorm, "", ""},
                {Stage::EncoderFeedForward, "", ""},
                {Stage::AllHeads, "", ""},
                {Stage::Output, "", "fill.bar"},
                {Stage::Interventions, "", ""},
                // (training a BERT: its encoder's self-attention and its blank filled in, bert-classroom)
                {Stage::Training, "training_encoder_head", "training.filled"}};
  for (const auto& e : expect) {
    SCOPED_TRACE(stage_name(e.stage));
    ASSERT_TRUE(app_->go_to(stage_name(e.stage))) << app_->state().error();
    frame();
    frame();
    EXPECT_EQ(app_->stage(), e.stage);
    EXPECT_TRUE(app_->state().error().empty()) << app_->state().error();
    EXPECT_EQ(app_->attention().kind, AttentionKind::Encoder);
    EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 200);
    if (e.map[0]) {
      EXPECT_TRUE(drawn().count(e.map)) << e.map;
    }
    if (e.item[0]) {
      bool found = false;
      for (const ItemPlacement& p : item_placements()) found |= p.name == e.item;
      EXPECT_TRUE(found) << e.item;
    }
    EXPECT_FALSE(drawn().count("thumbnail_7")) << "an encoder-only model's path has seven pictures";
  }
  // The stages it lacks: refused by name, the nearest shown.
  for (const char* missing : {"decoder-attention", "cross-attention", "decoding"}) {
    SCOPED_TRACE(missing);
    EXPECT_FALSE(app_->go_to(missing));
    EXPECT_NE(app_->state().error().find(missing), std::string::npos) << app_->state().error();
  }
  EXPECT_EQ(text_argument_errors(), 0);
}

TEST_F(BertApp, ClickingATokenMasksItAndTheOutputShowsTheTracesPredictionsAndHeads) {
  start();
  frame();
  frame();
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  const int mask_id = app_->state().model()->config.mask_id;
  // The tokens stage: a click on "dog" (position 2) masks it.
  ASSERT_TRUE(click("token.source", 2)) << "the tokens stage drew no token 2";
  EXPECT_EQ(app_->state().source_tokens()[2].id, mask_id);
  EXPECT_EQ(app_->state().trace().src.ids[2], mask_id);
  ASSERT_TRUE(find("token.masked", 2)) << "the blank is not drawn as one";
  // A click on [CLS] does nothing.
  ASSERT_TRUE(click("token.source", 0));
  EXPECT_EQ(app_->state().masked_positions(), std::vector<int>{2});

  // The output stage opens on the blank: its bars are the trace's row 2, the hidden word marked.
  ASSERT_TRUE(app_->go_to("output"));
  frame();
  frame();
  const Trace& t = app_->state().trace();
  const ItemPlacement* position = find("fill.position", 2);
  ASSERT_TRUE(position) << "the output stage does not show position 2";
  int bars = 0;
  bool hidden_drawn = false;
  for (const ItemPlacement& p : item_placements()) {
    if (p.name != "fill.bar" && p.name != "fill.bar_hidden") continue;
    ++bars;
    EXPECT_EQ(p.value, t.probs(2, p.index)) << p.text;
    EXPECT_EQ(p.text, app_->state().source_token(p.index));
    if (p.name == "fill.bar_hidden") {
      hidden_drawn = true;
      EXPECT_EQ(p.index, 6);  // "dog"
    }
  }
  EXPECT_GE(bars, 3);
  EXPECT_TRUE(hidden_drawn);
  // The bars are the likeliest: the first is the row's argmax.
  Eigen::Index best = 0;
  t.probs.row(2).maxCoeff(&best);
  EXPECT_EQ(app_->state().predicted_ids()[2], static_cast<int>(best));
  // Which heads looked where: a cell per layer x head, the strongest key of row 2 of its map.
  const Config& c = app_->state().model()->config;
  const std::vector<std::string> labels = app_->state().source_labels();
  for (int l = 0; l < c.n_encoder_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h) {
      SCOPED_TRACE(::testing::Message() << "layer " << l << " head " << h);
      const ItemPlacement* cell = find("fill.head", l * c.n_heads + h);
      ASSERT_TRUE(cell);
      Eigen::Index strongest = 0;
      t.encoder[static_cast<size_t>(l)].self_attn.probs[static_cast<size_t>(h)].row(2).maxCoeff(&strongest);
      EXPECT_EQ(cell->text, labels[static_cast<size_t>(strongest)]);
      EXPECT_EQ(cell->value, t.encoder[static_cast<size_t>(l)].self_attn.probs[static_cast<size_t>(h)](2, strongest));
    }
  // A head switched off says so in its cell.
  Interventions iv;
  iv.heads_off.push_back({AttentionKind::Encoder, 1, 0});
  ASSERT_TRUE(app_->mutable_state().set_interventions(iv)) << app_->state().error();
  frame();
  frame();
  EXPECT_TRUE(find("fill.head_off", c.n_heads));
  EXPECT_FALSE(find("fill.head", c.n_heads));
  // The output stage's sentence row: a click on the blank brings "dog" back.
  ASSERT_TRUE(click("fill.token_masked", 2));
  EXPECT_EQ(app_->state().source_tokens()[2].id, 6);
  EXPECT_TRUE(app_->state().masked_positions().empty());
  // ... and a click on "red" (5) masks it, and the stage shows position 5.
  ASSERT_TRUE(click("fill.token", 5));
  EXPECT_EQ(app_->state().source_tokens()[5].id, mask_id);
  frame();
  EXPECT_TRUE(find("fill.position", 5));
  EXPECT_EQ(text_argument_errors(), 0);
}

TEST_F(BertApp, WithoutAMaskTokenAClickChangesNothing) {
  start(kNoMask);
  frame();
  frame();
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  ASSERT_TRUE(click("token.source", 2));
  EXPECT_EQ(ids_of(app_->state().source_tokens()), kIds);
  EXPECT_TRUE(app_->state().masked_positions().empty());
}

TEST_F(BertApp, TheScriptsMaskTokenAndUnmaskToken) {
  start();
  frame();
  std::string error;
  auto script = parse_script("mask-token 4\nmask-token 4\nmask-token 0\n", "t.script", error, ScriptParse::Strict);
  ASSERT_TRUE(script) << error;
  ScriptRunner runner(std::move(*script), /*interactive=*/false);
  std::vector<std::string> log;
  for (int i = 0; i < 1000 && !runner.finished(); ++i) {
    runner.before_frame(*app_, log);
    frame();
  }
  ASSERT_TRUE(runner.finished());
  EXPECT_EQ(app_->state().masked_positions(), std::vector<int>{4});  // (a second mask-token 4 keeps it masked)
  EXPECT_EQ(app_->state().trace().src.ids[4], app_->state().model()->config.mask_id);
  ASSERT_EQ(log.size(), 1u) << "mask-token 0 ([CLS]) is refused with its line";
  EXPECT_NE(log[0].find("[CLS]"), std::string::npos) << log[0];
  auto back = parse_script("unmask-token 4\n", "t.script", error, ScriptParse::Strict);
  ASSERT_TRUE(back) << error;
  ScriptRunner unmask(std::move(*back), false);
  for (int i = 0; i < 1000 && !unmask.finished(); ++i) {
    unmask.before_frame(*app_, log);
    frame();
  }
  EXPECT_EQ(ids_of(app_->state().source_tokens()), kIds);
}

}  // namespace
}  // namespace sf::gui
