#include "gui/panels/tokens_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <functional>
#include <string_view>
#include <vector>

#include "gui/render/item_placements.h"
#include "gui/render/heatmap.h"
#include "gui/render/map_view.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/panels/decoding_panel.h"
#include "gui/widgets.h"
#include "gui/words.h"
#include "model/sentencepiece.h"

namespace sf::gui {

namespace {

// A token as a box: the text large, the id small beneath (an unknown word: "<unk> 0", what the model reads).
// Colours: special tokens grey, unknown words red. `min_width`: at least that wide (columns of the decoder).
// Presentation mode: boxes without their ids (a hover shows them), so the whole story fits the screen.
bool g_compact = false;

ImVec2 token_box_size(const std::string& text, const std::string& id_text) {
  const ImVec2 text_size = ImGui::CalcTextSize(text.c_str());
  const ImVec2 id_size = g_compact ? ImVec2(0, 0) : ImGui::CalcTextSize(id_text.c_str());
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
  if (!g_compact)
    draw->AddText(ImVec2(p.x + (size.x - id_size.x) / 2, p.y + pad.y + text_size.y), IM_COL32(200, 200, 200, 255),
                  id_text.c_str());
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered()) {
    report_hovered_token(side, index);
    if (tooltip) ImGui::SetTooltip("%s", tooltip);  // (every tip names the id: compact boxes do not show it)
  }
}

constexpr ImU32 kWordColour = IM_COL32(40, 90, 150, 255);
constexpr ImU32 kSpecialColour = IM_COL32(90, 90, 90, 255);
constexpr ImU32 kUnknownColour = IM_COL32(170, 40, 40, 255);
constexpr ImU32 kInputColour = IM_COL32(45, 100, 95, 255);  // the decoder's input: the translation shifted right
constexpr ImU32 kMaskColour = IM_COL32(170, 110, 20, 255);   // a blank: [MASK] in place of a word
constexpr ImU32 kFilledColour = IM_COL32(150, 95, 150, 255); // what the model puts in a blank

float word_bracket_lift() { return std::max(2.0f, ImGui::GetStyle().ItemSpacing.y * 0.5f); }

// Word boundaries: a bracket under the boxes of each word made of more than one piece (model/sentencepiece.h,
// piece_words; "" for a special token), a segment per line where the word's boxes wrap. The boxes' corners:
// box_min[i], box_max[i]. Each segment is recorded as `item` with the word's letters.
void draw_word_brackets(const std::vector<std::string>& pieces, const std::vector<ImVec2>& box_min,
                        const std::vector<ImVec2>& box_max, const char* item) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float lift = word_bracket_lift();
  const ImU32 colour = IM_COL32(230, 200, 90, 255);
  for (const PieceWord& w : piece_words(pieces)) {
    if (w.pieces() < 2) continue;
    const std::string letters = word_letters(pieces, w);
    for (size_t a = w.begin; a < w.end;) {
      size_t b = a;  // [a, b]: the word's boxes on one line
      while (b + 1 < w.end && box_min[b + 1].y == box_min[a].y) ++b;
      const float y = box_max[a].y + lift;
      draw->AddLine(ImVec2(box_min[a].x + 2, y), ImVec2(box_max[b].x - 2, y), colour, 3.0f);
      if (a == w.begin) draw->AddLine(ImVec2(box_min[a].x + 2, y), ImVec2(box_min[a].x + 2, y - lift - 2), colour, 3.0f);
      if (b + 1 == w.end) draw->AddLine(ImVec2(box_max[b].x - 2, y), ImVec2(box_max[b].x - 2, y - lift - 2), colour, 3.0f);
      record_item(item, box_min[a], ImVec2(box_max[b].x, y), static_cast<int>(w.begin), letters);
      a = b + 1;
    }
  }
}

}  // namespace

