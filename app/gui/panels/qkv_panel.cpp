#include "gui/panels/qkv_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/stage_tensors.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/render/math_text.h"
#include "gui/widgets.h"
#include "gui/words.h"
#include "transformer/layers.h"

namespace sf::gui {

RowVec project_head_row(const Mat& x, const LinearWeights& w, int head, int head_dim, int row) {
  RowVec out = x.row(row) * w.weight.middleRows(head * head_dim, head_dim).transpose();
  if (w.bias.size() > 0) out += w.bias.segment(head * head_dim, head_dim);
  return out;
}

namespace {

// "1st", "2nd", "3rd", "4th", ... (the head whose block of columns a W_i^Q is). English's rule picks the entry.
std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const T form = tens >= 11 && tens <= 13 ? T::qkv_ordinal_th
                 : ones == 1              ? T::qkv_ordinal_st
                 : ones == 2              ? T::qkv_ordinal_nd
                 : ones == 3              ? T::qkv_ordinal_rd
                                          : T::qkv_ordinal_th;
  return tr(form, {{"n", n}});
}

// The from-scratch family (config.h ReshapeHeads): head `head`'s row `row` of x reshaped to (H, T, D), the D
// numbers the shared (D, D) map projects.
RowVec reshaped_piece(const Mat& x, int n_heads, int head, int row) {
  const int d = static_cast<int>(x.cols()) / n_heads;
  return reshape_heads_to_columns(x, n_heads).block(row, head * d, 1, d);
}

}  // namespace

PanelAsk QkvPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  draw_stage(context.state, selection);
  return ask_select(context, selection);
}

