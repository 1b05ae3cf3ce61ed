#include "gui/panels/feed_forward_panel.h"

#include <imgui.h>

#include <algorithm>

#include "gui/widgets.h"

namespace sf::gui {

void FeedForwardPanel::draw(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  const bool encoder = sel.kind == AttentionKind::Encoder;
  const int layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  const FeedForwardTrace& f = encoder ? state.trace.encoder[static_cast<size_t>(sel.layer)].ffn
                                      : state.trace.decoder[static_cast<size_t>(sel.layer)].ffn;
  int side = encoder ? 0 : 1;
  ImGui::RadioButton("encoder", &side, 0);
  ImGui::SameLine();
  ImGui::RadioButton("decoder", &side, 1);
  if (side != (encoder ? 0 : 1)) sel.kind = side == 0 ? AttentionKind::Encoder : AttentionKind::Decoder;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  ImGui::SliderInt("layer", &sel.layer, 0, layers - 1);

  const bool relu = c.activation == Activation::ReLU;
  ImGui::Text("Feed-forward, %s layer %d", encoder ? "encoder" : "decoder", sel.layer);
  explanation(
      "Attention mixes information between tokens; the feed-forward network then works on each token alone: it "
      "widens the vector from d_model to d_ff numbers, applies a non-linearity, and narrows it back. ReLU sets "
      "every negative number to exactly zero, so only some hidden units fire for a given token.");
  ImGui::TextWrapped("FFN(x) = %s(x W1^T + b1) W2^T + b2     x [%d x %d]  W1 [%d x %d]  hidden [%d x %d]  W2 [%d x %d]",
              relu ? "ReLU" : "GELU", static_cast<int>(f.hidden.rows()), c.d_model, c.d_ff, c.d_model,
              static_cast<int>(f.hidden.rows()), c.d_ff, c.d_model, c.d_ff);

  if (uploaded_version_ != state.version || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer) {
    const float r = std::max(1e-3f, f.hidden_pre.cwiseAbs().maxCoeff());
    pre_.set_values(f.hidden_pre.data(), static_cast<int>(f.hidden_pre.rows()), static_cast<int>(f.hidden_pre.cols()), -r, r);
    // After ReLU the values are >= 0: the dark end of the map is exactly zero.
    post_.set_values(f.hidden.data(), static_cast<int>(f.hidden.rows()), static_cast<int>(f.hidden.cols()),
                     relu ? 0.0f : -r, r);
    uploaded_version_ = state.version;
    uploaded_ = sel;
  }
  const Eigen::Index zeros = (f.hidden.array() == 0.0f).count();
  ImGui::Text("%s: %lld of %lld hidden values are zero (%.0f%%)%s", relu ? "ReLU" : "GELU",
              static_cast<long long>(zeros), static_cast<long long>(f.hidden.size()),
              100.0 * static_cast<double>(zeros) / static_cast<double>(f.hidden.size()),
              relu ? "; darkest = exactly 0" : "");

  const std::vector<std::string> labels = encoder ? state.source_labels() : state.decoder_row_labels();
  const TokenSide side_of_rows = encoder ? TokenSide::Source : TokenSide::Target;
  const float label_width = ImGui::GetFontSize() * 7;
  const float bar = std::max(colour_bar_width(pre_.lo(), pre_.hi()), colour_bar_width(post_.lo(), post_.hi()));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int rows = pre_.rows();
  const float row_height = std::clamp((avail.y - 3 * ImGui::GetTextLineHeightWithSpacing()) / (2 * rows), 5.0f,
                                      ImGui::GetFontSize() * 1.4f);
  auto strip = [&](Heatmap& h, const char* name, const char* title) {
    ImGui::TextUnformatted(title);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    token_row_labels(origin, labels, row_height, label_width - 8, side_of_rows);
    ImGui::SetCursorScreenPos(ImVec2(origin.x + label_width, origin.y));
    int row = -1, col = -1;
    h.set_axis_labels(labels);  // row names for export
    if (h.draw(name, ImVec2(avail.x - label_width - bar - ImGui::GetStyle().ItemSpacing.x, row_height * rows), {}, &row, &col)) {
      report_hovered_token(side_of_rows, row);
      ImGui::SetTooltip("token \"%s\", hidden unit %d: %.3f", labels[static_cast<size_t>(row)].c_str(), col, h.value(row, col));
    }
    ImGui::SameLine();
    colour_bar("value", h.lo(), h.hi(), ImVec2(bar, row_height * rows));
  };
  strip(pre_, "ffn_hidden_pre", "x W1^T + b1 (before the activation)");
  strip(post_, "ffn_hidden", relu ? "after ReLU: negatives become 0" : "after GELU");
}

}  // namespace sf::gui
