#include "gui/panels/add_norm_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/render/item_placements.h"
#include "gui/stage_tensors.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

PanelAsk AddNormPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  draw_stage(context.state, selection);
  return ask_select(context, selection);
}

void AddNormPanel::draw_stage(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model()->config;
  const bool encoder = sel.kind == AttentionKind::Encoder;
  const int layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  const std::vector<ResidualBlock> blocks = residual_blocks(c, state.trace(), encoder, sel.layer);
  if (blocks.empty()) return;
  block_ = std::clamp(block_, 0, static_cast<int>(blocks.size()) - 1);

  if (controls_toggle(&controls_open_)) {
    stack_and_layer_picker(&sel.kind, &sel.layer, layers, 4.5f, c);
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
      same_line_if_fits(labelled_box_width(blocks[static_cast<size_t>(b)].name));  // large type: a line of its own
      ImGui::RadioButton(blocks[static_cast<size_t>(b)].name, &block_, b);
    }
  }
  const ResidualBlock& blk = blocks[static_cast<size_t>(block_)];
  const bool post = c.norm_placement == NormPlacement::Post;

  if (!high_contrast())  // presentation mode: the header says it
    text_wrapped(
                       tr(T::add_norm_heading, {{"stack", encoder ? tr(T::add_norm_encoder) : tr(T::add_norm_decoder)},
                                                {"layer", shown_number(sel.layer)},
                                                {"block", blk.name}})
                           .c_str());
  if (high_contrast() && !controls_open_ && explanations_shown()) ImGui::SameLine();  // one line of toggles
  explanation(tr(T::add_norm_explanation));
  if (post && high_contrast())  // (the folded controls hid which block: the formula names it)
    formula(tr(T::add_norm_block_formula, {{"block", blk.name}}));
  else if (post)
    formula("$y = LayerNorm(x + Sublayer(x))$     $LayerNorm(z) = \\gamma \\cdot (z - \\mu) / \\sqrt{\\sigma^2 + \\epsilon} + \\beta$");
  else
    formula(tr(T::add_norm_formula_pre));

  // The four steps, left to right, in the order they happen.
  const Mat* steps[4] = {blk.input, post ? blk.sublayer_out : &blk.norm->out, post ? blk.sum : blk.sublayer_out,
                         post ? &blk.norm->out : blk.sum};
  const bool short_titles = high_contrast();
  const char* titles[4] = {
      short_titles ? "x" : tr(T::add_norm_step_input),
      post           ? "Sublayer(x)"
      : short_titles ? "LN(x)"
                     : tr(T::add_norm_step_norm_pre),  // notation alone: the same anywhere
      post ? "x + Sublayer(x)" : "Sublayer(LN(x))",
      post ? (short_titles ? tr(T::add_norm_step_output_post_short) : tr(T::add_norm_step_output_post))
           : (short_titles ? "x + Sublayer(LN(x))" : tr(T::add_norm_step_output_pre))};
  const char* names[4] = {"add_norm_input", post ? "sublayer_output" : "layer_norm",
                          post ? "residual_sum" : "sublayer_output", post ? "layer_norm" : "residual_sum"};
  if (uploaded_version_ != state.version() || uploaded_block_ != block_ || uploaded_.kind != sel.kind ||
      uploaded_.layer != sel.layer) {
    for (int i = 0; i < 4; ++i) maps_[i].set_signed(*steps[i]);
    uploaded_version_ = state.version();
    uploaded_block_ = block_;
    uploaded_ = sel;
  }

  const std::vector<std::string> labels = encoder ? state.source_labels() : state.decoder_row_labels();
  const TokenSide side_of_rows = encoder ? TokenSide::Source : TokenSide::Target;
  MapAxis rows, none;
  rows.labels = &labels;
  rows.tokens = true;
  rows.side = side_of_rows;
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // The maps take the upper part; the per-token statistics the rest (scrolling when long).
  const int n = static_cast<int>(blk.input->rows());
  // Below the maps, each token's mean and standard deviation: a table in normal mode (a third of the height
  // at most; its type shrinks to fit, down to half); in presentation mode the two lines a class reads (the
  // ranges before and after, and the hovered token's numbers), so that the maps keep the screen.
  const bool presenting = high_contrast();
  const float row_h = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const float table_h = presenting ? 2.2f * line : std::min(avail.y * 0.36f, (n + 1) * row_h + 4);
  const float table_scale = std::clamp(table_h / ((n + 1) * row_h + 4), 0.5f, 1.0f);
  const float maps_h = std::max(4 * line, avail.y - table_h - line);
  const float label_w = MapView::label_width_for(labels);
  const float each = (avail.x - label_w - 3 * style.ItemSpacing.x) / 4;
  MapViewOptions o;
  o.style = {Colormap::Diverging, false};
  float title_h = 0;  // the tallest title: every map starts below it, so that the rows line up across the four
  for (int i = 0; i < 4; ++i)
    title_h = std::max(title_h, ImGui::CalcTextSize(titles[i], nullptr, false, each + (i == 0 ? label_w : 0.0f)).y);
  const ImVec2 maps_origin = ImGui::GetCursorScreenPos();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) ImGui::SameLine();
    ImGui::BeginGroup();
    const float top = ImGui::GetCursorScreenPos().y;
    const float w = each + (i == 0 ? label_w : 0.0f);
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + w);
    text_wrapped_at_pos(titles[i]);
    ImGui::PopTextWrapPos();
    maps_[i].heatmap().set_axis_labels(labels);  // row names for export
    o.label_width = i == 0 ? label_w : 0.0f;
    ImGui::SetCursorScreenPos(ImVec2(ImGui::GetCursorScreenPos().x, top + title_h + style.ItemSpacing.y));
    maps_[i].draw(names[i], ImVec2(w, maps_h - title_h - style.ItemSpacing.y),
                  i == 0 ? rows : MapAxis{nullptr, nullptr, true, side_of_rows}, none, o);
    ImGui::EndGroup();
  }
  record_item("main_map", maps_origin, ImVec2(maps_origin.x + avail.x, ImGui::GetItemRectMax().y), -1, "add_norm");

  // Per-token statistics: the norm's input (mean and standard deviation as the forward recorded them) and its
  // output.
  const LayerNormTrace& norm = *blk.norm;
  const Mat& out = norm.out;
  // Each token's mean and standard deviation after the norm (the trace holds those before it).
  std::vector<float> after_mean(static_cast<size_t>(out.rows())), after_std(static_cast<size_t>(out.rows()));
  for (Eigen::Index i = 0; i < out.rows(); ++i) {
    after_mean[static_cast<size_t>(i)] = out.row(i).mean();
    after_std[static_cast<size_t>(i)] = std::sqrt((out.row(i).array() - after_mean[static_cast<size_t>(i)]).square().mean());
  }
  const auto mean_after = [&](Eigen::Index i) { return after_mean[static_cast<size_t>(i)]; };
  const auto std_after = [&](Eigen::Index i) { return after_std[static_cast<size_t>(i)]; };
  if (presenting) {
    float lo_m = 1e9f, hi_m = -1e9f, lo_s = 1e9f, hi_s = -1e9f, lo_ma = 1e9f, hi_ma = -1e9f, lo_sa = 1e9f, hi_sa = -1e9f;
    int hovered = -1;
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
      lo_m = std::min(lo_m, norm.mean(i)), hi_m = std::max(hi_m, norm.mean(i));
      lo_s = std::min(lo_s, norm.std(i)), hi_s = std::max(hi_s, norm.std(i));
      lo_ma = std::min(lo_ma, mean_after(i)), hi_ma = std::max(hi_ma, mean_after(i));
      lo_sa = std::min(lo_sa, std_after(i)), hi_sa = std::max(hi_sa, std_after(i));
      if (is_hovered_token(side_of_rows, static_cast<int>(i))) hovered = static_cast<int>(i);
    }
    text_wrapped(tr(T::add_norm_range, {{"mean_low", number_text("%.2f", lo_m)},
                                                    {"mean_high", number_text("%.2f", hi_m)},
                                                    {"std_low", number_text("%.2f", lo_s)},
                                                    {"std_high", number_text("%.2f", hi_s)},
                                                    {"mean_low_after", number_text("%.2f", lo_ma)},
                                                    {"mean_high_after", number_text("%.2f", hi_ma)},
                                                    {"std_low_after", number_text("%.2f", lo_sa)},
                                                    {"std_high_after", number_text("%.2f", hi_sa)}})
                                 .c_str());
    if (hovered >= 0)
      text_wrapped(tr(T::add_norm_token_stats, {{"token", labels[static_cast<size_t>(hovered)]},
                                                            {"mean", number_text("%.3f", norm.mean(hovered))},
                                                            {"std", number_text("%.3f", norm.std(hovered))},
                                                            {"mean_after", number_text("%.3f", mean_after(hovered))},
                                                            {"std_after", number_text("%.3f", std_after(hovered))}})
                                   .c_str());
    return;
  }
  ImGui::BeginChild("##stats", ImVec2(0, 0), false);
  ImGui::SetWindowFontScale(table_scale);
  if (ImGui::BeginTable("stats", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn(tr(T::add_norm_token));
    ImGui::TableSetupColumn(post ? tr(T::add_norm_mean_x_sublayer) : tr(T::add_norm_mean_x));
    ImGui::TableSetupColumn(tr(T::add_norm_std_before));
    ImGui::TableSetupColumn(tr(T::add_norm_mean_after));
    ImGui::TableSetupColumn(tr(T::add_norm_std_after));
    ImGui::TableHeadersRow();
    for (Eigen::Index i = 0; i < out.rows() && i < static_cast<Eigen::Index>(labels.size()); ++i) {
      ImGui::TableNextRow();
      if (is_hovered_token(side_of_rows, static_cast<int>(i))) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kHoverColour);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(labels[static_cast<size_t>(i)].c_str());
      if (ImGui::IsItemHovered()) report_hovered_token(side_of_rows, static_cast<int>(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", norm.mean(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", norm.std(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", mean_after(i));
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", std_after(i));
    }
    ImGui::EndTable();
  }
  ImGui::SetWindowFontScale(1.0f);
  ImGui::EndChild();
}

}  // namespace sf::gui
