#include "gui/panels/add_norm_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/widgets.h"

namespace sf::gui {

namespace {

struct Block {
  const char* name;
  const Mat* sum;                // the residual sum (post-norm: the norm's input)
  const LayerNormTrace* norm;    // its layer norm
};

}  // namespace

void AddNormPanel::draw(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  const bool encoder = sel.kind == AttentionKind::Encoder;
  const int layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  std::vector<Block> blocks;
  if (encoder) {
    const EncoderLayerTrace& t = state.trace.encoder[static_cast<size_t>(sel.layer)];
    blocks = {{"after self-attention", &t.residual1, &t.norm1}, {"after the feed-forward", &t.residual2, &t.norm2}};
  } else {
    const DecoderLayerTrace& t = state.trace.decoder[static_cast<size_t>(sel.layer)];
    blocks = {{"after masked self-attention", &t.residual1, &t.norm1},
              {"after cross-attention", &t.residual2, &t.norm2},
              {"after the feed-forward", &t.residual3, &t.norm3}};
  }
  block_ = std::clamp(block_, 0, static_cast<int>(blocks.size()) - 1);

  int side = encoder ? 0 : 1;
  ImGui::RadioButton("encoder", &side, 0);
  ImGui::SameLine();
  ImGui::RadioButton("decoder", &side, 1);
  if (side != (encoder ? 0 : 1)) sel.kind = side == 0 ? AttentionKind::Encoder : AttentionKind::Decoder;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
  ImGui::SliderInt("layer", &sel.layer, 0, layers - 1);
  for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
    same_line_if_fits(labelled_box_width(blocks[static_cast<size_t>(b)].name));  // large type: a line of its own
    ImGui::RadioButton(blocks[static_cast<size_t>(b)].name, &block_, b);
  }
  const Block& blk = blocks[static_cast<size_t>(block_)];
  const bool post = c.norm_placement == NormPlacement::Post;

  ImGui::Text("Add & norm, %s layer %d, %s", encoder ? "encoder" : "decoder", sel.layer, blk.name);
  explanation(
      "Add: the sublayer's output is added to its input (the residual connection), so information and gradients "
      "can flow straight through the stack. Norm: layer normalisation rescales each token's vector to mean 0 and "
      "standard deviation 1, then multiplies by gamma and adds beta (learned per dimension). It keeps the numbers "
      "in a range where training is stable.");
  if (post)
    ImGui::TextWrapped("y = LayerNorm(x + Sublayer(x))     LayerNorm(z) = (z - mean(z)) / sqrt(var(z) + eps) * gamma + beta");
  else
    ImGui::TextWrapped("pre-norm: y = x + Sublayer(LayerNorm(x))   (this model normalises before each sublayer)");

  if (uploaded_version_ != state.version || uploaded_block_ != block_ || uploaded_.kind != sel.kind ||
      uploaded_.layer != sel.layer) {
    const float r = std::max(1e-3f, blk.sum->cwiseAbs().maxCoeff());
    sum_.set_values(blk.sum->data(), static_cast<int>(blk.sum->rows()), static_cast<int>(blk.sum->cols()), -r, r);
    const float rn = std::max(1e-3f, blk.norm->out.cwiseAbs().maxCoeff());
    normed_.set_values(blk.norm->out.data(), static_cast<int>(blk.norm->out.rows()), static_cast<int>(blk.norm->out.cols()),
                       -rn, rn);
    uploaded_version_ = state.version;
    uploaded_block_ = block_;
    uploaded_ = sel;
  }

  // Per-token statistics: before (the norm's input, recorded by the forward) and after (its output).
  const std::vector<std::string> labels = encoder ? state.source_labels() : state.decoder_row_labels();
  const Mat& out = blk.norm->out;
  if (ImGui::BeginTable("stats", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("token");
    ImGui::TableSetupColumn(post ? "mean of x + sublayer" : "mean of x");
    ImGui::TableSetupColumn("std before");
    ImGui::TableSetupColumn("mean after");
    ImGui::TableSetupColumn("std after");
    ImGui::TableHeadersRow();
    for (Eigen::Index i = 0; i < out.rows() && i < static_cast<Eigen::Index>(labels.size()); ++i) {
      const float mean_after = out.row(i).mean();
      const float std_after = std::sqrt((out.row(i).array() - mean_after).square().mean());
      const TokenSide side = encoder ? TokenSide::Source : TokenSide::Target;
      ImGui::TableNextRow();
      if (is_hovered_token(side, static_cast<int>(i))) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kHoverColour);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(labels[static_cast<size_t>(i)].c_str());
      if (ImGui::IsItemHovered()) report_hovered_token(side, static_cast<int>(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", blk.norm->mean(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", blk.norm->std(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", mean_after);
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", std_after);
    }
    ImGui::EndTable();
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float bar = std::max(colour_bar_width(sum_.lo(), sum_.hi()), colour_bar_width(normed_.lo(), normed_.hi()));
  const ImVec2 size((avail.x - 2 * bar) / 2 - 2 * ImGui::GetStyle().ItemSpacing.x,
                    std::max(40.0f, avail.y - ImGui::GetTextLineHeightWithSpacing() * 1.5f));
  ImGui::BeginGroup();
  ImGui::Text(post ? "x + Sublayer(x) [%d x %d]" : "layer-norm input x [%d x %d]", sum_.rows(), sum_.cols());
  sum_.set_axis_labels(labels);  // row names for export
  sum_.draw("residual_sum", size);
  ImGui::EndGroup();
  ImGui::SameLine();
  colour_bar("value", sum_.lo(), sum_.hi(), ImVec2(bar, size.y));
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::Text("after LayerNorm [%d x %d]", normed_.rows(), normed_.cols());
  normed_.set_axis_labels(labels);
  normed_.draw("layer_norm", size);
  ImGui::EndGroup();
  ImGui::SameLine();
  colour_bar("value", normed_.lo(), normed_.hi(), ImVec2(bar, size.y));
}

}  // namespace sf::gui
