// The views that teach the connections between stages, checked for their numbers without a window: an attention
// cell opened into its computation equals the trace's score and output; the line view's lines carry the
// trace's probabilities; a token's projection equals the trace's q, k and v; each stage's input, as the panels
// find it, is what the forward pass really read (for post- and pre-norm models); the diverging scale is
// centred, symmetric and uniform in lightness; decoder rows are labelled "input -> predicted".
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cmath>

#include "gui/app.h"
#include "gui/panels/attention_cell_panel.h"
#include "gui/panels/attention_lines_panel.h"
#include "gui/panels/qkv_panel.h"
#include "gui/render/colormap.h"
#include "gui/render/item_placements.h"
#include "gui/render/map_view.h"
#include "gui/stage_tensors.h"
#include "headless_imgui.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

const std::string kPreNormModel =
    std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny_norm_first.safetensors";

class ShippedModelViews : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(state.load_model(shipped_model_path("de-en"))) << state.error();
    ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  }
  AppState state;
};

// [SECTION] the opened attention cell

TEST_F(ShippedModelViews, AnOpenedCellsSumIsTheTracesScore) {
  const Config& c = state.model()->config;
  int cells = 0;
  for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Decoder, AttentionKind::Cross})
    for (int layer = 0; layer < 3; ++layer) {
      const AttentionTrace* a = selected_attention(state.trace(), {kind, layer, 0});
      ASSERT_NE(a, nullptr);
      for (int head : {0, 3, 7})
        for (int row : {0, 4, 9})
          for (int col : {0, 2, 8}) {
            const AttentionCell cell = expand_attention_cell(*a, head, row, col);
            ASSERT_EQ(cell.head_dim, c.head_dim());
            // sum_d q_d k_d / sqrt(D), formed from the numbers shown, against the forward pass's score.
            EXPECT_NEAR(cell.scaled, a->scores[static_cast<size_t>(head)](row, col), 1e-5f)
                << to_string(kind) << "." << layer << "." << head << " (" << row << ", " << col << ")";
            EXPECT_NEAR(cell.dot / std::sqrt(static_cast<float>(c.head_dim())), cell.scaled,
                        1e-6f * std::max(1.0f, std::abs(cell.scaled)));
            float products = 0;
            for (int d = 0; d < cell.head_dim; ++d) {
              EXPECT_EQ(cell.products(d), a->q[static_cast<size_t>(head)](row, d) * a->k[static_cast<size_t>(head)](col, d));
              products += cell.products(d);
            }
            EXPECT_NEAR(products, cell.dot, 1e-4f);
            EXPECT_EQ(cell.prob, a->probs[static_cast<size_t>(head)](row, col));
            EXPECT_EQ(cell.blocked, a->mask_matrix(static_cast<size_t>(head))(row, col) > 0.5f);
            // The row's weights times V is the head's output row.
            EXPECT_LT((cell.out - a->head_out[static_cast<size_t>(head)].row(row)).cwiseAbs().maxCoeff(), 1e-5f);
            ++cells;
          }
    }
  EXPECT_EQ(cells, 3 * 3 * 27);
  // A blocked cell (the causal mask: row 0 may not read column 2) says so and has probability 0.
  const AttentionCell blocked = expand_attention_cell(*selected_attention(state.trace(), {AttentionKind::Decoder, 0, 0}), 0, 0, 2);
  EXPECT_TRUE(blocked.blocked);
  EXPECT_EQ(blocked.prob, 0.0f);
  // Out of range: nothing (head_dim 0), no crash.
  EXPECT_EQ(expand_attention_cell(*selected_attention(state.trace(), {AttentionKind::Encoder, 0, 0}), 9, 0, 0).head_dim, 0);
  EXPECT_EQ(expand_attention_cell(*selected_attention(state.trace(), {AttentionKind::Encoder, 0, 0}), 0, 99, 0).head_dim, 0);
}

// [SECTION] the line view

