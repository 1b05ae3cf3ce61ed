#include "gui/panels/embedding_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "gui/render/item_placements.h"
#include "gui/words.h"

namespace sf::gui {

PanelAsk EmbeddingPanel::draw(const PanelContext& context) {
  draw_stage(context.state);
  return {};
}

void EmbeddingPanel::draw_stage(const AppState& state) {
  if (!state.ready()) return;
  const Config& c = state.model()->config;
  const EmbeddingTrace& src = state.trace().src;  // tok_embed, pos, sum: (S, C)
  const EmbeddingTrace& tgt = state.trace().tgt;  // (T, C)
  if (uploaded_version_ != state.version()) {
    // One symmetric range for all four maps, so equal colours mean equal values: the 99th percentile of |x|.
    std::vector<float> magnitudes(src.sum.data(), src.sum.data() + src.sum.size());
    magnitudes.insert(magnitudes.end(), tgt.sum.data(), tgt.sum.data() + tgt.sum.size());
    for (float& v : magnitudes) v = std::abs(v);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + magnitudes.size() * 99 / 100, magnitudes.end());
    range_ = std::max(1e-3f, magnitudes[magnitudes.size() * 99 / 100]);
    const std::pair<MapView*, const Mat*> maps[] = {
        {&embedding_, &src.tok_embed}, {&sum_, &src.sum}, {&target_embedding_, &tgt.tok_embed}, {&target_sum_, &tgt.sum}};
    for (const auto& [view, m] : maps)
      if (m->size() > 0) view->set_values(*m, -range_, range_);  // (a decoder-only model has no source)
    uploaded_version_ = state.version();
  }
  const bool scaled = c.embedding_scale == EmbeddingScale::SqrtDModel;
  if (state.decoder_only() || state.encoder_only()) {  // one stack, one input
    draw_prompt(state);
    return;
  }
  const LanguageWords words = language_words(state.model().get());
  if (!high_contrast()) ImGui::TextUnformatted(tr(T::embedding_heading));
  explanation(tr(scaled ? T::embedding_explanation_scaled : T::embedding_explanation,
                 {{"source", words.source}, {"target", words.target}})
                  .c_str());
  char numbers[200];
  if (scaled)
    std::snprintf(numbers, sizeof(numbers), "$ = E[id_i] \\cdot$ %.1f     $E_{src}$ [%d \u00d7 %d]     $E_{tgt}$ [%d \u00d7 %d]",
                  std::sqrt(float(c.d_model)), state.model()->src_vocab.size(), c.d_model, state.model()->tgt_vocab.size(),
                  c.d_model);
  else
    std::snprintf(numbers, sizeof(numbers), "     $E_{src}$ [%d \u00d7 %d]     $E_{tgt}$ [%d \u00d7 %d]",
                  state.model()->src_vocab.size(), c.d_model, state.model()->tgt_vocab.size(), c.d_model);
  formula(std::string(scaled ? "$x_i = E[id_i] \\cdot \\sqrt{d_{model}}$" : "$x_i = E[id_i]$") + numbers);

