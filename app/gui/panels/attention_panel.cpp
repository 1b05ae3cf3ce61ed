#include "gui/panels/attention_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "gui/panels/interventions_panel.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/stage_tensors.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "gui/words.h"

namespace sf::gui {

const AttentionTrace* selected_attention(const Trace& trace, const AttentionSelection& s) {
  if (s.layer < 0) return nullptr;
  if (s.kind == AttentionKind::Encoder)
    return s.layer < static_cast<int>(trace.encoder.size()) ? &trace.encoder[s.layer].self_attn : nullptr;
  if (s.layer >= static_cast<int>(trace.decoder.size())) return nullptr;
  return s.kind == AttentionKind::Decoder ? &trace.decoder[s.layer].self_attn : &trace.decoder[s.layer].cross_attn;
}

Mat probabilities_with_blocked_cells(const AttentionTrace& a, int head) {
  Mat p = a.probs[head];
  const Mat blocked = a.mask_matrix(static_cast<size_t>(head));
  if (blocked.size() == p.size())
    for (Eigen::Index i = 0; i < p.size(); ++i)
      if (blocked.data()[i] > 0.5f) p.data()[i] = std::numeric_limits<float>::quiet_NaN();
  return p;
}

int clamp_selection(const Config& c, AttentionSelection& sel) {
  // A kind the model lacks (a decoder-only model's encoder or cross-attention): the stack it has.
  if (!c.has_encoder()) sel.kind = AttentionKind::Decoder;
  if (!c.has_decoder()) sel.kind = AttentionKind::Encoder;
  if (sel.kind == AttentionKind::Cross && !c.has_cross_attention()) sel.kind = AttentionKind::Decoder;
  const int layers = sel.kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  sel.head = std::clamp(sel.head, 0, c.n_heads - 1);
  return layers;
}

void draw_attention_selector(const Config& c, AttentionSelection& sel, bool with_head) {
  attention_kind_picker(&sel.kind, c);
  const int layers = clamp_selection(c, sel);
  // Sliders of 4.5 lines: the kind, layer and head fit one line of a 1280-pixel window in presentation mode.
  const float slider_width = ImGui::GetFontSize() * 4.5f + ImGui::GetStyle().ItemInnerSpacing.x;
  same_line_if_fits(slider_width + ImGui::CalcTextSize(tr(T::attention_layer)).x, ImGui::GetFontSize());
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
  numbered_slider(tr(T::attention_layer), &sel.layer, layers);
  if (!with_head) return;
  same_line_if_fits(slider_width + ImGui::CalcTextSize(tr(T::attention_head)).x);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
  numbered_slider(tr(T::attention_head), &sel.head, c.n_heads);
}

namespace {

// What each kind of attention is, for a student reading the panel, in the model's languages; `example` is a
// decoder row's label ("a -> man").
std::string kind_explanation(AttentionKind k, const LanguageWords& words, const std::string& example) {
  switch (k) {
    case AttentionKind::Encoder: return tr(T::attention_explanation_encoder, {{"source", words.source}});
    case AttentionKind::Decoder:
      return tr(T::attention_explanation_decoder, {{"target", words.target}, {"example", math_escape(example)}});
    case AttentionKind::Cross:
      return tr(T::attention_explanation_cross, {{"source", words.source}, {"target", words.target}});
  }
  return "";
}

}  // namespace

std::string attention_title(AttentionKind kind, const Interventions& iv) {
  const T title = kind == AttentionKind::Encoder   ? T::attention_title_encoder
                  : kind == AttentionKind::Decoder ? T::attention_title_decoder
                                                   : T::attention_title_cross;
  const bool causal_off = kind == AttentionKind::Decoder && !iv.causal_mask;
  const T masks = causal_off && !iv.padding_mask ? T::attention_title_causal_padding_off
                  : causal_off                   ? T::attention_title_causal_off
                  : !iv.padding_mask             ? T::attention_title_padding_off
                                                 : T::attention_title_masks_on;
  return tr(masks, {{"title", tr(title)}});
}

// [SECTION] what one frame shows: the head, its labels, its formula

struct AttentionPanel::Shown {
  const AttentionTrace* a = nullptr;
  std::vector<std::string> queries, keys, source_tips;
  int tq = 0, tk = 0;
  TokenSide qside = TokenSide::Source, kside = TokenSide::Source;
  bool reshaped = false;
  std::string explanation, formula, shapes, formula_line, scale_symbol, head_i;
  const char* blocked_value = "";
  int scale_by = 1;