namespace {

// One stage's picture: a name, the tensor it shows, its colour scale.
struct Thumbnail {
  Stage stage;
  T name;  // the string table's entry
  const Mat* values;
  bool probabilities;  // 0..1 on viridis; else signed on the diverging scale
};

}  // namespace

void TokensPanel::draw_source(const AppState& state, bool subwords) {
  if (!g_compact)
    text_disabled_wrapped("%s", tr(subwords ? T::tokens_source_vocabulary_pieces : T::tokens_source_vocabulary,
                                   {{"size", state.model()->src_vocab.size()}})
                                    .c_str());
  const std::vector<std::string> tips = state.source_label_tips();
  const std::vector<Token>& tokens = state.source_tokens();
  std::vector<ImVec2> box_min(tokens.size()), box_max(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    const std::string& tip = tips[i];
    const std::string id_text = t.unknown ? state.model()->src_vocab.token(t.id) + " " + std::to_string(t.id) : std::to_string(t.id);
    token_box(t.special ? t.text : unescape_token(t.text), id_text,
              t.unknown ? kUnknownColour : t.special ? kSpecialColour : kWordColour, tip.c_str(), TokenSide::Source,
              static_cast<int>(i), "token.source");
    box_min[i] = ImGui::GetItemRectMin();
    box_max[i] = ImGui::GetItemRectMax();
  }
  if (subwords) {
    std::vector<std::string> pieces;
    for (const Token& t : tokens) pieces.push_back(t.special ? std::string() : t.text);
    draw_word_brackets(pieces, box_min, box_max, "tokens.word_bracket");
    ImGui::Dummy(ImVec2(1, word_bracket_lift()));
  }
  if (subwords && !g_compact) {
    // The words the model reads as more than one piece: "orangefarbenen = ▁orangefarbene + n".
    std::vector<std::string> pieces;
    for (const Token& t : tokens) pieces.push_back(t.special ? std::string() : t.text);
    std::string split;
    int shown = 0;
    for (const PieceWord& w : piece_words(pieces)) {
      if (w.pieces() < 2 || shown == 6) continue;
      std::string word = state.sentence().substr(tokens[w.begin].begin, tokens[w.end - 1].end - tokens[w.begin].begin);
      std::string joined;
      for (size_t k = w.begin; k < w.end; ++k) joined += (k > w.begin ? " + " : "") + tokens[k].text;
      split += (split.empty() ? "" : ";   ") + word + " = " + joined;
      ++shown;
    }
    if (!split.empty()) {
      text_wrapped(tr(T::tokens_split_words, {{"words", split}}).c_str());
      record_item("tokens.subword_split", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, split);
    }
  }
}

PanelAsk TokensPanel::draw(const PanelContext& context) {
  PanelAsk ask;
  std::optional<int> mask;
  ask.open_stage = draw_stage(context.state, &mask);  // a picture clicked: its stage
  ask.toggle_mask = mask;  // a token clicked: [MASK] in its place, or its word back
  return ask;
}