TEST_F(ShippedModelViews, TheLineViewsWeightsAreTheTracesProbabilities) {
  const AttentionTrace& a = state.trace().decoder[2].cross_attn;
  std::vector<bool> shown(8, false);
  shown[2] = shown[5] = true;
  const std::vector<AttentionLine> lines = attention_lines(a, shown, 0.01f);
  size_t expected = 0;
  for (int h : {2, 5})
    for (Eigen::Index i = 0; i < a.probs[static_cast<size_t>(h)].size(); ++i) expected += a.probs[static_cast<size_t>(h)].data()[i] >= 0.01f;
  EXPECT_EQ(lines.size(), expected);
  for (const AttentionLine& l : lines) {
    ASSERT_TRUE(l.head == 2 || l.head == 5) << "a hidden head's line";
    EXPECT_EQ(l.weight, a.probs[static_cast<size_t>(l.head)](l.query, l.key));
  }
  // Every query of a shown head keeps its strongest line.
  for (Eigen::Index i = 0; i < a.probs[2].rows(); ++i) {
    Eigen::Index best = 0;
    a.probs[2].row(i).maxCoeff(&best);
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const AttentionLine& l) {
      return l.head == 2 && l.query == i && l.key == best;
    })) << "row " << i;
  }
}

// [SECTION] projections and each stage's input

TEST_F(ShippedModelViews, AProjectedRowIsTheTracesQKV) {
  const Config& c = state.model()->config;
  for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Decoder, AttentionKind::Cross}) {
    const AttentionInputs in = attention_inputs(c, state.trace(), kind, 1);
    const AttentionWeights& w = attention_weights(state.model()->weights, kind, 1);
    const AttentionTrace& a = *selected_attention(state.trace(), {kind, 1, 0});
    for (int head : {0, 5})
      for (int row : {0, 3, 7}) {
        EXPECT_LT((project_head_row(*in.queries_from, w.q, head, c.head_dim(), row) - a.q[static_cast<size_t>(head)].row(row))
                      .cwiseAbs().maxCoeff(), 2e-5f) << to_string(kind) << " q head " << head << " row " << row;
        EXPECT_LT((project_head_row(*in.keys_from, w.k, head, c.head_dim(), row) - a.k[static_cast<size_t>(head)].row(row))
                      .cwiseAbs().maxCoeff(), 2e-5f) << to_string(kind) << " k";
        EXPECT_LT((project_head_row(*in.keys_from, w.v, head, c.head_dim(), row) - a.v[static_cast<size_t>(head)].row(row))
                      .cwiseAbs().maxCoeff(), 2e-5f) << to_string(kind) << " v";
      }
  }
}

// The inputs the panels show, for both norm placements: each one, pushed through its step, gives the step's
// recorded output.
void expect_inputs_are_what_the_forward_read(const AppState& s) {
  const Config& c = s.model()->config;
  for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Decoder, AttentionKind::Cross})
    for (int layer = 0; layer < (kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers); ++layer) {
      const AttentionInputs in = attention_inputs(c, s.trace(), kind, layer);
      ASSERT_TRUE(in.queries_from && in.keys_from);
      const AttentionWeights& w = attention_weights(s.model()->weights, kind, layer);
      const AttentionTrace& a = *selected_attention(s.trace(), {kind, layer, 0});
      Mat q, k;
      linear_forward(*in.queries_from, w.q, q);
      linear_forward(*in.keys_from, w.k, k);
      EXPECT_LT((q.leftCols(c.head_dim()) - a.q[0]).cwiseAbs().maxCoeff(), 2e-5f) << to_string(kind) << " layer " << layer;
      EXPECT_LT((k.leftCols(c.head_dim()) - a.k[0]).cwiseAbs().maxCoeff(), 2e-5f) << to_string(kind) << " layer " << layer;
    }
  for (bool encoder : {true, false}) {
    const int layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
    for (int layer = 0; layer < layers; ++layer) {
      for (const ResidualBlock& b : residual_blocks(c, s.trace(), encoder, layer))
        EXPECT_LT((*b.input + *b.sublayer_out - *b.sum).cwiseAbs().maxCoeff(), 1e-5f) << b.name << " layer " << layer;
      const FeedForwardTrace& f = encoder ? s.trace().encoder[static_cast<size_t>(layer)].ffn
                                          : s.trace().decoder[static_cast<size_t>(layer)].ffn;
      const FeedForwardWeights& fw = encoder ? s.model()->weights.encoder_layers[static_cast<size_t>(layer)].ffn
                                             : s.model()->weights.decoder_layers[static_cast<size_t>(layer)].ffn;
      Mat hidden;
      linear_forward(*feed_forward_input(c, s.trace(), encoder, layer), fw.fc1, hidden);
      EXPECT_LT((hidden - f.hidden_pre).cwiseAbs().maxCoeff(), 2e-5f) << (encoder ? "encoder" : "decoder") << " ffn " << layer;
    }
  }
}