  MapAxis row_axis() const {
    MapAxis axis;
    axis.labels = &queries;
    axis.tips = qside == TokenSide::Source && !reshaped ? &source_tips : nullptr;
    axis.tokens = !reshaped;  // reshaped rows are pieces of tokens: hovering one links no token
    axis.side = qside;
    axis.role = TokenRole::Query;
    return axis;
  }
  MapAxis col_axis() const {
    MapAxis axis;
    axis.labels = &keys;
    axis.tips = kside == TokenSide::Source && !reshaped ? &source_tips : nullptr;
    axis.tokens = !reshaped;
    axis.side = kside;
    axis.role = TokenRole::Key;
    return axis;
  }
};

bool AttentionPanel::draw_controls(const Shown& s, const AttentionSelection& sel, Interventions& edit) {
  bool changed = false;
  const HeadRef here{sel.kind, sel.layer, sel.head};
  const ImGuiStyle& style = ImGui::GetStyle();
  same_line_if_fits(labelled_box_width(tr(T::attention_head_on)) + style.ItemSpacing.x +
                        labelled_box_width(tr(T::attention_paint_mask)),
                    ImGui::GetFontSize() * 2);
  bool on = !edit.head_off(sel.kind, sel.layer, sel.head);
  if (ImGui::Checkbox(tr(T::attention_head_on), &on)) {
    toggle_head(edit, here);
    changed = true;
  }
  ImGui::SameLine();
  ImGui::Checkbox(tr(T::attention_paint_mask), &paint_mask_);
  if (edit.custom_mask(sel.kind, sel.layer, sel.head)) {
    same_line_if_fits(button_width(tr(T::attention_clear_painted_mask)));
    if (ImGui::SmallButton(tr(T::attention_clear_painted_mask))) {
      edit.custom_masks.erase(std::remove_if(edit.custom_masks.begin(), edit.custom_masks.end(),
                                             [&](const CustomMask& m) { return m.where == here; }),
                              edit.custom_masks.end());
      changed = true;
    }
  }
  // The view switch: the heatmap, or the same head as lines between the two columns of tokens.
  if (!s.reshaped) {
    int view = static_cast<int>(view_);
    same_line_if_fits(
        labelled_box_width(tr(T::attention_heatmap)) + labelled_box_width(tr(T::attention_lines)) + style.ItemSpacing.x,
        ImGui::GetFontSize() * 2);
    ImGui::RadioButton(tr(T::attention_heatmap), &view, static_cast<int>(AttentionView::Heatmap));
    ImGui::SameLine();
    ImGui::RadioButton(tr(T::attention_lines), &view, static_cast<int>(AttentionView::Lines));
    view_ = static_cast<AttentionView>(view);
  }
  return changed;
}

void AttentionPanel::draw_steps(const Shown& s, float width, float height, bool labels) {
  // 1. scores, 2. + mask, 3. softmax (the large map), 4. times V: each small, with its labels and colour bar
  // where the column has room for them. A narrow column (large type) gets the short titles.
  const float font = ImGui::GetFontSize();
  const ImGuiStyle& style = ImGui::GetStyle();
  const bool narrow = width < 16 * font;
  const std::string sub = "{" + s.head_i + "}";  // the head's number as the formulas' subscript i
  char out_shape[48];
  std::snprintf(out_shape, sizeof(out_shape), "[%d \u00d7 %d]", head_out_.heatmap().rows(), head_out_.heatmap().cols());
  const std::string scores = "$Q_" + sub + " K_" + sub + "^T / \\sqrt{" + s.scale_symbol + "}$";  // notation
  const std::string times_v = "$\\times V_" + sub + " = head_" + sub + "$";
  const std::string title1 =
      tr(narrow ? T::attention_step_scores_short : T::attention_step_scores, {{"formula", scores}});
  const std::string title2 = narrow ? std::string(tr(T::attention_step_mask_short))
                                    : tr(T::attention_step_mask, {{"blocked", s.blocked_value}});
  const std::string title3 = tr(narrow ? T::attention_step_softmax_short : T::attention_step_softmax);
  const std::string title4 = narrow ? tr(T::attention_step_values_short, {{"formula", times_v}})
                                    : tr(T::attention_step_values, {{"formula", times_v}, {"shape", out_shape}});
  float titles_h = 0;
  for (const std::string* t : {&title1, &title2, &title3, &title4})
    titles_h += math_text_size(*t, width).y + style.ItemSpacing.y;
  // The three maps share the height left; presenting, they never run past it (a lesson's caption below): where
  // each would be lower than 0.6 lines of type, only the last step and the head's output are shown.
  const float least = high_contrast() ? 0.6f * font : 1.5f * font;
  const float share = (height - titles_h - 3 * style.ItemSpacing.y) / 3;
  const bool all_steps = share >= least || !high_contrast();
  const float last_only = height - math_text_size(title3, width).y - math_text_size(title4, width).y -
                          3 * style.ItemSpacing.y;
  const float h = all_steps ? std::max(least, share) : std::max(1.0f, last_only);
  ImGui::BeginGroup();
  MapViewOptions small;
  small.style = {Colormap::Diverging, true};
  small.value_name = tr(T::map_value_score);
  const bool step_labels = labels && !narrow;
  small.label_width = step_labels ? std::min(MapView::label_width_for(s.queries), width * 0.35f) : 0.0f;
  const MapAxis step_rows = step_labels ? s.row_axis() : MapAxis{nullptr, nullptr, !s.reshaped, s.qside, TokenRole::Query};
  const MapAxis step_cols = step_labels ? s.col_axis() : MapAxis{nullptr, nullptr, !s.reshaped, s.kside, TokenRole::Key};
  if (all_steps) {
    math_text(title1, width, 0, "formula.step");
    scores_.heatmap().set_axis_labels(s.queries, s.keys);
    scores_.draw("attention_scores", ImVec2(width, h), step_rows, step_cols, small);
    math_text(title2, width, 0, "formula.step");
    masked_scores_.heatmap().set_axis_labels(s.queries, s.keys);
    masked_scores_.draw("attention_masked_scores", ImVec2(width, h), step_rows, step_cols, small);
  }
  math_text(title3, width, 0, "formula.step");
  math_text(title4, width, 0, "formula.step");
  head_out_.heatmap().set_axis_labels(s.queries);
  small.value_name = tr(T::map_value_value);
  head_out_.draw("attention_head_output", ImVec2(width, h), step_rows, MapAxis{}, small);
  ImGui::EndGroup();
}

void AttentionPanel::draw_cell(const Shown& s, const AttentionSelection& sel, const AppState& state, ImVec2 at,
                               ImVec2 size) {
  // The opened cell's computation, in a column of its own.
  // (worked out again only when the cell, the head or the trace changed: the panel keeps the numbers)
  if (!expanded_cell_ || expanded_cell_->row != expanded_->row || expanded_cell_->col != expanded_->col ||
      expanded_version_ != state.version() || expanded_selection_.kind != sel.kind ||
      expanded_selection_.layer != sel.layer || expanded_selection_.head != sel.head)
    expanded_cell_ = expand_attention_cell(*s.a, sel.head, expanded_->row, expanded_->col, &state.model()->config);
  expanded_version_ = state.version();
  expanded_selection_ = sel;
  ImGui::SetCursorScreenPos(at);
  ImGui::BeginChild("##cell", size, false);
  if (cell_panel_.draw(*expanded_cell_, s.queries[static_cast<size_t>(expanded_->row)],
                       s.keys[static_cast<size_t>(expanded_->col)], s.keys, s.kside, ImGui::GetContentRegionAvail().x))
    expanded_.reset();
  record_scroll_region("cell");  // how far its steps run past the column (the screen tests want none)
  ImGui::EndChild();
}

void AttentionPanel::cell_tooltip(const Shown& s, const MapViewHit& hit, int head) const {
  if (!hit.hovered || hit.row >= static_cast<int>(s.queries.size()) || hit.col >= static_cast<int>(s.keys.size())) return;
  const bool blocked = s.a->blocked(static_cast<size_t>(head), hit.row, hit.col);
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(
      tr(T::attention_cell_tip,
         {{"query", s.queries[hit.row]}, {"row", hit.row}, {"key", s.keys[hit.col]}, {"column", hit.col}})
          .c_str());
  math_text(tr(T::attention_score_tip, {{"formula", "$q \\cdot k / \\sqrt{" + s.scale_symbol + "}$"},
                                        {"score", number_text("%.3f", s.a->scores[head](hit.row, hit.col))}}),
            -1.0f);
  if (blocked && s.reshaped)
    ImGui::TextUnformatted(tr(T::attention_blocked_mask_e20_before));
  else if (blocked)
    ImGui::TextUnformatted(tr(T::attention_blocked_mask_before_softmax));
  else
    ImGui::TextUnformatted(
        tr(T::attention_probability, {{"p", probability_text(s.a->probs[head](hit.row, hit.col))}}).c_str());
  if (paint_mask_)
    ImGui::TextDisabled("%s", tr(blocked ? T::attention_click_allow_cell : T::attention_click_block_cell));
  else
    ImGui::TextDisabled("%s", tr(T::attention_click_open_cell));
  ImGui::EndTooltip();
}

PanelAsk AttentionPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  Interventions edit = context.state.interventions();
  const bool edited = draw_stage(context.state, selection, edit);
  PanelAsk ask = ask_select(context, selection);
  if (edited) ask.interventions = std::move(edit);
  return ask;
}