std::optional<int> TokensPanel::draw_whole_sentence(const AppState& state) {
  const Config& c = state.model()->config;
  if (!g_compact) ImGui::TextUnformatted(tr(T::bert_tokens_heading));
  explanation(tr(T::bert_tokens_explanation));
  if (!g_compact)
    text_disabled_wrapped("%s", tr(c.has_mask_token() ? T::bert_tokens_vocabulary : T::bert_tokens_vocabulary_no_mask,
                                   {{"size", state.model()->src_vocab.size()}})
                                    .c_str());
  text_wrapped(tr(c.has_mask_token() ? T::bert_tokens_click_hint : T::bert_no_mask_token));
  if (!g_compact) text_disabled_wrapped("%s", tr(T::bert_tokens_predictions_note));
  // Column p: the token the model reads at p (a [MASK] amber), an arrow, the likeliest word there with its
  // probability (trace.probs (S, V), row p).
  const std::vector<std::string> labels = state.source_labels(), tips = state.source_label_tips();
  const std::vector<int> predicted = state.predicted_ids();
  const Mat& probs = state.trace().probs;
  const float arrow = ImGui::GetFontSize() * (g_compact ? 0.6f : 0.9f);
  std::optional<int> clicked;
  for (size_t p = 0; p < state.source_tokens().size(); ++p) {
    const Token& t = state.source_tokens()[p];
    const bool blank = t.id == c.mask_id;
    const std::string& label = labels[p];
    const int out = p < predicted.size() ? predicted[p] : -1;
    const std::string out_text = out >= 0 ? state.source_token(out) : "?";
    const float pr = out >= 0 && static_cast<Eigen::Index>(p) < probs.rows() ? probs(static_cast<Eigen::Index>(p), out) : 0.0f;
    const std::string out_id = probability_text(pr);
    const float width = std::max(token_box_size(label, std::to_string(t.id)).x, token_box_size(out_text, out_id).x);
    if (p > 0) same_line_if_fits(width);
    ImGui::BeginGroup();
    const std::string why = state.why_not_maskable(static_cast<int>(p));
    const std::string tip = why.empty() || blank ? tips[p] : tips[p] + "\n" + why;
    const ImU32 fill = blank ? kMaskColour : t.unknown ? kUnknownColour : t.special ? kSpecialColour : kWordColour;
    token_box(label, std::to_string(t.id), fill, tip.c_str(), TokenSide::Source, static_cast<int>(p),
              blank ? "token.masked" : "token.source", width, false);
    if (ImGui::IsItemHovered() && ImGui::IsMouseClicked(0) && why.empty()) clicked = static_cast<int>(p);
    const ImVec2 a = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float cx = a.x + width / 2;
    draw->AddLine(ImVec2(cx, a.y), ImVec2(cx, a.y + arrow - 4), IM_COL32(200, 200, 200, 255), 2.0f);
    draw->AddTriangleFilled(ImVec2(cx - 5, a.y + arrow - 7), ImVec2(cx + 5, a.y + arrow - 7), ImVec2(cx, a.y + arrow - 1),
                            IM_COL32(200, 200, 200, 255));
    ImGui::Dummy(ImVec2(width, arrow));
    const std::string out_tip =
        tr(T::bert_token_prediction_tip, {{"position", p}, {"token", out_text}, {"p", probability_text(pr)}});
    token_box(out_text, out_id, blank ? kFilledColour : kInputColour, out_tip.c_str(), TokenSide::Source,
              static_cast<int>(p), blank ? "token.filled" : "token.predicted", width, false);
    ImGui::EndGroup();
  }
  return clicked;
}

