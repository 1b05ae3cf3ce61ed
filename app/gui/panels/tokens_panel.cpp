#include "gui/panels/tokens_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {

// A token as a box: the text large, the id small beneath (an unknown word: "<unk> 0", what the model reads).
// Colours: special tokens grey, unknown words red. `min_width`: at least that wide (columns of the decoder).
ImVec2 token_box_size(const std::string& text, const std::string& id_text) {
  const ImVec2 text_size = ImGui::CalcTextSize(text.c_str()), id_size = ImGui::CalcTextSize(id_text.c_str());
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  return ImVec2(std::max(text_size.x, id_size.x) + 2 * pad.x, text_size.y + id_size.y + 2 * pad.y);
}

void token_box(const std::string& text, const std::string& id_text, ImU32 fill, const char* tooltip, TokenSide side,
               int index, const char* record_as, float min_width = 0, bool same_line = true) {
  const ImVec2 text_size = ImGui::CalcTextSize(text.c_str());
  const ImVec2 id_size = ImGui::CalcTextSize(id_text.c_str());
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  ImVec2 size = token_box_size(text, id_text);
  size.x = std::max(size.x, min_width);
  // Beside the previous box when it fits, else on a line of its own (deciding before SameLine, so that a line
  // that breaks leaves no trailing item spacing past the edge).
  if (same_line && index > 0) same_line_if_fits(size.x);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), fill, 4.0f);
  record_item(record_as, p, ImVec2(p.x + size.x, p.y + size.y), index, text);
  if (is_hovered_token(side, index)) draw->AddRect(p, ImVec2(p.x + size.x, p.y + size.y), kHoverColour, 4.0f, 0, 3.0f);
  draw->AddText(ImVec2(p.x + (size.x - text_size.x) / 2, p.y + pad.y), IM_COL32(255, 255, 255, 255), text.c_str());
  draw->AddText(ImVec2(p.x + (size.x - id_size.x) / 2, p.y + pad.y + text_size.y), IM_COL32(200, 200, 200, 255),
                id_text.c_str());
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered()) {
    report_hovered_token(side, index);
    if (tooltip) ImGui::SetTooltip("%s", tooltip);
  }
}

constexpr ImU32 kWordColour = IM_COL32(40, 90, 150, 255);
constexpr ImU32 kSpecialColour = IM_COL32(90, 90, 90, 255);
constexpr ImU32 kUnknownColour = IM_COL32(170, 40, 40, 255);
constexpr ImU32 kInputColour = IM_COL32(45, 100, 95, 255);  // the decoder's input: the translation shifted right

}  // namespace

void draw_tokens_panel(const AppState& state) {
  if (!state.model) return;
  ImGui::TextUnformatted("Tokenization");
  explanation(
      "The model reads words from a fixed vocabulary, lowercased and with punctuation split off, as its training "
      "data were. Each token becomes an id: the row of the embedding matrix it will look up. Words the "
      "vocabulary does not hold become <unk>. <bos> and <eos> mark the start and end of the sentence.");
  text_disabled_wrapped("source vocabulary: %d tokens; grey: special tokens, red: unknown words (read as <unk>)",
                      state.model->src_vocab.size());
  for (size_t i = 0; i < state.source_tokens.size(); ++i) {
    const Token& t = state.source_tokens[i];
    std::string tip;
    if (t.unknown) tip = "\"" + t.surface + "\" is not in the vocabulary: the model sees <unk> (id " + std::to_string(t.id) + ")";
    else if (t.special) tip = t.text == state.model->src_vocab.token(state.model->config.bos_id) ? "beginning of sentence" : "end of sentence";
    else tip = "\"" + t.surface + "\" -> token \"" + unescape_token(t.text) + "\", id " + std::to_string(t.id);
    const std::string id_text = t.unknown ? state.model->src_vocab.token(t.id) + " " + std::to_string(t.id) : std::to_string(t.id);
    token_box(t.special ? t.text : unescape_token(t.text), id_text,
              t.unknown ? kUnknownColour : t.special ? kSpecialColour : kWordColour, tip.c_str(), TokenSide::Source,
              static_cast<int>(i), "token.source");
  }
  ImGui::Spacing();
  text_disabled_wrapped("target vocabulary: %d tokens; each token's probability when the model chose it: hover it, "
                      "or see the decoding stage", state.model->tgt_vocab.size());
  ImGui::TextWrapped("The decoder: at each position it reads one token (top) and writes the next (bottom)");
  text_disabled_wrapped("its input is the translation shifted right by one, after <bos>: reading \"%s\" it wrote \"%s\"",
                        "<bos>", state.translation.empty() ? "?" : state.target_token(state.translation[0]).c_str());
  const Mat& probs = state.trace.probs;  // (T, V): row t predicts the token after decoder input t
  const std::vector<std::string> inputs = state.decoder_input_labels();
  const float arrow = ImGui::GetFontSize() * 0.9f;
  for (size_t t = 0; t < state.translation.size(); ++t) {
    const int id = state.translation[t];
    const float p = static_cast<Eigen::Index>(t) < probs.rows() ? probs(static_cast<Eigen::Index>(t), id) : 0.0f;
    // Column t: decoder input t above, the token it chose below (generated token t is input t + 1).
    const std::string input = t < inputs.size() ? inputs[t] : "";
    const int input_id = t < state.trace.tgt.ids.size() ? state.trace.tgt.ids[t] : -1;
    const std::string output = unescape_token(state.model->tgt_vocab.token(id));
    const ImVec2 in_size = token_box_size(input, std::to_string(input_id));
    const ImVec2 out_size = token_box_size(output, std::to_string(id));
    const float width = std::max(in_size.x, out_size.x);
    if (t > 0) same_line_if_fits(width);
    ImGui::BeginGroup();
    char tip[128];
    std::snprintf(tip, sizeof(tip), "position %zu reads \"%s\"", t, input.c_str());
    token_box(input, std::to_string(input_id), input_id == state.model->config.bos_id ? kSpecialColour : kInputColour,
              tip, TokenSide::Target, static_cast<int>(t), "token.decoder_input", width, false);
    const ImVec2 a = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float cx = a.x + width / 2;
    draw->AddLine(ImVec2(cx, a.y), ImVec2(cx, a.y + arrow - 4), IM_COL32(200, 200, 200, 255), 2.0f);
    draw->AddTriangleFilled(ImVec2(cx - 5, a.y + arrow - 7), ImVec2(cx + 5, a.y + arrow - 7), ImVec2(cx, a.y + arrow - 1),
                            IM_COL32(200, 200, 200, 255));
    ImGui::Dummy(ImVec2(width, arrow));
    std::snprintf(tip, sizeof(tip), "written at position %zu: id %d, probability %.3f", t, id, p);
    const bool special = id == state.model->config.eos_id;
    // Generated token t is the decoder's input at position t + 1 (after <bos>).
    token_box(output, std::to_string(id), special ? kSpecialColour : kWordColour, tip, TokenSide::Target,
              static_cast<int>(t) + 1, "token.target", width, false);
    ImGui::EndGroup();
  }
}

}  // namespace sf::gui