  const std::vector<std::string> labels = state.source_labels(), tips = state.source_label_tips();
  const std::vector<std::string> target_labels = state.decoder_input_labels();
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float half = (avail.x - style.ItemSpacing.x) / 2;
  const float map_h = std::max(3 * line, (avail.y - 4 * line) / 2);
  MapViewOptions o;
  o.style = {Colormap::Diverging, false};
  const auto side = [&](const char* heading, MapView& embedded, const char* embedded_name, MapView& input,
                        const char* input_name, const std::vector<std::string>& rows,
                        const std::vector<std::string>* row_tips, TokenSide token_side, int n, T input_title_form) {
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + half);
    text_wrapped_at_pos(heading);
    MapAxis axis, none;
    axis.labels = &rows;
    axis.tips = row_tips;
    axis.tokens = true;
    axis.side = token_side;
    embedded.heatmap().set_axis_labels(rows);  // row names for export
    embedded.draw(embedded_name, ImVec2(half, map_h), axis, none, o);
    math_text(tr(input_title_form, {{"rows", n}, {"d_model", c.d_model}}), half);
    input.heatmap().set_axis_labels(rows);
    input.draw(input_name, ImVec2(half, map_h), axis, none, o);
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
  };
  // Presentation mode: one row across the stage's height, the source's two maps then the target's, row for row
  // with their labels on the left of each pair: E[id] times the scale, then + PE (one scale for all four, its bar
  // at the end). Rows keep labels of at least half the body text (the maps zoom where they would not).
  if (high_contrast()) {
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const float gap = style.ItemSpacing.x, bar = colour_bar_width(-range_, range_);
    const float label_w_src = std::min(MapView::label_width_for(labels), 0.14f * room.x);
    const float label_w_tgt = std::min(MapView::label_width_for(target_labels), 0.14f * room.x);
    const float each = (room.x - label_w_src - label_w_tgt - bar - 4 * gap - 1.5f * gap) / 4;
    const std::string titles[4] = {tr(scaled ? T::embedding_map_source_scaled : T::embedding_map_source,
                                      {{"source_capital", words.source_capital}}),
                                   tr(T::embedding_map_encoder_input),
                                   tr(T::embedding_map_target, {{"target_capital", words.target_capital}}),
                                   tr(T::embedding_map_decoder_input)};
    // The maps start level under the tallest title (they stand row for row).
    float title_h = line;
    for (int i = 0; i < 4; ++i)
      title_h = std::max(title_h, math_text_size(titles[i], (i == 0 ? label_w_src : i == 2 ? label_w_tgt : 0.0f) + each).y +
                                      style.ItemSpacing.y);
    const float h = std::max(2 * line, room.y - title_h - 0.25f * ImGui::GetFontSize());
    const ImVec2 row_origin = ImGui::GetCursorScreenPos();
    MapViewOptions labelled = o;
    labelled.always_label = true;
    const auto map = [&](MapView& view, const char* name, const std::string& title, const std::vector<std::string>& rows,
                         const std::vector<std::string>* row_tips, TokenSide token_side, float label_w, bool with_bar) {
      ImGui::BeginGroup();
      const ImVec2 top = ImGui::GetCursorScreenPos();
      math_text(title, label_w + each, 0, "map_title");
      ImGui::SetCursorScreenPos(ImVec2(top.x, top.y + title_h));
      MapAxis axis, none;
      axis.labels = label_w > 0 ? &rows : nullptr;
      axis.tips = row_tips;
      axis.tokens = true;
      axis.side = token_side;
      MapViewOptions options = labelled;
      options.label_width = label_w;
      options.colour_bar = with_bar;
      view.heatmap().set_axis_labels(rows);  // row names for export
      view.draw(name, ImVec2(label_w + each + (with_bar ? bar : 0.0f), h), axis, none, options);
      ImGui::EndGroup();
    };
    map(embedding_, "embedding", titles[0], labels, &tips, TokenSide::Source, label_w_src, false);
    ImGui::SameLine(0, gap);
    map(sum_, "encoder_input", titles[1], labels, &tips, TokenSide::Source, 0.0f, false);
    ImGui::SameLine(0, 2.5f * gap);
    map(target_embedding_, "target_embedding", titles[2], target_labels, nullptr, TokenSide::Target, label_w_tgt, false);
    ImGui::SameLine(0, gap);
    map(target_sum_, "decoder_input", titles[3], target_labels, nullptr, TokenSide::Target, 0.0f, true);
    record_item("main_map", row_origin, ImVec2(row_origin.x + room.x, row_origin.y + title_h + h), -1, "embedding");
    return;
  }
  const std::string source_heading = tr(T::embedding_source_heading, {{"source", words.source}});
  const std::string target_heading = tr(T::embedding_target_heading, {{"target", words.target}});
  side(source_heading.c_str(), embedding_, "embedding", sum_, "encoder_input", labels, &tips, TokenSide::Source,
       static_cast<int>(src.sum.rows()), T::embedding_input_title_encoder);
  ImGui::SameLine();
  side(target_heading.c_str(), target_embedding_, "target_embedding", target_sum_, "decoder_input", target_labels,
       nullptr, TokenSide::Target, static_cast<int>(tgt.sum.rows()), T::embedding_input_title_decoder);
}