std::optional<Stage> TokensPanel::draw_stage(const AppState& state, std::optional<int>* mask_clicked) {
  if (!state.model()) return std::nullopt;
  std::optional<Stage> clicked;
  g_compact = high_contrast();  // presentation mode: the header names the stage, the notes wait behind Explain
  const bool subwords = uses_sentencepiece(state.model()->tokenizer);  // Marian's, and our words_bpe
  // <bos>, or Marian's <pad>; an encoder-only model has no decoder to start (and no target vocabulary)
  const std::string start = state.encoder_only() ? state.source_token(state.model()->config.bos_id)
                                                 : state.model()->tgt_vocab.token(state.model()->config.bos_id);
  const bool prompt = state.decoder_only();
  const bool whole = state.encoder_only();
  if (whole) {
    const std::optional<int> mask = draw_whole_sentence(state);
    if (mask_clicked) *mask_clicked = mask;
  } else if (prompt) {
    // A decoder-only model: no source, no encoder; it reads the prompt (after <bos> where it starts with one: our
    // GPT; GPT-2 adds nothing) and predicts at every position.
    const int first = state.prompt_start();
    if (!g_compact) ImGui::TextUnformatted(tr(T::gpt_tokens_heading));
    explanation(tr(first ? T::gpt_tokens_explanation : T::gpt_tokens_explanation_as_is, {{"start", start}}).c_str());
    if (!g_compact)
      text_disabled_wrapped("%s", tr(state.model()->tokenizer.kind == "byte_bpe" ? T::gpt_tokens_vocabulary_bytes
                                                                                 : T::gpt_tokens_vocabulary,
                                     {{"size", state.model()->tgt_vocab.size()}})
                                      .c_str());
    const std::vector<std::string> labels = state.source_labels(), tips = state.source_label_tips();
    if (first) {
      const std::string bos_tip = tr(T::state_token_bos, {{"token", start}});
      token_box(start, std::to_string(state.model()->config.bos_id), kSpecialColour, bos_tip.c_str(), TokenSide::Target,
                0, "token.prompt");
    }
    for (size_t i = 0; i < state.source_tokens().size(); ++i) {
      const Token& t = state.source_tokens()[i];
      const std::string id_text = t.unknown ? labels[i] + " " + std::to_string(t.id) : std::to_string(t.id);
      // (the prompt's token i is the decoder's input i + first)
      token_box(t.unknown ? t.surface : labels[i], id_text, t.unknown ? kUnknownColour : t.special ? kSpecialColour : kWordColour,
                tips[i].c_str(), TokenSide::Target, static_cast<int>(i) + first, "token.prompt");
    }
  } else {
    if (!g_compact) ImGui::TextUnformatted(subwords ? tr(T::tokens_heading_subwords) : tr(T::tokens_heading));
    if (subwords && state.model()->tokenizer.kind == "words_bpe")  // ours: the paper's shared byte-pair pieces
      explanation(tr(T::tokens_explanation_bpe,
                     {{"start", start},
                      {"size", state.model()->src_vocab.size()},
                      {"eos", state.source_token(state.model()->config.eos_id)}})
                      .c_str());
    else if (subwords)  // Marian's SentencePiece models
      explanation(tr(T::tokens_explanation_pieces, {{"start", start}}).c_str());
    else
      explanation(tr(T::tokens_explanation));
    draw_source(state, subwords);
  }
  ImGui::Spacing();
  if (whole) return draw_thumbnails(state);
  if (!g_compact && !prompt)
    text_disabled_wrapped("%s", tr(T::tokens_target_vocabulary, {{"size", state.model()->tgt_vocab.size()}}).c_str());
  text_wrapped(tr(prompt ? T::gpt_tokens_positions_note : T::tokens_decoder_note));
  if (!g_compact && !prompt)
    text_disabled_wrapped(
        "%s", tr(T::tokens_decoder_input_note,
                 {{"start", start},
                  {"translation", state.translation().empty() ? "?" : state.target_token(state.translation()[0])}})
                  .c_str());
  if (!g_compact && prompt)
    text_disabled_wrapped("%s", (state.prompt_start() ? tr(T::gpt_tokens_columns_note, {{"start", start}})
                                                       : tr(T::gpt_tokens_columns_note_as_is))
                                    .c_str());
  // Column t: decoder input t over the token after it. A translator's columns are the tokens it wrote; a
  // decoder-only model's begin with its prompt, where the token after each input is the prompt's next (given).
  const int offset = state.prompt_rows();
  const Mat& pass_probs = state.trace().probs;  // (T, V): a prompt row's probability of the prompt's next token
  const auto column_output = [&](size_t t) {
    const std::vector<int>& ids = state.trace().tgt.ids;
    return static_cast<int>(t) < offset ? (t + 1 < ids.size() ? ids[t + 1] : -1)
                                        : state.translation()[t - static_cast<size_t>(offset)];
  };
  const size_t columns = state.translation().size() + static_cast<size_t>(offset);
  // Each token's probability when the model chose it (not the last full pass's row: decoding_panel.h).
  const std::vector<float> chosen = chosen_probabilities(state);
  const std::vector<std::string> inputs = state.decoder_input_labels();
  const float arrow = ImGui::GetFontSize() * (g_compact ? 0.6f : 0.9f);
  // Presenting, the columns take the rows that fit the stage (a line left for the count of the rest): a long
  // translation (padding mask off, an untrained model) is counted, not scrolled out of view; the strip above
  // holds it whole.
  size_t shown_columns = columns;
  if (g_compact && columns > 0) {
    const ImVec2 pair = token_box_size("x", "");
    const float row_h = 2 * pair.y + arrow + 3 * ImGui::GetStyle().ItemSpacing.y;
    const int rows_fit = std::max(1, static_cast<int>((ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing()) / row_h));
    const float width = ImGui::GetContentRegionAvail().x, spacing = ImGui::GetStyle().ItemSpacing.x;
    int rows = 1;
    float x = 0;
    for (size_t t = 0; t < columns; ++t) {
      const std::string input = t < inputs.size() ? inputs[t] : "";
      const float w = std::max(token_box_size(input, "").x, token_box_size(state.target_token(column_output(t)), "").x);
      if (x > 0 && x + w > width) {
        if (++rows > rows_fit) {
          shown_columns = t;
          break;
        }
        x = 0;
      }
      x += w + spacing;
    }
  }
  std::vector<ImVec2> out_min(shown_columns), out_max(shown_columns);
  // The written pieces ("" for <eos> and a prompt's given tokens) and, for each column whose piece is one of a word
  // of several, that word's letters: for the brackets and the tips.
  std::vector<std::string> written(columns), word_of(columns);
  if (subwords) {
    for (size_t t = 0; t < columns; ++t) {
      const int id = column_output(t);
      if (static_cast<int>(t) >= offset && id >= 0 && id != state.model()->config.eos_id)
        written[t] = state.model()->tgt_vocab.token(id);
    }
    for (const PieceWord& w : piece_words(written))
      if (w.pieces() > 1)
        for (size_t t = w.begin; t < w.end; ++t) word_of[t] = word_letters(written, w);
  }
  for (size_t t = 0; t < shown_columns; ++t) {
    const int id = column_output(t);
    const bool given = static_cast<int>(t) < offset;  // inside the prompt: the next token is the prompt's
    const size_t g = t - static_cast<size_t>(given ? 0 : offset);
    const float p = given ? (id >= 0 && t < static_cast<size_t>(pass_probs.rows()) ? pass_probs(static_cast<Eigen::Index>(t), id) : 0.0f)
                          : g < chosen.size() ? chosen[g] : 0.0f;
    // Column t: decoder input t above, the token it chose below (generated token t is input t + 1).
    const std::string input = t < inputs.size() ? inputs[t] : "";
    const int input_id = t < state.trace().tgt.ids.size() ? state.trace().tgt.ids[t] : -1;
    const std::string output = state.target_token(id);
    const ImVec2 in_size = token_box_size(input, std::to_string(input_id));
    const ImVec2 out_size = token_box_size(output, std::to_string(id));
    const float width = std::max(in_size.x, out_size.x);
    if (t > 0) same_line_if_fits(width);
    ImGui::BeginGroup();
    std::string tip = tr(T::tokens_input_tip, {{"position", t}, {"token", input}, {"id", input_id}});
    token_box(input, std::to_string(input_id), input_id == state.model()->config.bos_id ? kSpecialColour : kInputColour,
              tip.c_str(), TokenSide::Target, static_cast<int>(t), "token.decoder_input", width, false);
    const ImVec2 a = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float cx = a.x + width / 2;
    draw->AddLine(ImVec2(cx, a.y), ImVec2(cx, a.y + arrow - 4), IM_COL32(200, 200, 200, 255), 2.0f);
    draw->AddTriangleFilled(ImVec2(cx - 5, a.y + arrow - 7), ImVec2(cx + 5, a.y + arrow - 7), ImVec2(cx, a.y + arrow - 1),
                            IM_COL32(200, 200, 200, 255));
    ImGui::Dummy(ImVec2(width, arrow));
    tip = tr(given ? T::gpt_tokens_given_tip : T::tokens_output_tip, {{"position", t}, {"id", id}, {"p", probability_text(p)}});
    if (!word_of[t].empty()) tip = tr(T::tokens_piece_of_word, {{"tip", tip}, {"word", word_of[t]}});
    const bool special = id == state.model()->config.eos_id;
    // Generated token t is the decoder's input at position t + 1 (after <bos>).
    token_box(output, std::to_string(id), special ? kSpecialColour : given ? kInputColour : kWordColour, tip.c_str(),
              TokenSide::Target, static_cast<int>(t) + 1, given ? "token.prompt_next" : "token.target", width, false);
    out_min[t] = ImGui::GetItemRectMin();
    out_max[t] = ImGui::GetItemRectMax();
    ImGui::EndGroup();
  }
  if (subwords) {  // the written words' boundaries, as the source's
    written.resize(shown_columns);
    draw_word_brackets(written, out_min, out_max, "tokens.target_word_bracket");
    ImGui::Dummy(ImVec2(1, word_bracket_lift()));
  }
  if (shown_columns < columns) {
    ImGui::TextDisabled("%s", tr(T::tokens_more, {{"count", columns - shown_columns}}).c_str());
    record_item("tokens.more", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(columns - shown_columns));
  }

  if (clicked) return clicked;
  return draw_thumbnails(state);
}

