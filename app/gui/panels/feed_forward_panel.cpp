#include "gui/panels/feed_forward_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "gui/stage_tensors.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

PanelAsk FeedForwardPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  draw_stage(context.state, selection);
  return ask_select(context, selection);
}

void FeedForwardPanel::draw_stage(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model()->config;
  const bool encoder = sel.kind == AttentionKind::Encoder;
  const int layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  const FeedForwardTrace& f = encoder ? state.trace().encoder[static_cast<size_t>(sel.layer)].ffn
                                      : state.trace().decoder[static_cast<size_t>(sel.layer)].ffn;
  if (controls_toggle(&controls_open_)) {
    stack_and_layer_picker(&sel.kind, &sel.layer, layers, 6, c);
  }

  const bool relu = c.activation == Activation::ReLU;
  if (!high_contrast())  // presentation mode: the header says it
    ImGui::TextUnformatted(
        tr(T::feed_forward_heading, {{"stack", encoder ? tr(T::feed_forward_encoder) : tr(T::feed_forward_decoder)},
                                     {"layer", shown_number(sel.layer)}})
            .c_str());
  if (high_contrast() && !controls_open_ && explanations_shown()) ImGui::SameLine();  // one line of toggles
  // ReLU cuts negatives to exactly 0; GELU, x Phi(x) (GPT-2's tanh approximation of it too), and SiLU,
  // x sigma(x), bend them.
  const char* smooth_name = c.activation == Activation::SiLU ? "SiLU, x\u00b7\u03c3(x)," : "GELU, x\u00b7\u03a6(x),";
  explanation((relu ? tr(T::feed_forward_explanation)
                    : tr(T::feed_forward_explanation_smooth, {{"activation", smooth_name}}))
                  .c_str());
  // The paper: FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, W_1 [d_model x d_ff], W_2 [d_ff x d_model] (the file
  // stores their transposes, as PyTorch's linear layers do).
  const char* activation = relu ? "max(0, x W_1 + b_1)" : c.activation == Activation::SiLU ? "SiLU(x W_1 + b_1)" : "GELU(x W_1 + b_1)";
  const int n = static_cast<int>(f.hidden.rows());
  formula(std::string("$FFN(x) = ") + activation + " W_2 + b_2$" +
          tr(T::feed_forward_shapes, {{"n", n}, {"d_model", c.d_model}, {"d_ff", c.d_ff}}));

  const Mat* x = feed_forward_input(c, state.trace(), encoder, sel.layer);
  if (!x) return;
  if (uploaded_version_ != state.version() || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer) {
    input_.set_signed(*x);
    pre_.set_signed(f.hidden_pre);
    // After ReLU the values are >= 0: a sequential scale whose dark end is exactly zero. GELU dips below 0.
    const float r = signed_range(f.hidden_pre);
    post_.set_values(f.hidden, relu ? 0.0f : -r, r);
    out_.set_signed(f.out);
    uploaded_version_ = state.version();
    uploaded_ = sel;
  }
  const Eigen::Index zeros = (f.hidden.array() == 0.0f).count();
  const double zero_percent = 100.0 * static_cast<double>(zeros) / static_cast<double>(f.hidden.size());
  text_wrapped(tr(relu ? T::feed_forward_zeros_relu : T::feed_forward_zeros,
                              {{"zeros", static_cast<long long>(zeros)},
                               {"hidden", static_cast<long long>(f.hidden.size())},
                               {"percent", number_text("%.0f", zero_percent)}})
                               .c_str());

  const std::vector<std::string> labels = encoder ? state.source_labels() : state.decoder_row_labels();
  const TokenSide side_of_rows = encoder ? TokenSide::Source : TokenSide::Target;
  MapAxis rows, linked, none;
  rows.labels = &labels;
  rows.tokens = linked.tokens = true;
  rows.side = linked.side = side_of_rows;
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_w = MapView::label_width_for(labels);
  // Widths in proportion to the columns (C, F, F, C), at least a fifth of the room each.
  const float room = avail.x - label_w - 3 * style.ItemSpacing.x;
  const float total = 2.0f * c.d_model + 2.0f * c.d_ff;
  float widths[4];
  for (int i = 0; i < 4; ++i) widths[i] = std::max(0.2f * room, room * ((i == 0 || i == 3) ? c.d_model : c.d_ff) / total);
  const float scale = room / (widths[0] + widths[1] + widths[2] + widths[3]);
  for (float& w : widths) w *= scale;
  widths[0] += label_w;
  const char* titles[4] = {tr(T::feed_forward_step_input), tr(T::feed_forward_step_pre),
                           relu ? tr(T::feed_forward_step_relu) : tr(T::feed_forward_step_activation),
                           tr(T::feed_forward_step_output)};
  const char* names[4] = {"ffn_input", "ffn_hidden_pre", "ffn_hidden", "ffn_output"};
  MapView* views[4] = {&input_, &pre_, &post_, &out_};
  float title_h = 0;
  for (int i = 0; i < 4; ++i) title_h = std::max(title_h, math_text_size(titles[i], widths[i]).y);
  const ImVec2 maps_origin = ImGui::GetCursorScreenPos();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) ImGui::SameLine();
    ImGui::BeginGroup();
    const float top = ImGui::GetCursorScreenPos().y;
    math_text(titles[i], widths[i]);
    ImGui::SetCursorScreenPos(ImVec2(ImGui::GetCursorScreenPos().x, top + title_h + style.ItemSpacing.y));
    MapViewOptions o;
    o.style = {i == 2 && relu ? Colormap::Viridis : Colormap::Diverging, false};
    o.label_width = i == 0 ? label_w : 0.0f;
    o.value_name = i == 1 || i == 2 ? tr(T::feed_forward_hidden_unit) : tr(T::map_value_value);
    views[i]->heatmap().set_axis_labels(labels);  // row names for export
    views[i]->draw(names[i], ImVec2(widths[i], avail.y - title_h - style.ItemSpacing.y), i == 0 ? rows : linked, none, o);
    ImGui::EndGroup();
  }
  record_item("main_map", maps_origin, ImVec2(maps_origin.x + avail.x, ImGui::GetItemRectMax().y), -1, "feed_forward");
}

}  // namespace sf::gui
