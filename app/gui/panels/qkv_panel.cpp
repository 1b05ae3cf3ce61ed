#include "gui/panels/qkv_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/widgets.h"

namespace sf::gui {

namespace {

float symmetric_range(const Mat& a, const Mat& b, const Mat& c) {
  const float m = std::max({a.cwiseAbs().maxCoeff(), b.cwiseAbs().maxCoeff(), c.cwiseAbs().maxCoeff()});
  return m > 0 ? m : 1.0f;
}

}  // namespace

void QkvPanel::draw(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  draw_attention_selector(c, sel, /*with_head=*/true);
  const AttentionTrace* a = selected_attention(state.trace, sel);
  if (!a || a->q.empty()) return;
  const int H = c.n_heads, D = c.head_dim();
  const Mat& q = a->q[sel.head];  // (Tq, D)
  const Mat& k = a->k[sel.head];  // (Tk, D)
  const Mat& v = a->v[sel.head];  // (Tk, D)

  ImGui::Text("Queries, keys and values (%s, layer %d)",
              sel.kind == AttentionKind::Encoder   ? "encoder self-attention"
              : sel.kind == AttentionKind::Decoder ? "decoder masked self-attention"
                                                   : "cross-attention: queries from the decoder, keys and values from the encoder",
              sel.layer);
  explanation(
      "Every token's vector x is multiplied by three learned matrices. The query q says what the token is looking "
      "for, the key k what it offers to others, the value v what it passes on when attended to. The C columns are "
      "cut into H heads of D columns each: every head compares queries and keys in its own small space, so "
      "different heads can look for different things.");
  ImGui::TextWrapped("Q = X W_Q^T + b_Q    K = X W_K^T + b_K    V = X W_V^T + b_V     X [%d x %d]  W [%d x %d]  ->  Q, K, V [%d x %d]",
              static_cast<int>(q.rows()), c.d_model, c.d_model, c.d_model, static_cast<int>(q.rows()), c.d_model);
  ImGui::Text("split into %d heads of D = %d / %d = %d columns; head %d owns columns %d..%d", H, c.d_model, H, D,
              sel.head, sel.head * D, sel.head * D + D - 1);

  // The head strip: which slice of the C columns the selected head owns.
  {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x * 0.8f, h = ImGui::GetFontSize() * 1.2f;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (int i = 0; i < H; ++i) {
      const ImVec2 a0(p.x + w * i / H, p.y), a1(p.x + w * (i + 1) / H - 2, p.y + h);
      draw->AddRectFilled(a0, a1, i == sel.head ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 90, 120, 255));
      char label[16];
      std::snprintf(label, sizeof(label), "head %d", i);
      draw->AddText(ImVec2(a0.x + 4, a0.y), IM_COL32(255, 255, 255, 255), label);
    }
    ImGui::Dummy(ImVec2(w, h + 4));
  }

  if (uploaded_version_ != state.version || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer ||
      uploaded_.head != sel.head) {
    const float r = symmetric_range(q, k, v);
    q_.set_values(q.data(), static_cast<int>(q.rows()), D, -r, r);
    k_.set_values(k.data(), static_cast<int>(k.rows()), D, -r, r);
    v_.set_values(v.data(), static_cast<int>(v.rows()), D, -r, r);
    uploaded_version_ = state.version;
    uploaded_ = sel;
  }
  const std::vector<std::string> qlabels =
      sel.kind == AttentionKind::Encoder ? state.source_labels() : state.decoder_input_labels();
  const std::vector<std::string> klabels = sel.kind == AttentionKind::Cross ? state.source_labels() : qlabels;

  const float label_width = ImGui::GetFontSize() * 7;
  const float bar = colour_bar_width(q_.lo(), q_.hi());
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float col_width = (avail.x - bar) / 3 - label_width - ImGui::GetStyle().ItemSpacing.x * 2;
  const int rows = static_cast<int>(std::max(q.rows(), k.rows()));
  const float row_height = std::clamp((avail.y - 2 * ImGui::GetTextLineHeightWithSpacing()) / rows, 6.0f,
                                      ImGui::GetFontSize() * 1.6f);
  auto column = [&](Heatmap& h, const char* name, const char* title, const std::vector<std::string>& labels,
                    TokenSide side) {
    ImGui::BeginGroup();
    ImGui::Text("%s [%d x %d]", title, h.rows(), h.cols());
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    token_row_labels(origin, labels, row_height, label_width - 4, side);
    ImGui::SetCursorScreenPos(ImVec2(origin.x + label_width, origin.y));
    int row = -1, col = -1;
    h.set_axis_labels(labels);  // row names for export
    if (h.draw(name, ImVec2(col_width, row_height * h.rows()), {}, &row, &col)) {
      report_hovered_token(side, row);
      ImGui::SetTooltip("%s of \"%s\", dimension %d of head %d: %.3f", title, labels[static_cast<size_t>(row)].c_str(),
                        col, sel.head, h.value(row, col));
    }
    ImGui::EndGroup();
    ImGui::SameLine();
  };
  const TokenSide qside = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  const TokenSide kside = sel.kind == AttentionKind::Decoder ? TokenSide::Target : TokenSide::Source;
  column(q_, "q", "Q", qlabels, qside);
  column(k_, "k", "K", klabels, kside);
  column(v_, "v", "V", klabels, kside);
  colour_bar("value", q_.lo(), q_.hi(), ImVec2(bar, row_height * rows));
}

}  // namespace sf::gui
