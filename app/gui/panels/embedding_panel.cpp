#include "gui/panels/embedding_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/widgets.h"

namespace sf::gui {

void EmbeddingPanel::draw(const AppState& state) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  const EmbeddingTrace& src = state.trace.src;  // tok_embed, pos, sum: (S, C)
  if (uploaded_version_ != state.version) {
    // One symmetric range for both maps, so equal colours mean equal values: the 99th percentile of |x|.
    std::vector<float> magnitudes(src.sum.data(), src.sum.data() + src.sum.size());
    for (float& v : magnitudes) v = std::abs(v);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + magnitudes.size() * 99 / 100, magnitudes.end());
    range_ = std::max(1e-3f, magnitudes[magnitudes.size() * 99 / 100]);
    embedding_.set_values(src.tok_embed.data(), static_cast<int>(src.tok_embed.rows()),
                          static_cast<int>(src.tok_embed.cols()), -range_, range_);
    sum_.set_values(src.sum.data(), static_cast<int>(src.sum.rows()), static_cast<int>(src.sum.cols()), -range_, range_);
    uploaded_version_ = state.version;
  }
  const bool scaled = c.embedding_scale == EmbeddingScale::SqrtDModel;
  ImGui::TextUnformatted("Embedding: each token id picks one row of the embedding matrix E");
  explanation(
      "The embedding matrix holds one learned vector per vocabulary word. A token's id selects its row: the "
      "vector is what the model knows about the word before it sees the sentence. The vectors are multiplied by "
      "sqrt(d_model) so that they are not drowned by the positional encoding (values in [-1, 1]) added next.");
  if (scaled)
    ImGui::Text("x_i = E[id_i] * sqrt(d_model) = E[id_i] * %.1f   E: [%d x %d]   tokens: [%d x %d]", std::sqrt(float(c.d_model)),
                state.model->src_vocab.size(), c.d_model, static_cast<int>(src.tok_embed.rows()), c.d_model);
  else
    ImGui::Text("x_i = E[id_i]   E: [%d x %d]   tokens: [%d x %d]", state.model->src_vocab.size(), c.d_model,
                static_cast<int>(src.tok_embed.rows()), c.d_model);

  const std::vector<std::string> labels = state.source_labels();
  float label_width = 0;
  for (const auto& s : labels) label_width = std::max(label_width, ImGui::CalcTextSize(s.c_str()).x);
  label_width += ImGui::GetStyle().ItemSpacing.x * 2;
  const float bar = colour_bar_width(-range_, range_);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int rows = static_cast<int>(src.tok_embed.rows());
  const float row_height = std::clamp((avail.y - 4 * ImGui::GetTextLineHeightWithSpacing()) / (2 * rows), 6.0f,
                                      ImGui::GetFontSize() * 1.6f);
  const ImVec2 size(avail.x - label_width - bar - ImGui::GetStyle().ItemSpacing.x, row_height * rows);

  auto strip = [&](Heatmap& h, const char* name) {
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    token_row_labels(origin, labels, row_height, label_width - ImGui::GetStyle().ItemSpacing.x, TokenSide::Source);
    ImGui::SetCursorScreenPos(ImVec2(origin.x + label_width, origin.y));
    int row = -1, col = -1;
    h.set_axis_labels(labels);  // row names for export
    if (h.draw(name, size, {}, &row, &col)) {
      report_hovered_token(TokenSide::Source, row);
      ImGui::SetTooltip("token \"%s\", dimension %d: %.3f", labels[static_cast<size_t>(row)].c_str(), col, h.value(row, col));
    }
    ImGui::SameLine();
    colour_bar("value", -range_, range_, ImVec2(bar, size.y));
  };
  strip(embedding_, "embedding");
  ImGui::Text("+ positional encoding  ->  the encoder's input  x_i + PE(i)   [%d x %d]", rows, c.d_model);
  strip(sum_, "encoder_input");
}

}  // namespace sf::gui