bool AttentionPanel::draw_stage(const AppState& state, AttentionSelection& sel, Interventions& edit) {
  if (!state.ready()) {
    ImGui::TextDisabled("%s", tr(T::attention_no_translation_show_yet));
    return false;
  }
  bool changed = false;
  const Config& c = state.model()->config;
  // Presentation mode: the header names the head, the map takes the stage's height on the left, and everything
  // else (the controls behind a toggle, the explanation, the formula, the steps or the opened cell) stands in the
  // column to its right. Elsewhere the controls and the text come first, above the map.
  const bool presenting = high_contrast();
  if (presenting) clamp_selection(c, sel);
  else draw_attention_selector(c, sel, /*with_head=*/true);
  // An encoder-only model's one kind of attention has no causal mask: said on screen, beside every view of it.
  if (state.encoder_only()) {
    text_wrapped(tr(T::bert_attention_both_sides));
    record_item("attention.both_sides", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "");
  }

  Shown s;
  s.a = selected_attention(state.trace(), sel);
  if (!s.a || s.a->probs.empty()) return changed;
  // Decoder rows read one token and predict the next: "orange -> shirt". Keys are what is read.
  s.reshaped = c.attention == AttentionStyle::ReshapeHeads;
  s.queries = sel.kind == AttentionKind::Encoder ? state.source_labels()
              : s.reshaped                       ? state.decoder_input_labels()
                                                 : state.decoder_row_labels();
  s.keys = sel.kind == AttentionKind::Decoder ? state.decoder_input_labels() : state.source_labels();
  if (s.reshaped) {  // pieces of tokens, not tokens: labelled with what each row and column holds
    s.queries = reshaped_head_labels(s.queries, sel.head, c.n_heads);
    s.keys = reshaped_head_labels(s.keys, sel.head, c.n_heads);
    view_ = AttentionView::Heatmap;  // the lines view joins tokens, which these rows are not
  }
  s.source_tips = state.source_label_tips();
  s.tq = static_cast<int>(s.a->probs[sel.head].rows());
  s.tk = static_cast<int>(s.a->probs[sel.head].cols());
  s.qside = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  s.kside = sel.kind == AttentionKind::Decoder ? TokenSide::Target : TokenSide::Source;
  const bool selection_changed =
      uploaded_.kind != sel.kind || uploaded_.layer != sel.layer || uploaded_.head != sel.head;
  if (selection_changed) {
    expanded_.reset();
    map_.fit();  // another head: the whole map again
  }
  if (expanded_ && (expanded_->row >= s.tq || expanded_->col >= s.tk)) expanded_.reset();

  if (!presenting) {  // presentation mode: the header says it
    ImGui::TextUnformatted(tr(T::attention_heading, {{"title", attention_title(sel.kind, state.interventions())},
                                                     {"layer", shown_number(sel.layer)},
                                                     {"head", shown_number(sel.head)}})
                               .c_str());
    changed |= draw_controls(s, sel, edit);
  }

  if (uploaded_version_ != state.version() || selection_changed) {
    const Mat p = probabilities_with_blocked_cells(*s.a, sel.head);
    map_.set_values(p, 0.0f, 1.0f);
    const Mat& scores = s.a->scores[sel.head];  // (Tq, Tk), scaled, before the mask
    const float r = signed_range(scores);
    scores_.set_values(scores, -r, r);
    Mat masked = scores;
    for (Eigen::Index i = 0; i < masked.size(); ++i)
      if (std::isnan(p.data()[i])) masked.data()[i] = std::numeric_limits<float>::quiet_NaN();
    masked_scores_.set_values(masked, -r, r);  // (the same scale as the scores: only the blocked cells differ)
    head_out_.set_signed(s.a->head_out[sel.head]);  // (Tq, D)
    uploaded_version_ = state.version();
    uploaded_ = sel;
  }

  const std::vector<std::string> row_labels = state.decoder_row_labels();
  s.explanation =
      s.reshaped            ? tr(T::attention_explanation_reshaped)
      : state.decoder_only() ? tr(T::gpt_attention_explanation,  // (a prompt and its continuation, no languages)
                                  {{"example", math_escape(row_labels.size() > 1 ? row_labels[1] : std::string())}})
                 : kind_explanation(sel.kind, language_words(state.model().get()),
                                    row_labels.size() > 1 ? row_labels[1] : std::string(tr(T::attention_example_row)));
  s.scale_by = s.reshaped ? c.d_model : c.head_dim();  // sqrt of it divides the scores (attention_scale)
  s.blocked_value = s.reshaped ? "-1e20" : "\u2212\u221e";
  // The paper's Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V for head i, with the mask M added (-inf where
  // blocked); the from-scratch family divides by sqrt(d_model).
  s.head_i = std::to_string(shown_number(sel.head));
  s.scale_symbol = s.reshaped ? "d_{model}" : "d_k";
  const std::string i = "{" + s.head_i + "}";  // notation, the same in every language
  s.formula = "$head_" + i + " = softmax(Q_" + i + " K_" + i + "^T / \\sqrt{" + s.scale_symbol + "} + M) V_" + i + "$";
  char shapes_text[200];
  std::snprintf(shapes_text, sizeof(shapes_text),
                "$%s$ = %d     $Q_{%s}$ [%d \u00d7 %d]   $K_{%s}$ [%d \u00d7 %d]   $softmax$ [%d \u00d7 %d]",
                s.scale_symbol.c_str(), s.scale_by, s.head_i.c_str(), s.tq, c.head_dim(), s.head_i.c_str(), s.tk,
                c.head_dim(), s.tq, s.tk);
  s.shapes = shapes_text;
  s.formula_line = s.formula + "     " + s.shapes;

  if (view_ == AttentionView::Lines) {
    if (presenting) {
      pending_selection_.reset();
      changed |= draw_presenting_controls(s, c, sel, edit);
      if (pending_selection_) sel = *pending_selection_;
    }
    explanation(tr(T::attention_lines_explanation));
    ::sf::gui::formula(s.formula_line);
    lines_panel_.draw(*s.a, s.queries, s.keys, s.qside, s.kside, sel.head, ImGui::GetContentRegionAvail());
    expanded_cell_.reset();
    return changed;
  }
  return presenting ? draw_presenting(s, state, sel, edit) || changed : draw_normal(s, state, sel, edit) || changed;
}