void QkvPanel::draw_stage(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model()->config;
  // Presentation mode: the header names the head; the controls wait behind a toggle (the Explain toggle beside
  // it), and the maps stand in one row that takes the stage's height.
  const bool presenting = high_contrast();
  if (pending_) sel = *pending_;  // a head picked last frame under the toggle
  pending_.reset();
  if (!presenting) draw_attention_selector(c, sel, /*with_head=*/true);
  // Presentation mode: under the explanation's toggle, the controls' (a head picked there shows from the next
  // frame: this frame's numbers are the head's on show).
  const auto presenting_controls = [&]() {
    if (!presenting) return;
    same_line_if_fits(button_width(tr(T::qkv_controls_folded)));
    if (ImGui::SmallButton(controls_open_ ? tr(T::qkv_controls_open) : tr(T::qkv_controls_folded)))
      controls_open_ = !controls_open_;
    if (!controls_open_) return;
    AttentionSelection picked = sel;
    draw_attention_selector(c, picked, /*with_head=*/true);
    if (picked.kind != sel.kind || picked.layer != sel.layer || picked.head != sel.head) pending_ = picked;
  };
  const AttentionTrace* a = selected_attention(state.trace(), sel);
  const AttentionInputs in = attention_inputs(c, state.trace(), sel.kind, sel.layer);
  if (!a || a->q.empty() || !in.queries_from || !in.keys_from) return;
  const int H = c.n_heads, D = c.head_dim();
  const Mat& q = a->q[sel.head];  // (Tq, D)
  const Mat& k = a->k[sel.head];  // (Tk, D)
  const Mat& v = a->v[sel.head];  // (Tk, D)
  const AttentionWeights& w = attention_weights(state.model()->weights, sel.kind, sel.layer);
  const bool cross = sel.kind == AttentionKind::Cross;
  const bool reshaped = c.attention == AttentionStyle::ReshapeHeads;
  // The head's W_i^Q as the paper writes it, [d_model x d_k]: the transpose of the head's rows h*D.. of the
  // stored (C, C) weight (PyTorch keeps a linear layer's weight as [out x in] and computes x W^T); for the
  // from-scratch family the transpose of the one (D, D) map every head shares.
  const auto head_slice = [&](const LinearWeights& l) -> Mat {
    return reshaped ? Mat(l.weight.transpose()) : Mat(l.weight.middleRows(sel.head * D, D).transpose());
  };
  const int i_shown = shown_number(sel.head);  // the paper's i of W_i^Q, head_i
  std::string braced_i = "{";  // (appended: GCC 12 misreads "{" + ... + "}" as an overlapping copy, -Wrestrict)
  braced_i.append(std::to_string(i_shown)).append("}");
  const auto sub_i = [&](std::string notation) {  // "W_{i}^Q" -> "W_{4}^Q": the head's number for i, in the math
    for (size_t at = notation.find("{i}"); at != std::string::npos; at = notation.find("{i}", at + braced_i.size()))
      notation.replace(at, 3, braced_i);
    return notation;
  };

  if (!high_contrast())  // presentation mode: the header says it
    text_wrapped(tr(T::qkv_heading, {{"kind", sel.kind == AttentionKind::Encoder   ? tr(T::qkv_kind_encoder)
                                                          : sel.kind == AttentionKind::Decoder ? tr(T::qkv_kind_decoder)
                                                                                               : tr(T::qkv_kind_cross)},
                                                 {"layer", shown_number(sel.layer)}})
                                 .c_str());
  if (reshaped) {
    explanation(tr(T::qkv_explanation_reshaped));
    presenting_controls();
    char shapes[160];
    std::snprintf(shapes, sizeof(shapes), "[%d \u00d7 %d \u00d7 %d]", H, static_cast<int>(q.rows()), D);
    char weights[64];
    std::snprintf(weights, sizeof(weights), "[%d \u00d7 %d]", D, D);
    formula("$Q_i = reshape(X)_i W^Q$     $K_i = reshape(X)_i W^K$     $V_i = reshape(X)_i W^V$     " +
            tr(T::qkv_reshaped_shapes, {{"shape", shapes}, {"weights_shape", weights}}));
  } else {
    explanation(tr(T::qkv_explanation));
    presenting_controls();
    const std::string bias_q = c.bias ? " + b_{i}^Q" : "", bias_k = c.bias ? " + b_{i}^K" : "",
                      bias_v = c.bias ? " + b_{i}^V" : "";
    formula(sub_i("$Q_{i} = X W_{i}^Q" + bias_q + "$     $K_{i} = X W_{i}^K" + bias_k + "$     $V_{i} = X W_{i}^V" +
                  bias_v + "$"));
    char shapes[200];
    std::snprintf(shapes, sizeof(shapes),
                  "X [%d \u00d7 %d]     $W_{i}^Q, W_{i}^K, W_{i}^V$ [%d \u00d7 %d] ($d_{model} \\times d_k$)     "
                  "$Q_{i}, K_{i}, V_{i}$ [%d \u00d7 %d]",
                  static_cast<int>(q.rows()), c.d_model, c.d_model, D, static_cast<int>(q.rows()), D);
    if (!presenting) formula(sub_i(shapes));  // (presenting: each map's title has its shape)
    const std::string split =
        tr(T::qkv_head_split,
           {{"heads", H}, {"d_model", c.d_model}, {"d", D}, {"head", i_shown}, {"ordinal", ordinal(i_shown)}});
    if (!presenting) formula(sub_i(split), "formula.split");
  }

  // The head strip: which slice of the C columns the selected head owns (a reshaped head owns no columns).
  if (!reshaped) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w_strip = ImGui::GetContentRegionAvail().x * 0.8f, h = ImGui::GetFontSize() * 1.2f;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (int i = 0; i < H; ++i) {
      const ImVec2 a0(p.x + w_strip * i / H, p.y), a1(p.x + w_strip * (i + 1) / H - 2, p.y + h);
      draw->AddRectFilled(a0, a1, i == sel.head ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 90, 120, 255));
      const std::string label = tr(T::qkv_strip_head, {{"head", shown_number(i)}});
      draw->AddText(ImVec2(a0.x + 4, a0.y), i == sel.head ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255),
                    label.c_str());
    }
    ImGui::Dummy(ImVec2(w_strip, h + 4));
  }

  if (uploaded_version_ != state.version() || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer ||
      uploaded_.head != sel.head) {
    const float r = std::max({signed_range(q), signed_range(k), signed_range(v)});  // one scale for the three
    q_.set_values(q, -r, r);
    k_.set_values(k, -r, r);
    v_.set_values(v, -r, r);
    x_q_.set_signed(*in.queries_from);
    x_kv_.set_signed(*in.keys_from);
    const Mat wq = head_slice(w.q), wk = head_slice(w.k), wv = head_slice(w.v);
    const float rw = std::max({signed_range(wq), signed_range(wk), signed_range(wv)});
    w_q_.set_values(wq, -rw, rw);
    w_k_.set_values(wk, -rw, rw);
    w_v_.set_values(wv, -rw, rw);
    if (uploaded_.kind != sel.kind || uploaded_.layer != sel.layer || uploaded_.head != sel.head) opened_.reset();
    uploaded_version_ = state.version();
    uploaded_ = sel;
    uploaded_opened_.reset();  // the opened projection's maps too
  }
  // Decoder rows say what they read and what they predict ("orange -> shirt").
  std::vector<std::string> qlabels = sel.kind == AttentionKind::Encoder ? state.source_labels()
                                     : reshaped                         ? state.decoder_input_labels()
                                                                        : state.decoder_row_labels();
  std::vector<std::string> klabels = cross ? state.source_labels() : qlabels;
  // X keeps token rows; Q, K and V of a reshaped head are pieces of tokens.
  const std::vector<std::string> x_qlabels = qlabels, x_klabels = klabels;
  if (reshaped) {
    qlabels = reshaped_head_labels(qlabels, sel.head, H);
    klabels = reshaped_head_labels(klabels, sel.head, H);
  }
  const std::vector<std::string> tips = state.source_label_tips();
  const TokenSide qside = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  const TokenSide kside = sel.kind == AttentionKind::Decoder ? TokenSide::Target : TokenSide::Source;
  MapAxis q_axis, k_axis, x_q_axis, x_k_axis, none;
  q_axis.labels = &qlabels;
  q_axis.tokens = true;
  q_axis.side = qside;
  q_axis.role = TokenRole::Query;
  q_axis.tips = sel.kind == AttentionKind::Encoder ? &tips : nullptr;
  k_axis.labels = &klabels;
  k_axis.tokens = true;
  k_axis.side = kside;
  k_axis.role = TokenRole::Key;
  k_axis.tips = kside == TokenSide::Source ? &tips : nullptr;
  x_q_axis = q_axis;
  x_k_axis = k_axis;
  x_q_axis.labels = &x_qlabels;
  x_k_axis.labels = &x_klabels;
  if (reshaped) {  // rows of Q, K, V are pieces: no token to link, no token tip
    q_axis.tokens = k_axis.tokens = false;
    q_axis.tips = k_axis.tips = nullptr;
  }
  if (opened_ && opened_->row >= (opened_->side == Side::Query ? q.rows() : k.rows())) opened_.reset();

  const ImGuiStyle& style = ImGui::GetStyle();
  const float font = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  MapViewOptions signed_map;
  signed_map.style = {Colormap::Diverging, true};
  const float line = ImGui::GetTextLineHeightWithSpacing();

  // Presentation mode: one row across the stage, the equation read left to right, X W_i^Q = Q_i: the input X
  // (for cross-attention the decoder's rows over the encoder's output), the head's three weights, then Q, K, V;
  // each map the stage's height less its title, so that rows keep their labels.
  if (presenting && !opened_) {
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const float gap = style.ItemSpacing.x;
    // (a title with sub- and superscripts, W_i^Q, is a little taller than a line)
    const float title_h = std::max(ImGui::GetTextLineHeightWithSpacing(), math_text_size("$W_{8}^Q$").y + style.ItemSpacing.y);
    const float h = std::max(2 * line, room.y - title_h - 0.25f * font);
    const float x_w = 0.32f * room.x, w_w = 0.06f * room.x;
    const float weight_bar = colour_bar_width(w_v_.heatmap().lo(), w_v_.heatmap().hi());
    const float o_w = (room.x - x_w - 3 * w_w - weight_bar - colour_bar_width(v_.heatmap().lo(), v_.heatmap().hi()) - 6 * gap) / 3;
    const ImVec2 row_origin = ImGui::GetCursorScreenPos();
    // The row labels are X's: Q, K and V stand level with it, row for row (hovering one marks its token in all).
    MapViewOptions labelled = signed_map;
    labelled.always_label = true;
    labelled.label_width = std::min(MapView::label_width_for(x_qlabels), 0.4f * x_w);
    // A title, and the map under it at title_h below the title's top, whatever the title's own height.
    const auto titled = [&](const std::string& title, float width) {
      const ImVec2 top = ImGui::GetCursorScreenPos();
      math_text(title, width, 0, "map_title");
      ImGui::SetCursorScreenPos(ImVec2(top.x, top.y + title_h));
    };
    // X: labelled rows; for cross-attention its two inputs, each half the height.
    ImGui::BeginGroup();
    char title[96];
    if (cross) {
      std::snprintf(title, sizeof(title), "%s",
                    tr(T::qkv_x_decoder, {{"rows", static_cast<int>(in.queries_from->rows())}, {"d_model", c.d_model}}).c_str());
      titled(title, x_w);
      x_q_.heatmap().set_axis_labels(x_qlabels);
      x_q_.draw("qkv_input", ImVec2(x_w, 0.5f * h - title_h), x_q_axis, none, labelled);
      std::snprintf(title, sizeof(title), "%s",
                    tr(T::qkv_x_encoder, {{"rows", static_cast<int>(in.keys_from->rows())}, {"d_model", c.d_model}}).c_str());
      titled(title, x_w);
      x_kv_.heatmap().set_axis_labels(x_klabels);
      x_kv_.draw("qkv_input_keys", ImVec2(x_w, 0.5f * h), x_k_axis, none, labelled);
    } else {
      std::snprintf(title, sizeof(title), "X [%d \u00d7 %d]", static_cast<int>(in.queries_from->rows()), c.d_model);
      titled(title, x_w);
      x_q_.heatmap().set_axis_labels(x_qlabels);
      x_q_.draw("qkv_input", ImVec2(x_w, h), x_q_axis, none, labelled);
    }
    ImGui::EndGroup();
    // The head's weights, one scale (its bar on the last).
    MapViewOptions weight = signed_map;
    weight.style.grid = false;
    weight.value_name = tr(T::map_value_weight);
    const char* letters[3] = {"Q", "K", "V"};
    MapView* slices[3] = {&w_q_, &w_k_, &w_v_};
    const char* names[3] = {"qkv_weight_q", "qkv_weight_k", "qkv_weight_v"};
    for (int i = 0; i < 3; ++i) {
      ImGui::SameLine(0, gap);
      ImGui::BeginGroup();
      if (reshaped) std::snprintf(title, sizeof(title), "$W^%s$", letters[i]);
      else std::snprintf(title, sizeof(title), "$W_{%d}^%s$", i_shown, letters[i]);
      titled(title, w_w);
      weight.colour_bar = i == 2;
      slices[i]->draw(names[i], ImVec2(i == 2 ? w_w + weight_bar : w_w, h), none, none, weight);
      ImGui::EndGroup();
    }
    // Q, K, V: one scale, its bar on the last.
    MapView* outputs[3] = {&q_, &k_, &v_};
    const char* output_names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      ImGui::SameLine(0, gap);
      ImGui::BeginGroup();
      // (one line, as every title of the row: the maps start level, row for row with X's labels)
      std::snprintf(title, sizeof(title), "$%s_{%d}$ [%d \u00d7 %d]", letters[i], i_shown, outputs[i]->heatmap().rows(),
                    outputs[i]->heatmap().cols());
      if (math_text_size(title).x > o_w) std::snprintf(title, sizeof(title), "$%s_{%d}$", letters[i], i_shown);
      titled(title, o_w);
      const MapAxis& axis = i == 0 ? q_axis : k_axis;
      MapViewOptions o = signed_map;
      o.colour_bar = i == 2;
      outputs[i]->heatmap().set_axis_labels(*axis.labels);  // row names for export
      const MapAxis shown{nullptr, nullptr, axis.tokens, axis.side, axis.role};
      const float width = i == 2 ? o_w + colour_bar_width(v_.heatmap().lo(), v_.heatmap().hi()) : o_w;
      const MapViewHit hit = outputs[i]->draw(output_names[i], ImVec2(width, h), shown, none, o);
      if (hit.hovered && hit.row < static_cast<int>(axis.labels->size()))
        ImGui::SetTooltip(
            "%s", tr(T::qkv_cell_tip, {{"name", output_names[i]},
                                       {"token", (*axis.labels)[static_cast<size_t>(hit.row)]},
                                       {"column", hit.col},
                                       {"value", number_text("%.4g", outputs[i]->heatmap().value(hit.row, hit.col))}})
                      .c_str());
      if (hit.clicked) opened_ = Opened{i == 0 ? Side::Query : Side::Key, hit.row};
      ImGui::EndGroup();
    }
    record_item("main_map", row_origin, ImVec2(row_origin.x + room.x, row_origin.y + title_h + h), -1, "qkv");
    return;
  }

  // 1. The input X (for cross-attention, the decoder's rows for Q and the encoder's output for K and V) and the
  //    head's slices of the three weight matrices.
  const float top_h = std::max(4 * line, avail.y * (high_contrast() ? 0.3f : 0.36f));
  const float x_w = avail.x * 0.5f - style.ItemSpacing.x;
  ImGui::BeginGroup();
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + x_w);
  if (cross) {
    ImGui::TextUnformatted(
        tr(T::qkv_x_for_queries, {{"rows", static_cast<int>(in.queries_from->rows())}, {"d_model", c.d_model}})
            .c_str());
    x_q_.heatmap().set_axis_labels(x_qlabels);
    x_q_.draw("qkv_input", ImVec2(x_w, 0.5f * top_h - line), x_q_axis, none, signed_map);
    ImGui::TextUnformatted(
        tr(T::qkv_x_for_keys, {{"rows", static_cast<int>(in.keys_from->rows())}, {"d_model", c.d_model}}).c_str());
    x_kv_.heatmap().set_axis_labels(x_klabels);
    x_kv_.draw("qkv_input_keys", ImVec2(x_w, 0.5f * top_h - line), x_k_axis, none, signed_map);
  } else {
    ImGui::TextUnformatted(
        tr(T::qkv_x_rows, {{"rows", static_cast<int>(in.queries_from->rows())}, {"d_model", c.d_model}}).c_str());
    x_q_.heatmap().set_axis_labels(x_qlabels);
    x_q_.draw("qkv_input", ImVec2(x_w, top_h - line), x_q_axis, none, signed_map);
  }
  ImGui::PopTextWrapPos();
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  const float w_w = (avail.x - x_w - 3 * style.ItemSpacing.x) / 3 - style.ItemSpacing.x;
  MapViewOptions weights = signed_map;
  weights.style.grid = false;
  weights.value_name = tr(T::map_value_weight);
  const char* titles[3] = {"Q", "K", "V"};
  MapView* slices[3] = {&w_q_, &w_k_, &w_v_};
  const char* names[3] = {"qkv_weight_q", "qkv_weight_k", "qkv_weight_v"};
  for (int i = 0; i < 3; ++i) {
    if (i > 0) ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + w_w);
    ImGui::PopTextWrapPos();
    char title[96];
    if (reshaped)
      std::snprintf(
          title, sizeof(title), "%s",
          tr(T::qkv_weight_every_head, {{"weight", std::string("$W^") + titles[i] + "$"}, {"rows", D}, {"columns", D}})
              .c_str());
    else std::snprintf(title, sizeof(title), "$W_{%d}^%s$ [%d \u00d7 %d]", i_shown, titles[i], c.d_model, D);
    math_text(title, w_w);
    slices[i]->draw(names[i], ImVec2(w_w, std::min(top_h - line, w_w * 1.2f)), none, none, weights);
    ImGui::EndGroup();
  }
  ImGui::EndGroup();

  // 2. Q, K, V of the head, or one token's projection.
  const ImVec2 rest = ImGui::GetContentRegionAvail();
  if (!opened_) {
    const float col_width = (rest.x - 2 * style.ItemSpacing.x) / 3;
    // (a heading with a subscript, Q_1, is a little taller than a line: the maps take what it leaves)
    const float heading_h = std::max(line, math_text_size("$Q_{8}$ [8]").y + style.ItemSpacing.y);
    auto column = [&](MapView& view, const char* name, const char* title, const MapAxis& axis, Side side) {
      ImGui::BeginGroup();
      char heading[64];
      std::snprintf(heading, sizeof(heading), "$%s_{%d}$ [%d \u00d7 %d]", title, i_shown, view.heatmap().rows(),
                    view.heatmap().cols());
      math_text(heading, col_width);
      view.heatmap().set_axis_labels(*axis.labels);  // row names for export
      MapViewOptions o = signed_map;
      o.label_width = std::min(MapView::label_width_for(*axis.labels), col_width * 0.45f);
      const MapViewHit hit = view.draw(name, ImVec2(col_width, rest.y - heading_h), axis, none, o);
      if (hit.clicked) opened_ = Opened{side, hit.row};
      ImGui::EndGroup();
    };
    column(q_, "q", "Q", q_axis, Side::Query);
    ImGui::SameLine();
    column(k_, "k", "K", k_axis, Side::Key);
    ImGui::SameLine();
    column(v_, "v", "V", k_axis, Side::Key);
    return;
  }

  const bool query = opened_->side == Side::Query;
  const int row = opened_->row;
  const Mat& x = query ? *in.queries_from : *in.keys_from;
  const std::string& token = (query ? qlabels : klabels)[static_cast<size_t>(row)];
  if (reshaped)
    text_wrapped(
                       tr(T::qkv_projection_reshaped, {{"token", token}, {"row", row}, {"head", i_shown}}).c_str());
  else
    text_wrapped(tr(T::qkv_projection, {{"token", token}, {"row", row}, {"head", i_shown}}).c_str());
  same_line_if_fits(button_width(tr(T::qkv_close)));
  if (ImGui::SmallButton(tr(T::qkv_close))) {
    opened_.reset();
    return;
  }
  const int n = query ? 1 : 2;
  const LinearWeights* lin[2] = {query ? &w.q : &w.k, &w.v};
  const char* w_letters[2] = {query ? "Q" : "K", "V"};
  const char* out_names[2] = {query ? "q" : "k", "v"};
  const Mat* traced[2] = {query ? &q : &k, &v};
  if (!uploaded_opened_ || uploaded_opened_->side != opened_->side || uploaded_opened_->row != row) {
    // The opened token's row of X, the head's weight slices and the rows they give: once per token opened.
    const RowVec x_in = reshaped ? reshaped_piece(x, H, sel.head, row) : RowVec(x.row(row));
    x_row_.set_signed(x_in);
    for (int i = 0; i < n; ++i) {
      w_slice_[i].set_signed(head_slice(*lin[i]));
      const RowVec out = reshaped ? RowVec(x_in * lin[i]->weight.transpose()) : project_head_row(x, *lin[i], sel.head, D, row);
      out_row_[i].set_signed(out);
      projection_diff_[i] = (out - traced[i]->row(row)).cwiseAbs().maxCoeff();
    }
    uploaded_opened_ = opened_;
  }
  const std::vector<std::string> x_label = {"x_" + std::to_string(row)};
  MapAxis x_axis;
  x_axis.labels = &x_label;
  const float strip_h = 1.6f * font;
  x_row_.draw("qkv_x_row", ImVec2(rest.x, strip_h), x_axis, none, signed_map);
  const float block_w = (rest.x - (n - 1) * style.ItemSpacing.x) / n;
  const float slice_h = std::max(3 * line, rest.y - 3 * strip_h - 5 * line);
  for (int i = 0; i < n; ++i) {
    if (i > 0) ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + block_w);
    char title[120];
    if (reshaped)
      std::snprintf(
          title, sizeof(title), "%s",
          tr(T::qkv_weight_shared, {{"weight", std::string("$W^") + w_letters[i] + "$"}, {"rows", D}, {"columns", D}})
              .c_str());
    else
      std::snprintf(title, sizeof(title), "%s",
                    tr(T::qkv_weight_block, {{"weight", "$W_{" + std::to_string(i_shown) + "}^" + w_letters[i] + "$"},
                                             {"rows", c.d_model},
                                             {"columns", D},
                                             {"ordinal", ordinal(i_shown)},
                                             {"matrix", std::string("$W^") + w_letters[i] + "$"}})
                        .c_str());
    math_text(title, block_w);
    MapViewOptions o = signed_map;
    o.style.grid = false;
    o.value_name = tr(T::map_value_weight);
    w_slice_[i].draw(i == 0 ? "qkv_slice_0" : "qkv_slice_1", ImVec2(block_w, slice_h), none, none, o);
    // The output row as the equation gives it (out_row_), and how far the trace's row is from it.
    const std::vector<std::string> o_label = {std::string(out_names[i]) + "_" + std::to_string(row)};
    MapAxis o_axis;
    o_axis.labels = &o_label;
    char equation[120];
    if (reshaped)
      std::snprintf(equation, sizeof(equation), "$%s_{%d} = piece_{%d} W^%s$ [1 \u00d7 %d]", out_names[i], row, row, w_letters[i], D);
    else
      std::snprintf(equation, sizeof(equation), "$%s_{%d} = x_{%d} W_{%d}^%s%s$ [1 \u00d7 %d]", out_names[i], row, row,
                    i_shown, w_letters[i], c.bias ? (std::string(" + b_{") + std::to_string(i_shown) + "}^" + w_letters[i]).c_str() : "", D);
    math_text(equation, block_w, 0, "formula.projection");
    out_row_[i].draw(i == 0 ? "qkv_out_0" : "qkv_out_1", ImVec2(block_w, strip_h), o_axis, none, signed_map);
    const float diff = projection_diff_[i];
    text_disabled_wrapped("%s", tr(T::qkv_trace_differs,
                                   {{"name", out_names[i]}, {"row", row}, {"difference", number_text("%.1e", diff)}})
                                    .c_str());
    record_item("qkv.projection", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), i, out_names[i], diff);
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
  }
}

}  // namespace sf::gui
