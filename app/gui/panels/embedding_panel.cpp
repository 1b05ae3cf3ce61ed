#include "gui/panels/embedding_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "gui/render/math_text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "gui/words.h"

namespace sf::gui {

void EmbeddingPanel::draw(const AppState& state) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  const EmbeddingTrace& src = state.trace.src;  // tok_embed, pos, sum: (S, C)
  const EmbeddingTrace& tgt = state.trace.tgt;  // (T, C)
  if (uploaded_version_ != state.version) {
    // One symmetric range for all four maps, so equal colours mean equal values: the 99th percentile of |x|.
    std::vector<float> magnitudes(src.sum.data(), src.sum.data() + src.sum.size());
    magnitudes.insert(magnitudes.end(), tgt.sum.data(), tgt.sum.data() + tgt.sum.size());
    for (float& v : magnitudes) v = std::abs(v);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + magnitudes.size() * 99 / 100, magnitudes.end());
    range_ = std::max(1e-3f, magnitudes[magnitudes.size() * 99 / 100]);
    const std::pair<MapView*, const Mat*> maps[] = {
        {&embedding_, &src.tok_embed}, {&sum_, &src.sum}, {&target_embedding_, &tgt.tok_embed}, {&target_sum_, &tgt.sum}};
    for (const auto& [view, m] : maps) view->set_values(*m, -range_, range_);
    uploaded_version_ = state.version;
  }
  const bool scaled = c.embedding_scale == EmbeddingScale::SqrtDModel;
  const LanguageWords words = language_words(state.model.get());
  if (!high_contrast()) ImGui::TextUnformatted("Embedding: each token id picks one row of the embedding matrix E");
  explanation(fill_languages(
                  scaled
                      ? "The embedding matrix holds one learned vector per vocabulary word. A token's id selects its "
                        "row: the vector is what the model knows about the word before it sees the sentence. As in "
                        "the paper (section 3.4) the vectors are multiplied by $\\sqrt{d_{model}}$ so that they are "
                        "not drowned by the positional encoding (values in [-1, 1]) added next. The encoder embeds the "
                        "{source} sentence; the decoder embeds the {target} words so far, shifted right by <bos>."
                      : "The embedding matrix holds one learned vector per vocabulary word. A token's id selects its "
                        "row: the vector is what the model knows about the word before it sees the sentence. This "
                        "model adds the positional encoding to it as it is, without the paper's $\\sqrt{d_{model}}$ "
                        "scale. The encoder embeds the {source} sentence; the decoder embeds the {target} words so far, "
                        "shifted right by <bos>.",
                  words)
                  .c_str());
  char numbers[160];
  if (scaled)
    std::snprintf(numbers, sizeof(numbers), " = E[id_i] \u00b7 %.1f     E_src [%d \u00d7 %d]     E_tgt [%d \u00d7 %d]",
                  std::sqrt(float(c.d_model)), state.model->src_vocab.size(), c.d_model, state.model->tgt_vocab.size(),
                  c.d_model);
  else
    std::snprintf(numbers, sizeof(numbers), "     E_src [%d \u00d7 %d]     E_tgt [%d \u00d7 %d]", state.model->src_vocab.size(),
                  c.d_model, state.model->tgt_vocab.size(), c.d_model);
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
                        const char* input_name, const std::vector<std::string>& rows, const std::vector<std::string>* row_tips,
                        TokenSide token_side, int n, const char* stack) {
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + half);
    ImGui::TextUnformatted(heading);
    MapAxis axis, none;
    axis.labels = &rows;
    axis.tips = row_tips;
    axis.tokens = true;
    axis.side = token_side;
    embedded.heatmap().set_axis_labels(rows);  // row names for export
    embedded.draw(embedded_name, ImVec2(half, map_h), axis, none, o);
    char input_title[160];
    std::snprintf(input_title, sizeof(input_title), "+ positional encoding \u2192 the %s's input $x_i + PE_{pos}$ [%d \u00d7 %d]",
                  stack, n, c.d_model);
    math_text(input_title, half);
    input.heatmap().set_axis_labels(rows);
    input.draw(input_name, ImVec2(half, map_h), axis, none, o);
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
  };
  const std::string source_heading = fill_languages("Source ({source}): the encoder's tokens", words);
  const std::string target_heading = fill_languages("Target ({target}, shifted right): the decoder's tokens", words);
  side(source_heading.c_str(), embedding_, "embedding", sum_, "encoder_input", labels, &tips, TokenSide::Source,
       static_cast<int>(src.sum.rows()), "encoder");
  ImGui::SameLine();
  side(target_heading.c_str(), target_embedding_, "target_embedding", target_sum_, "decoder_input", target_labels,
       nullptr, TokenSide::Target, static_cast<int>(tgt.sum.rows()), "decoder");
}

}  // namespace sf::gui