bool AttentionPanel::draw_presenting_controls(const Shown& s, const Config& c, const AttentionSelection& sel,
                                              Interventions& edit) {
  // One line of toggles; the controls (kind, layer, head, head on, paint mask, the view) open under it. A head
  // picked there is shown from the next frame (this frame's numbers are the head's on show).
  bool changed = false;
  if (ImGui::SmallButton(controls_open_ ? tr(T::attention_controls_open) : tr(T::attention_controls_folded)))
    controls_open_ = !controls_open_;
  record_item("controls", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, controls_open_ ? "open" : "folded");
  if (explanations_shown()) {  // (a lesson's caption explains instead)
    ImGui::SameLine();
    explanation(s.explanation.c_str());  // its own toggle, "Explain", then the paragraph when open
  }
  if (controls_open_) {
    AttentionSelection picked = sel;
    draw_attention_selector(c, picked, /*with_head=*/true);
    if (picked.kind != sel.kind || picked.layer != sel.layer || picked.head != sel.head) pending_selection_ = picked;
    changed |= draw_controls(s, sel, edit);
  }
  return changed;
}

bool AttentionPanel::draw_presenting(const Shown& s, const AppState& state, AttentionSelection& sel, Interventions& edit) {
  bool changed = false;
  const float font = ImGui::GetFontSize();
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 full = ImGui::GetContentRegionAvail();
  // The map's room: the stage's whole height, and its width less the right column's least (its controls, the
  // formula and the steps keep at least 14 lines of type, or a third of a wide stage; an opened cell more).
  const float column_least = std::max(font * 14, full.x * (expanded_ ? 0.45f : 0.32f));
  const float map_room_x = std::max(font * 8, full.x - column_least - 1.5f * font);
  const float map_room_y = std::max(font * 4, full.y - 0.25f * font);
  const float bar_width = colour_bar_width(0.0f, 1.0f) + style.ItemSpacing.x;
  const float query_width = MapView::widest_label(s.queries), key_width = MapView::widest_label(s.keys);
  MapView::PresentedFit fit =
      MapView::fit_presented(s.tq, s.tk, query_width, key_width, ImVec2(map_room_x, map_room_y), bar_width);
  const float cell = fit.cell;
  float row_height = cell;
  // A map much wider than high (cross-attention of a long source: 20 x 244) with square cells is a strip of thin
  // rows: the rows take the height instead, the columns keep the width (zoom reaches each of them).
  if (s.tk > 2 * s.tq && cell * s.tq + fit.top_room < 0.7f * map_room_y)
    row_height = std::max(cell, 0.75f * (map_room_y - fit.top_room) / s.tq);
  const bool square = row_height == cell;
  const ImVec2 drawn = square ? fit.size : ImVec2(fit.size.x, fit.top_room + row_height * s.tq);
  const float label_size = fit.label_size;
  MapViewOptions options;
  options.style = {Colormap::Viridis, true};
  options.value_name = tr(T::map_value_probability);
  options.square_cells = square;
  options.always_label = true;
  options.tooltip = false;
  options.label_width = fit.label_width;
  options.top_room = fit.top_room;
  options.label_size = label_size;
  if (expanded_) options.marked = {expanded_->row, expanded_->col};  // the opened cell stays marked
  map_.heatmap().set_axis_labels(s.queries, s.keys);  // row and column names for export
  const MapAxis rows = s.row_axis(), cols = s.col_axis();
  const MapViewHit hit = map_.draw("attention", drawn, rows, cols, options);
  record_item("main_map", origin, ImVec2(origin.x + drawn.x, origin.y + drawn.y), -1, "attention");
  if (hit.clicked) {
    if (paint_mask_) changed |= toggle_mask_cell(state.trace(), edit, {sel.kind, sel.layer, sel.head}, hit.row, hit.col);
    else expanded_ = {hit.row, hit.col};
  }

  // The column on the right: toggles, formula, then the steps or the opened cell in the height left.
  const float column_x = origin.x + drawn.x + 1.5f * font;
  const float column_w = origin.x + full.x - column_x;
  ImGui::SetCursorScreenPos(ImVec2(column_x, origin.y));
  ImGui::BeginGroup();
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + column_w);
  pending_selection_.reset();
  changed |= draw_presenting_controls(s, state.model()->config, sel, edit);
  if (!expanded_) {  // (an opened cell is the formula with its numbers, and needs the height)
    math_text(s.formula, column_w, 0, "formula");
    // The shapes where the steps keep room for their maps after them (a narrow column wraps them).
    const float after = origin.y + full.y - ImGui::GetCursorScreenPos().y - math_text_size(s.shapes, column_w).y;
    if (after >= 5 * ImGui::GetTextLineHeightWithSpacing() + 3 * font) math_text(s.shapes, column_w, 0, "formula.shapes");
  }
  ImGui::PopTextWrapPos();
  const float rest_y = ImGui::GetCursorScreenPos().y;
  const float rest_h = origin.y + full.y - rest_y;
  if (expanded_) {
    draw_cell(s, sel, state, ImVec2(column_x, rest_y), ImVec2(column_w, rest_h));
  } else {
    expanded_cell_.reset();
    ImGui::SetCursorScreenPos(ImVec2(column_x, rest_y));
    draw_steps(s, column_w, rest_h, /*labels=*/false);  // (the map beside names the rows)
  }
  ImGui::EndGroup();
  cell_tooltip(s, hit, sel.head);
  if (pending_selection_) sel = *pending_selection_;  // the next frame shows the head picked
  // The panel's room is taken up to the bottom of the map and of the column.
  ImGui::SetCursorScreenPos(ImVec2(origin.x, std::max(origin.y + drawn.y, ImGui::GetItemRectMax().y)));
  ImGui::Dummy(ImVec2(0, 0));
  return changed;
}