std::optional<Stage> TokensPanel::draw_thumbnails(const AppState& state) {
  // The path of this sentence through the model: one small live picture per stage, in the pipeline's order.
  std::optional<Stage> clicked;
  if (!state.ready()) return clicked;
  const bool prompt = state.decoder_only();
  const Trace& t = state.trace();
  // A decoder-only model's path: its one stack (no encoder, no cross-attention), the first layer's pictures.
  // An encoder-only model's: its one stack, then the masked-LM head's predictions.
  const std::vector<Thumbnail> thumbs =
      state.encoder_only()
          ? std::vector<Thumbnail>{
                {Stage::Embedding, T::tokens_thumb_embedding, &t.src.tok_embed, false},
                {Stage::Positional, T::tokens_thumb_positions, &t.src.sum, false},
                {Stage::EncoderQkv, T::tokens_thumb_qkv, &t.encoder[0].self_attn.q[0], false},
                {Stage::EncoderAttention, T::tokens_thumb_self_attention, &t.encoder[0].self_attn.probs[0], true},
                {Stage::EncoderAddNorm, T::tokens_thumb_add_norm,
                 state.model()->config.norm_placement == NormPlacement::Post ? &t.encoder[0].norm1.out
                                                                              : &t.encoder[0].residual1,
                 false},
                {Stage::EncoderFeedForward, T::tokens_thumb_feed_forward, &t.encoder[0].ffn.hidden_pre, false},
                {Stage::Output, T::tokens_thumb_output, &output_top_, true},
            }
      : prompt ? std::vector<Thumbnail>{
                   {Stage::Embedding, T::tokens_thumb_embedding, &t.tgt.tok_embed, false},
                   {Stage::Positional, T::tokens_thumb_positions, &t.tgt.sum, false},
                   {Stage::EncoderQkv, T::tokens_thumb_qkv, &t.decoder[0].self_attn.q[0], false},
                   {Stage::DecoderAttention, T::tokens_thumb_masked, &t.decoder[0].self_attn.probs[0], true},
                   {Stage::DecoderAddNorm, T::tokens_thumb_add_norm,
                    // (the first block's output: post-norm LN(x + f(x)), pre-norm x + f(LN(x)))
                    state.model()->config.norm_placement == NormPlacement::Post ? &t.decoder[0].norm1.out
                                                                                 : &t.decoder[0].residual1,
                    false},
                   {Stage::DecoderFeedForward, T::tokens_thumb_feed_forward, &t.decoder[0].ffn.hidden_pre, false},
                   {Stage::Output, T::tokens_thumb_output, &output_top_, true},
               }
             : std::vector<Thumbnail>{
                   {Stage::Embedding, T::tokens_thumb_embedding, &t.src.tok_embed, false},
                   {Stage::Positional, T::tokens_thumb_positions, &t.src.sum, false},
                   {Stage::EncoderQkv, T::tokens_thumb_qkv, &t.encoder[0].self_attn.q[0], false},
                   {Stage::EncoderAttention, T::tokens_thumb_self_attention, &t.encoder[0].self_attn.probs[0], true},
                   {Stage::EncoderAddNorm, T::tokens_thumb_add_norm, &t.encoder[0].norm1.out, false},
                   {Stage::EncoderFeedForward, T::tokens_thumb_feed_forward, &t.encoder[0].ffn.hidden_pre, false},
                   {Stage::DecoderAttention, T::tokens_thumb_masked, &t.decoder[0].self_attn.probs[0], true},
                   {Stage::CrossAttention, T::tokens_thumb_cross, &t.decoder.back().cross_attn.probs[0], true},
                   {Stage::Output, T::tokens_thumb_output, &output_top_, true},
               };
  const int kShown = static_cast<int>(thumbs.size());  // (at most kThumbnails)
  if (uploaded_version_ != state.version() || uploaded_count_ != kShown) {
    // The whole vocabulary is too wide for a picture: each position's ten likeliest words, sorted.
    output_top_.resize(t.probs.rows(), 10);
    for (Eigen::Index r = 0; r < t.probs.rows(); ++r) {
      std::vector<float> row(t.probs.row(r).data(), t.probs.row(r).data() + t.probs.cols());
      std::partial_sort(row.begin(), row.begin() + std::min<Eigen::Index>(10, t.probs.cols()), row.end(), std::greater<>());
      for (Eigen::Index k = 0; k < 10; ++k) output_top_(r, k) = k < t.probs.cols() ? row[static_cast<size_t>(k)] : 0.0f;
    }
    for (int i = 0; i < kShown; ++i) {
      const Mat& m = *thumbs[static_cast<size_t>(i)].values;
      const float r = signed_range(m);
      thumbnails_[i].set_values(m.data(), static_cast<int>(m.rows()), static_cast<int>(m.cols()),
                                thumbs[static_cast<size_t>(i)].probabilities ? 0.0f : -r,
                                thumbs[static_cast<size_t>(i)].probabilities ? 1.0f : r);
    }
    uploaded_version_ = state.version();
    uploaded_count_ = kShown;
  }
  ImGui::Spacing();
  const float font = ImGui::GetFontSize();
  // One row of pictures across the panel, each named in small type under it. Presenting, the row takes what
  // height the tokens and a lesson's caption leave, and is left out where that is less than two lines of type
  // (the stage must fit the screen: nothing a caption names may be scrolled out of view).
  const float gap = 0.4f * font;
  float w = std::max(2.5f * font, std::min(7.0f * font, (ImGui::GetContentRegionAvail().x - (kShown - 1) * gap) / kShown - 1));
  if (g_compact) {  // (the pictures' names: up to two lines of type at 0.6 of the body text's size, under them)
    const float room = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() - 1.4f * font;
    w = std::min(w, room / 0.7f);
    if (w < 3.0f * font) return clicked;
  }

  // Each picture's name under it, as large as the body text where its longest word fits the picture's width
  // (a projector at 1920 pixels), never below 60% of it; names wrap at the width.
  float widest_word = 1.0f;
  for (const Thumbnail& th : thumbs) {
    const std::string caption = std::string("1. ") + tr(th.name);
    for (std::string_view rest(caption); !rest.empty();) {
      const size_t space = std::min(rest.find(' '), rest.size());
      widest_word = std::max(widest_word, ImGui::CalcTextSize(rest.data(), rest.data() + space).x);
      rest.remove_prefix(std::min(rest.size(), space + 1));
    }
  }
  float label_size = std::max(std::max(10.0f, 0.6f * font), std::min(font, font * w / widest_word));
  if (g_compact) {  // presenting: the pictures and their names end at the stage's bottom (names as wrapped at w)
    const auto names_height = [&](float width, float size) {
      float tallest = 0;
      for (int i = 0; i < kShown; ++i) {
        const std::string caption = std::to_string(i + 1) + ". " + tr(thumbs[static_cast<size_t>(i)].name);
        tallest = std::max(tallest, ImGui::GetFont()->CalcTextSizeA(size, FLT_MAX, width, caption.c_str()).y);
      }
      return tallest;
    };
    const float room = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() -
                       2 * ImGui::GetStyle().ItemSpacing.y;
    // Names of several words (Korean's "마스크드 셀프 어텐션" takes three lines where English abbreviates) first
    // get smaller type, to half the body text, before the pictures get smaller.
    while (0.7f * w + names_height(w, label_size) > room && label_size > 0.5f * font + 0.5f)
      label_size = std::max(0.5f * font, label_size - 0.05f * font);
    for (int i = 0; i < 3 && 0.7f * w + names_height(w, label_size) > room; ++i) {
      w = (room - names_height(w, label_size)) / 0.7f;
      label_size = std::max(std::max(10.0f, 0.5f * font), std::min(label_size, font * w / widest_word));
    }
    if (w < 3.0f * font || 0.7f * w + names_height(w, label_size) > room) return clicked;
  }
  text_wrapped(tr(g_compact ? T::tokens_path_short : T::tokens_path));
  const ImU32 label_colour = ImGui::GetColorU32(high_contrast() ? ImGuiCol_Text : ImGuiCol_TextDisabled);
  for (int i = 0; i < kShown; ++i) {
    if (i > 0) same_line_if_fits(w, gap);
    ImGui::BeginGroup();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    char name[32];
    std::snprintf(name, sizeof(name), "thumbnail_%d", i);
    thumbnails_[i].draw(name, ImVec2(w, 0.7f * w),
                        HeatmapStyle{thumbs[static_cast<size_t>(i)].probabilities ? Colormap::Viridis : Colormap::Diverging, false});
    const bool hovered = ImGui::IsItemHovered();
    if (hovered) {
      ImGui::GetWindowDrawList()->AddRect(at, ImVec2(at.x + w, at.y + 0.7f * w), kHoverColour, 0, 0, 3.0f);
      ImGui::SetTooltip("%s", tr(T::tokens_open_stage, {{"title", tr(stage_info(thumbs[static_cast<size_t>(i)].stage).title)}}).c_str());
    }
    if (hovered && ImGui::IsMouseClicked(0)) clicked = thumbs[static_cast<size_t>(i)].stage;
    const std::string caption = std::to_string(i + 1) + ". " + tr(thumbs[static_cast<size_t>(i)].name);
    const ImVec2 below = ImGui::GetCursorScreenPos();
    const ImVec2 text = ImGui::GetFont()->CalcTextSizeA(label_size, FLT_MAX, w, caption.c_str());
    ImGui::GetWindowDrawList()->AddText(ImGui::GetFont(), label_size, below, label_colour,
                                        caption.c_str(), nullptr, w);
    ImGui::Dummy(ImVec2(w, text.y));
    record_item("thumbnail", at, ImVec2(at.x + w, at.y + 0.7f * w), i, stage_info(thumbs[static_cast<size_t>(i)].stage).id);
    ImGui::EndGroup();
  }
  return clicked;
}

}  // namespace sf::gui