TEST_F(ShippedModelViews, EachStagesInputIsWhatTheForwardReadPostNorm) { expect_inputs_are_what_the_forward_read(state); }

TEST(PreNormModelViews, EachStagesInputIsWhatTheForwardReadPreNorm) {
  AppState s;
  ASSERT_TRUE(s.load_model(kPreNormModel)) << s.error();
  ASSERT_EQ(s.model()->config.norm_placement, NormPlacement::Pre);
  ASSERT_TRUE(s.set_sentence("Ein Mann mit einer Frau.")) << s.error();
  expect_inputs_are_what_the_forward_read(s);
}

// [SECTION] labels

TEST_F(ShippedModelViews, DecoderRowsSayWhatTheyReadAndWhatTheyPredict) {
  const std::vector<std::string> rows = state.decoder_row_labels();
  ASSERT_EQ(rows.size(), state.trace().tgt.ids.size());
  EXPECT_EQ(rows[0], "<bos> -> a");
  EXPECT_EQ(rows[5], "orange -> shirt");
  EXPECT_EQ(rows.back(), ". -> <eos>");
  // An unfinished decoding's last row predicts what is not chosen yet.
  ASSERT_TRUE(state.restart());
  ASSERT_TRUE(state.step());
  EXPECT_EQ(state.decoder_row_labels().back(), "a -> ?");
}

TEST(UnknownWordLabels, TheMapsShowWhatTheModelReadAndTheTipWhatWasTyped) {
  AppState state;
  ASSERT_TRUE(state.load_model(shipped_model_path("de-en"))) << state.error();
  ASSERT_TRUE(state.set_sentence("Ein Quantenphysiker steht.")) << state.error();
  const std::vector<std::string> labels = state.source_labels(), tips = state.source_label_tips();
  ASSERT_EQ(labels.size(), 6u);
  EXPECT_EQ(labels[2], "<unk>");
  EXPECT_NE(tips[2].find("\"Quantenphysiker\" is not in the vocabulary"), std::string::npos) << tips[2];
  EXPECT_EQ(labels[1], "ein");
}

// [SECTION] the diverging scale

TEST(DivergingScale, ZeroIsTheCentreColourAndBothSidesMirrorInLightness) {
  // A symmetric range puts 0 at the middle: the centre colour, a dark grey (L* 12, no hue).
  EXPECT_FLOAT_EQ(colormap_position(0.0f, -3.5f, 3.5f), 0.5f);
  const Lab centre = srgb_to_lab(colormap_rgb(Colormap::Diverging, 0.5f));
  EXPECT_NEAR(centre.l, 12.0f, 0.3f);
  EXPECT_NEAR(centre.a, 0.0f, 0.3f);
  EXPECT_NEAR(centre.b, 0.0f, 0.3f);
  // Lightness grows linearly with |value| on both sides (perceptually uniform), equally for -x and +x; the
  // sides differ in hue (blue below 0, orange above).
  for (int i = 0; i <= 50; ++i) {
    const float t = i / 100.0f;
    const Lab below = srgb_to_lab(colormap_rgb(Colormap::Diverging, 0.5f - t));
    const Lab above = srgb_to_lab(colormap_rgb(Colormap::Diverging, 0.5f + t));
    EXPECT_NEAR(below.l, 12.0f + 58.0f * 2 * t, 0.3f) << "at " << -t;
    EXPECT_NEAR(above.l, below.l, 0.3f) << "at +-" << t;
    if (i > 10) {  // (near 0 the colour is a grey on both sides)
      EXPECT_LT(below.b, -5.0f) << "negative values are blue";
      EXPECT_GT(above.a, 5.0f) << "positive values are orange";
    }
  }
}

// [SECTION] the map widget's zoom

// One headless frame drawing `view` in a window at `size`, its rows labelled, as presentation mode asks
// (always_label: rows never lower than a readable label; the built-in font is 13 px, so 10 px a row).
void draw_map_frame(MapView& view, const std::vector<std::string>& labels, ImVec2 size) {
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(1000, 900));
  ImGui::Begin("map");
  MapAxis rows;
  rows.labels = &labels;
  MapViewOptions o;
  o.always_label = true;
  view.draw("zoom_test", size, rows, MapAxis{}, o);
  ImGui::End();
  ImGui::Render();
}

