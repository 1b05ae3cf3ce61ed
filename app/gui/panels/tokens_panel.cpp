#include "gui/panels/tokens_panel.h"

#include <imgui.h>

#include "gui/render/item_placements.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {

// A token as a box: the text large, the id small beneath. Colours: special tokens grey, unknown words red.
void token_box(const std::string& text, int id, ImU32 fill, const char* tooltip, TokenSide side, int index) {
  const ImVec2 text_size = ImGui::CalcTextSize(text.c_str());
  const std::string id_text = std::to_string(id);
  const ImVec2 id_size = ImGui::CalcTextSize(id_text.c_str());
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  const ImVec2 size(std::max(text_size.x, id_size.x) + 2 * pad.x, text_size.y + id_size.y + 2 * pad.y);
  if (ImGui::GetContentRegionAvail().x < size.x) ImGui::NewLine();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), fill, 4.0f);
  record_item(side == TokenSide::Source ? "token.source" : "token.target", p, ImVec2(p.x + size.x, p.y + size.y), index,
              text);
  if (is_hovered_token(side, index)) draw->AddRect(p, ImVec2(p.x + size.x, p.y + size.y), kHoverColour, 4.0f, 0, 3.0f);
  draw->AddText(ImVec2(p.x + (size.x - text_size.x) / 2, p.y + pad.y), IM_COL32(255, 255, 255, 255), text.c_str());
  draw->AddText(ImVec2(p.x + (size.x - id_size.x) / 2, p.y + pad.y + text_size.y), IM_COL32(200, 200, 200, 255),
                id_text.c_str());
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered()) {
    report_hovered_token(side, index);
    if (tooltip) ImGui::SetTooltip("%s", tooltip);
  }
  ImGui::SameLine();
}

constexpr ImU32 kWordColour = IM_COL32(40, 90, 150, 255);
constexpr ImU32 kSpecialColour = IM_COL32(90, 90, 90, 255);
constexpr ImU32 kUnknownColour = IM_COL32(170, 40, 40, 255);

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
    token_box(t.special ? t.text : unescape_token(t.text), t.id, t.unknown ? kUnknownColour : t.special ? kSpecialColour : kWordColour,
              tip.c_str(), TokenSide::Source, static_cast<int>(i));
  }
  ImGui::NewLine();
  ImGui::Spacing();
  text_disabled_wrapped("target vocabulary: %d tokens; each token's probability when the model chose it: hover it, "
                      "or see the decoding stage", state.model->tgt_vocab.size());
  ImGui::TextUnformatted("Translation: the English tokens and their ids");
  const Mat& probs = state.trace.probs;  // (T, V): row t predicts the token after decoder input t
  for (size_t t = 0; t < state.translation.size(); ++t) {
    const int id = state.translation[t];
    const float p = static_cast<Eigen::Index>(t) < probs.rows() ? probs(static_cast<Eigen::Index>(t), id) : 0.0f;
    char tip[96];
    std::snprintf(tip, sizeof(tip), "id %d, chosen with probability %.3f", id, p);
    const bool special = id == state.model->config.eos_id;
    // Generated token t is the decoder's input at position t + 1 (after <bos>).
    token_box(unescape_token(state.model->tgt_vocab.token(id)), id, special ? kSpecialColour : kWordColour, tip,
              TokenSide::Target, static_cast<int>(t) + 1);
  }
  ImGui::NewLine();
}

}  // namespace sf::gui