// A decoder-only model: one stack, one input: the prompt's (and continuation's) token embeddings, then with the
// positions added, the decoder's input.
// An encoder-only model's one input likewise: the sentence's ([CLS] ... [SEP], blanks as [MASK]), the source side.
void EmbeddingPanel::draw_prompt(const AppState& state) {
  const Config& c = state.model()->config;
  const bool whole = state.encoder_only();
  const EmbeddingTrace& tgt = whole ? state.trace().src : state.trace().tgt;  // (T, C) or (S, C)
  const int vocabulary = static_cast<int>((whole ? state.model()->src_vocab : state.model()->tgt_vocab).size());
  const bool scaled = c.embedding_scale == EmbeddingScale::SqrtDModel;
  if (!high_contrast()) ImGui::TextUnformatted(tr(T::embedding_heading));
  explanation(tr(whole    ? (scaled ? T::bert_embedding_explanation_scaled : T::bert_embedding_explanation)
                 : scaled ? T::gpt_embedding_explanation_scaled
                          : T::gpt_embedding_explanation));
  char numbers[120];
  if (scaled)
    std::snprintf(numbers, sizeof(numbers), "$ = E[id_i] \\cdot$ %.1f     $E$ [%d \u00d7 %d]", std::sqrt(float(c.d_model)),
                  vocabulary, c.d_model);
  else
    std::snprintf(numbers, sizeof(numbers), "     $E$ [%d \u00d7 %d]", vocabulary, c.d_model);
  formula(std::string(scaled ? "$x_i = E[id_i] \\cdot \\sqrt{d_{model}}$" : "$x_i = E[id_i]$") + numbers);
  const std::vector<std::string> labels = whole ? state.source_labels() : state.decoder_input_labels();
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 room = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // The two maps side by side, row for row: E[id] (times the scale), then + positions.
  const float gap = style.ItemSpacing.x, bar = colour_bar_width(-range_, range_);
  const float label_w = std::min(MapView::label_width_for(labels), 0.2f * room.x);
  const float each = (room.x - label_w - bar - 2 * gap) / 2;
  const std::string titles[2] = {tr(scaled ? T::gpt_embedding_map_tokens_scaled : T::gpt_embedding_map_tokens),
                                 tr(T::gpt_embedding_map_input, {{"rows", static_cast<int>(tgt.sum.rows())}, {"d_model", c.d_model}})};
  float title_h = line;
  for (int i = 0; i < 2; ++i)
    title_h = std::max(title_h, math_text_size(titles[i], (i == 0 ? label_w : 0.0f) + each).y + style.ItemSpacing.y);
  const float h = std::max(3 * line, room.y - title_h - 0.5f * ImGui::GetFontSize());
  const ImVec2 row_origin = ImGui::GetCursorScreenPos();
  MapViewOptions options;
  options.style = {Colormap::Diverging, false};
  options.always_label = true;
  const auto map = [&](MapView& view, const char* name, const std::string& title, float width_label, bool with_bar) {
    ImGui::BeginGroup();
    const ImVec2 top = ImGui::GetCursorScreenPos();
    math_text(title, width_label + each, 0, "map_title");
    ImGui::SetCursorScreenPos(ImVec2(top.x, top.y + title_h));
    MapAxis axis, none;
    axis.labels = width_label > 0 ? &labels : nullptr;
    axis.tokens = true;
    axis.side = whole ? TokenSide::Source : TokenSide::Target;
    MapViewOptions o = options;
    o.label_width = width_label;
    o.colour_bar = with_bar;
    view.heatmap().set_axis_labels(labels);  // row names for export
    view.draw(name, ImVec2(width_label + each + (with_bar ? bar : 0.0f), h), axis, none, o);
    ImGui::EndGroup();
  };
  map(whole ? embedding_ : target_embedding_, whole ? "embedding" : "target_embedding", titles[0], label_w, false);
  ImGui::SameLine(0, gap);
  map(whole ? sum_ : target_sum_, whole ? "encoder_input" : "decoder_input", titles[1], 0.0f, true);
  record_item("main_map", row_origin, ImVec2(row_origin.x + room.x, row_origin.y + title_h + h), -1, "embedding");
}

}  // namespace sf::gui