TEST(MapViewZoom, TheLeastZoomFollowsTheRoomBackDownAndAChosenZoomHolds) {
  testing::start_headless_imgui(true, ImVec2(1000, 900));
  MapView view;
  std::vector<float> values(40 * 40, 0.5f);
  view.heatmap().set_values(values.data(), 40, 40, 0.0f, 1.0f);
  const std::vector<std::string> labels(40, "word");
  // 200 px for 40 rows: 5 px a row, below a readable label: the map zooms in to 10 px a row.
  draw_map_frame(view, labels, ImVec2(600, 200));
  EXPECT_NEAR(view.zoom(), 2.0f, 0.01f);
  // Room enough again (a caption of another height): the whole map, not the zoom one short frame raised.
  draw_map_frame(view, labels, ImVec2(600, 800));
  EXPECT_FLOAT_EQ(view.zoom(), 1.0f) << "the zoom stayed raised after the room came back";
  EXPECT_FLOAT_EQ(view.window().rows, 40.0f);
  // A zoom the user chose holds as the room changes.
  view.set_zoom(3.0f);
  draw_map_frame(view, labels, ImVec2(600, 800));
  draw_map_frame(view, labels, ImVec2(600, 700));
  EXPECT_FLOAT_EQ(view.zoom(), 3.0f);
  ImGui::DestroyContext();
}

// [SECTION] the app: script commands and clicks open the views

class AppViews : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::start_headless_imgui(true, ImVec2(1600, 1000));
    AppOptions options;
    options.model_path = shipped_model_path("de-en");
    options.sentence = kDefaultSentence;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
  }
  void TearDown() override {
    app_.reset();
    ImGui::DestroyContext();
  }
  void frame(ImVec2 mouse = ImVec2(-1, -1), bool down = false) {
    ImGui::GetIO().MouseDown[0] = down;
    testing::headless_frame(*app_, -1, mouse);
  }
  const HeatmapPlacement* placed(const std::string& name) const {
    for (const auto& p : heatmap_placements())
      if (p.name == name) return &p;
    return nullptr;
  }
  std::unique_ptr<App> app_;
};

TEST_F(AppViews, ClickingACellOpensItsComputation) {
  app_->select_head({AttentionKind::Cross, 2, 2});
  frame();
  frame();
  const HeatmapPlacement* map = placed("attention");
  ASSERT_NE(map, nullptr);
  // A click (press and release without moving) on cell (5, 6).
  const ImVec2 at(map->min.x + 6.5f * (map->max.x - map->min.x) / map->cols, map->min.y + 5.5f * (map->max.y - map->min.y) / map->rows);
  frame(at, false);
  frame(at, true);
  frame(at, false);
  frame(at, false);
  ASSERT_TRUE(app_->expanded_attention_cell().has_value()) << "the click did not open the cell";
  const AttentionCell& cell = *app_->expanded_attention_cell();
  EXPECT_EQ(cell.row, 5);
  EXPECT_EQ(cell.col, 6);
  EXPECT_EQ(cell.head, 2);
  EXPECT_NEAR(cell.scaled, app_->state().trace().decoder[2].cross_attn.scores[2](5, 6), 1e-5f);
  // The column shows the steps, with the score and the probability where a test and a lesson can find them.
  EXPECT_NE(placed("cell_q"), nullptr);
  EXPECT_NE(placed("cell_row_probs"), nullptr);
  bool score_shown = false;
  for (const auto& item : item_placements())
    if (item.name == "cell.score") score_shown = std::abs(item.value - cell.scaled) < 1e-6f;
  EXPECT_TRUE(score_shown);
  // Another head closes it.
  app_->select_head({AttentionKind::Cross, 2, 3});
  frame(ImVec2(-1, -1));
  EXPECT_FALSE(app_->expanded_attention_cell().has_value());
}

TEST_F(AppViews, AnOpenedCellFollowsTheTraceWhenTheModelChanges) {
  app_->select_head({AttentionKind::Cross, 2, 2});
  frame();  // (a new head closes an opened cell: open it on the head shown)
  app_->expand_attention_cell(5, 6);
  frame();
  ASSERT_TRUE(app_->expanded_attention_cell().has_value());
  const float before = app_->expanded_attention_cell()->scaled;
  // A head of the first decoder layer off: the queries of layer 2's cross-attention change, and the cell too.
  Interventions iv = app_->state().interventions();
  iv.heads_off.push_back({AttentionKind::Decoder, 0, 0});
  ASSERT_TRUE(app_->set_interventions(iv));
  frame();
  ASSERT_TRUE(app_->expanded_attention_cell().has_value());
  const float after = app_->state().trace().decoder[2].cross_attn.scores[2](5, 6);
  EXPECT_NE(before, after) << "the intervention did not reach the cell: pick another";
  EXPECT_NEAR(app_->expanded_attention_cell()->scaled, after, 1e-5f) << "the opened cell shows the old numbers";
}