bool AttentionPanel::draw_normal(const Shown& s, const AppState& state, AttentionSelection& sel, Interventions& edit) {
  bool changed = false;
  const Config& c = state.model()->config;
  const ImGuiStyle& style = ImGui::GetStyle();
  const int tq = s.tq, tk = s.tk;
  // Labels: keys rotated along the top, queries on the left.
  const float font = ImGui::GetFontSize();
  // The row labels' room: as wide as the widest label in the type it will be drawn in (a label is drawn at most
  // a row high), found with the map's fit below.
  float label_width = MapView::label_width_for(s.queries);
  const float full_label_width = label_width;
  const float key_width = MapView::widest_label(s.keys);
  const float bar_width = colour_bar_width(0.0f, 1.0f) + style.ItemSpacing.x;
  const ImVec2 full = ImGui::GetContentRegionAvail();
  // The right part of the panel shows the steps that lead to the probabilities, or the opened cell.
  const float steps_width = expanded_ ? std::max(full.x * (full.x > font * 40 ? 0.36f : 0.45f), std::min(full.x * 0.5f, font * 22))
                            : full.x > font * 30 ? full.x * 0.3f
                                                 : 0.0f;
  const ImVec2 avail(full.x - steps_width, full.y);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const std::string& formula = s.formula;
  const std::string& shapes = s.shapes;
  const std::string& formula_line = s.formula_line;
  const std::string& explanation_text = s.explanation;

  // Height of the explanation and the formula: above the map the explanation wraps at the window's edge and the
  // formula is one line; beside it both wrap in their column.
  const auto text_height = [&](float width, bool beside) {
    float h = beside ? math_text_size(formula, width).y + math_text_size(shapes, width).y + 2 * style.ItemSpacing.y
                     : math_text_size(formula_line, width).y + style.ItemSpacing.y;
    return h + explanation_height(explanation_text.c_str(), width);
  };
  // The cell size (square cells) of the map with a cell at most `cell_limit` (and 3 lines), in a room `height`
  // high, and the room its key labels get above it. A key label is drawn at most a cell high (rotated: its
  // length is its height), so the room shrinks with the cell: key_room = key_width * min(1, cell / font), at most
  // five lines (a long German compound is drawn smaller rather than push the map down; map_view.h). The
  // room grows with the cell and the height left for the rows shrinks with the room, so the largest cell that
  // fits is found by bisection. Below 10 px a key label is not drawn at all, and takes no room.
  struct MapFit {
    float cell, key_room;
  };
  const float below = 0.5f * line;  // under the map
  const float min_label = MapView::min_label_size();
  const auto fit = [&](float cell_limit, float height) {
    const auto key_room_for = [&](float cell) { return MapView::column_label_room(key_width, cell); };
    const auto fits = [&](float cell) { return cell * tq + key_room_for(cell) + below <= height; };
    float lo = 1.0f, hi = std::max(lo, std::min(cell_limit, font * 3));
    if (fits(hi)) {
      lo = hi;
    } else {
      for (int i = 0; i < 24; ++i) {
        const float mid = 0.5f * (lo + hi);
        (fits(mid) ? lo : hi) = mid;
      }
    }
    return MapFit{lo, key_room_for(lo)};
  };
  const auto cells_across = [&](float width) { return (width - label_width - bar_width) / tk; };
  // The explanation goes above the map, or beside it in a column of its own when the panel has no steps column
  // (a narrow window) and the map grows by a tenth that way. Beside, the map takes the height and the column the
  // width it leaves; while the text is taller than the panel the map gives up width.
  MapFit map = fit(cells_across(avail.x), avail.y - text_height(full.x, false));
  if (map.cell < font) {  // rows lower than the text: the labels shrink with them, and give back their width
    label_width = label_width * std::max(map.cell, min_label) / font + style.ItemSpacing.x;
    map = fit(cells_across(avail.x), avail.y - text_height(full.x, false));
  }
  bool text_beside = false;
  const float min_column = font * 10;
  if (steps_width == 0 && avail.x > 2 * min_column) {
    MapFit beside = fit(cells_across(avail.x - min_column - 2 * style.ItemSpacing.x), avail.y);
    for (; beside.cell > map.cell * 1.1f; beside = fit(beside.cell * 0.9f, avail.y)) {
      const float column = avail.x - (label_width + beside.cell * tk + bar_width + 2 * style.ItemSpacing.x);
      if (column >= min_column && text_height(column, true) <= avail.y) {
        map = beside;
        text_beside = true;
        break;
      }
    }
  }
  // A map much wider than high (cross-attention of a long source: 20 x 244) fitted with square cells is a
  // strip of 3-pixel rows at the top of an empty panel. Then the rows take the height left (up to a line and
  // a half each, with their labels) and the columns keep the width: the cells are no longer square, and zoom
  // and pan still reach every one.
  float row_height = map.cell;
  {
    const float room_h = (text_beside ? avail.y : avail.y - text_height(full.x, false)) - below;
    const float square_h = map.cell * tq + map.key_room;
    if (!text_beside && tk > 2 * tq && square_h < 0.5f * room_h) {
      const float tall = std::min(1.5f * font, (room_h - map.key_room) / tq);
      if (tall >= min_label) {  // the rows can carry their labels again: full width
        label_width = full_label_width;
        map.cell = std::min(map.cell, cells_across(avail.x));
      }
      row_height = std::max(map.cell, tall);
    }
  }
  if (!text_beside) {
    explanation(explanation_text.c_str());
    ::sf::gui::formula(formula_line);
  }
  const ImVec2 panel_origin = ImGui::GetCursorScreenPos();  // below the text when it is above the map
  const float steps_height = ImGui::GetContentRegionAvail().y;
  const ImVec2 origin = ImGui::GetCursorScreenPos();

  // The map: square cells, labels, colour bar; zoom and pan once the cells are too small to read.
  const MapAxis row_axis = s.row_axis(), col_axis = s.col_axis();
  MapViewOptions options;
  options.style = {Colormap::Viridis, true};
  options.value_name = tr(T::map_value_probability);
  options.square_cells = row_height == map.cell;
  options.tooltip = false;
  options.label_width = label_width;
  if (expanded_) options.marked = {expanded_->row, expanded_->col};  // the opened cell stays marked
  map_.heatmap().set_axis_labels(s.queries, s.keys);  // row and column names for export
  const ImVec2 map_size(label_width + map.cell * tk + bar_width, map.key_room + row_height * tq);
  const MapViewHit hit = map_.draw("attention", map_size, row_axis, col_axis, options);
  record_item("main_map", origin, ImVec2(origin.x + map_size.x, origin.y + map_size.y), -1, "attention");
  if (hit.clicked) {
    if (paint_mask_) changed |= toggle_mask_cell(state.trace(), edit, {sel.kind, sel.layer, sel.head}, hit.row, hit.col);
    else expanded_ = {hit.row, hit.col};
  }
  const float map_right = origin.x + map_size.x;
  if (text_beside) {
    ImGui::SetCursorScreenPos(ImVec2(map_right + style.ItemSpacing.x, origin.y));
    ImGui::BeginGroup();
    explanation(explanation_text.c_str());
    ::sf::gui::formula(formula);
    ::sf::gui::formula(shapes, "formula.shapes");
    ImGui::EndGroup();
  }
  // The column starts a little right of the map (on a wide screen the map, fitted to the height, leaves room
  // between them) and takes the rest of the width.
  const float column_x = std::min(panel_origin.x + avail.x + style.ItemSpacing.x, map_right + 1.5f * font);
  const float column_w = panel_origin.x + full.x - column_x - style.ItemSpacing.x;
  if (expanded_) {
    draw_cell(s, sel, state, ImVec2(column_x, panel_origin.y), ImVec2(column_w, steps_height));
  } else if (steps_width > 0) {
    expanded_cell_.reset();
    ImGui::SetCursorScreenPos(ImVec2(column_x, panel_origin.y));
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + column_w);
    draw_steps(s, column_w, steps_height, /*labels=*/true);
    ImGui::PopTextWrapPos();
  } else {
    expanded_cell_.reset();
  }
  cell_tooltip(s, hit, sel.head);
  (void)c;
  // The panel's room is taken up to the bottom of the map (and the text beside it).
  ImGui::SetCursorScreenPos(ImVec2(origin.x, std::max(origin.y + map_size.y, ImGui::GetCursorScreenPos().y)));
  ImGui::Dummy(ImVec2(0, 0));
  return changed;
}

}  // namespace sf::gui