TEST_F(AppViews, ClickingATokenInQOpensItsProjectionWithTheTracesRow) {
  app_->select_head({AttentionKind::Encoder, 1, 3});
  ASSERT_TRUE(app_->go_to("encoder-qkv"));
  frame();
  frame();
  const HeatmapPlacement* q = placed("q");
  ASSERT_NE(q, nullptr);
  const auto click_row = [&](int row) {
    const ImVec2 at(q->min.x + 0.5f * (q->max.x - q->min.x) / q->cols,
                    q->min.y + (row + 0.5f) * (q->max.y - q->min.y) / q->rows);
    frame(at, false);
    frame(at, true);
    frame(at, false);
    frame(ImVec2(-1, -1), false);
  };
  const auto check_row = [&](int row) {
    const HeatmapPlacement* out = placed("qkv_out_0");
    ASSERT_NE(out, nullptr) << "no projection opened";
    const Mat& traced = app_->state().trace().encoder[1].self_attn.q[3];
    ASSERT_EQ(out->cols, traced.cols());
    for (int d = 0; d < out->cols; ++d) EXPECT_NEAR(out->heatmap->value(0, d), traced(row, d), 1e-4f) << "row " << row << ", " << d;
    bool diff_shown = false;
    for (const auto& item : item_placements())
      if (item.name == "qkv.projection" && item.index == 0) diff_shown = item.value < 1e-4f;
    EXPECT_TRUE(diff_shown) << "the equation's row differs from the trace's";
  };
  click_row(4);
  check_row(4);
  // Another sentence: the opened row's numbers are the new trace's.
  ASSERT_TRUE(app_->set_sentence("Zwei Hunde spielen im Schnee."));
  frame();
  frame();
  check_row(4);  // (still open: the same head, a row the new sentence has)
}

TEST_F(AppViews, TheViewSwitchShowsLinesInsteadOfTheMap) {
  app_->select_head({AttentionKind::Encoder, 1, 2});
  app_->set_attention_view(AttentionView::Lines);
  frame();
  frame();
  EXPECT_EQ(placed("attention"), nullptr) << "the heatmap is replaced by the lines";
  int queries = 0, keys = 0, heads_on = 0;
  for (const auto& item : item_placements()) {
    queries += item.name == "lines.query";
    keys += item.name == "lines.key";
    heads_on += item.name == "lines.head" && item.text == "on";
  }
  EXPECT_EQ(queries, 13);
  EXPECT_EQ(keys, 13);
  EXPECT_EQ(heads_on, 1) << "the selected head alone at first";
  app_->set_attention_view(AttentionView::Heatmap);
  frame();
  EXPECT_NE(placed("attention"), nullptr);
}

TEST_F(AppViews, ZoomShowsAWindowAndAMinimapAndKeepsTheCellInView) {
  app_->select_head({AttentionKind::Encoder, 1, 2});
  frame();
  app_->zoom_attention(4.0f, 10, 11);
  frame();
  frame();
  const HeatmapPlacement* map = placed("attention");
  ASSERT_NE(map, nullptr);
  EXPECT_NEAR(map->window.cols, 13.0f / 4, 0.01f);
  EXPECT_LE(map->window.col0, 11.0f);
  EXPECT_GE(map->window.col0 + map->window.cols, 12.0f);
  EXPECT_LE(map->window.row0, 10.0f);
  EXPECT_GE(map->window.row0 + map->window.rows, 11.0f);
  EXPECT_NE(placed("minimap:attention"), nullptr);
  // Zoomed in, every row in view has its label, in full-size type.
  int labels = 0;
  for (const auto& item : item_placements())
    if (item.name == "attention.row") {
      ++labels;
      EXPECT_EQ(item.value, ImGui::GetFontSize());
    }
  EXPECT_GE(labels, 3);
}

}  // namespace
}  // namespace sf::gui
