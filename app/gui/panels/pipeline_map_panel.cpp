#include "gui/panels/pipeline_map_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <iterator>
#include <string>

#include "gui/render/item_placements.h"
#include "gui/text/text.h"
#include "transformer/interventions.h"

namespace sf::gui {

namespace {

// Text centred in [a, b], shrunk to fit the width.
void centred_text(ImDrawList* draw, ImVec2 a, ImVec2 b, ImU32 colour, const char* text) {
  ImFont* font = ImGui::GetFont();
  float size = ImGui::GetFontSize();
  ImVec2 t = font->CalcTextSizeA(size, FLT_MAX, 0.0f, text);
  const float room = b.x - a.x - 6.0f;
  if (t.x > room) {
    size *= room / t.x;
    t = font->CalcTextSizeA(size, FLT_MAX, 0.0f, text);
  }
  draw->AddText(font, size, ImVec2((a.x + b.x - t.x) / 2, (a.y + b.y - t.y) / 2), colour, text);
}

void arrow_up(ImDrawList* draw, ImVec2 from, ImVec2 to, ImU32 colour) {
  draw->AddLine(from, to, colour, 1.5f);
  draw->AddTriangleFilled(ImVec2(to.x - 4, to.y + 6), ImVec2(to.x + 4, to.y + 6), to, colour);
}

// Whose layer a stage shows (the stage table's layer_of): the box of that stack's layer lights up.
bool is_encoder_layer_stage(Stage s) { return stage_info(s).layer_of == AttentionKind::Encoder; }
bool is_decoder_layer_stage(Stage s) {
  const std::optional<AttentionKind> kind = stage_info(s).layer_of;
  return kind == AttentionKind::Decoder || kind == AttentionKind::Cross;
}

}  // namespace

// The figure, bottom to top, for each shape. The encoder column: inputs, embedding, positions, then one layer
// (Q/K/V, self-attention, concat, add & norm, feed-forward, add & norm). The decoder column: outputs shifted
// right, embedding, positions, one layer (masked self-attention, add & norm, cross-attention and its add & norm
// where there is an encoder, feed-forward, add & norm), then linear and softmax. A decoder-only model (GPT) is
// the decoder column alone, its inputs the prompt; an encoder-only model (BERT) the encoder column with the
// output head on top. The two "Add & norm" boxes of a layer both open the add & norm stage, which shows every
// residual block of the layer.
PipelineLayout pipeline_layout(ModelStacks stacks) {
  PipelineLayout out;
  Config shape;
  shape.stacks = stacks;
  const bool two = shape.has_encoder() && shape.has_decoder();
  out.columns = two ? 2 : 1;
  auto add = [&](int column, float row, T label, Stage stage) {
    out.boxes.push_back({column, row, label, stage});
    return static_cast<int>(out.boxes.size()) - 1;
  };
  if (shape.has_encoder()) {
    out.encoder_column = 0;
    add(0, 0, T::pipeline_map_box_inputs, Stage::Tokens);
    add(0, 1, T::pipeline_map_box_input_embedding, Stage::Embedding);
    add(0, 2, T::pipeline_map_box_positional, Stage::Positional);
    const int qkv = add(0, 3.9f, T::pipeline_map_box_qkv, Stage::EncoderQkv);
    add(0, 4.9f, T::pipeline_map_box_self_attention, Stage::EncoderAttention);
    add(0, 5.9f, T::pipeline_map_box_concat, Stage::EncoderConcat);
    const int norm1 = add(0, 6.9f, T::pipeline_map_box_add_norm, Stage::EncoderAddNorm);
    const int ffn = add(0, 7.9f, T::pipeline_map_box_feed_forward, Stage::EncoderFeedForward);
    out.encoder_output = add(0, 8.9f, T::pipeline_map_box_add_norm, Stage::EncoderAddNorm);
    out.residuals.push_back({qkv, norm1, true});  // x -> (Q, K, V, attention, concat) -> add & norm
    out.residuals.push_back({ffn, out.encoder_output, true});  // h -> feed-forward -> add & norm
    if (!shape.has_decoder()) {  // the output head on the encoder's last layer
      add(0, 10.2f, T::pipeline_map_box_linear, Stage::Output);
      add(0, 11.2f, T::pipeline_map_box_softmax, Stage::Output);
    }
  }
  if (shape.has_decoder()) {
    const int c = two ? 1 : 0;
    out.decoder_column = c;
    add(c, 0, two ? T::pipeline_map_box_outputs : T::pipeline_map_box_inputs, Stage::Tokens);
    add(c, 1, two ? T::pipeline_map_box_output_embedding : T::pipeline_map_box_input_embedding, Stage::Embedding);
    add(c, 2, T::pipeline_map_box_positional, Stage::Positional);
    const int self = add(c, 3.9f, T::pipeline_map_box_masked_self_attention, Stage::DecoderAttention);
    int below_ffn = add(c, 4.9f, T::pipeline_map_box_add_norm, Stage::DecoderAddNorm);
    out.residuals.push_back({self, below_ffn, !two});  // y -> masked self-attention -> add & norm
    float row = 5.9f;
    if (shape.has_cross_attention()) {
      out.cross_attention = add(c, row, T::pipeline_map_box_cross_attention, Stage::CrossAttention);
      below_ffn = add(c, row + 1, T::pipeline_map_box_add_norm, Stage::DecoderAddNorm);
      out.residuals.push_back({out.cross_attention, below_ffn, !two});
      row += 2;
    }
    const int ffn = add(c, row, T::pipeline_map_box_feed_forward, Stage::DecoderFeedForward);
    const int norm = add(c, row + 1, T::pipeline_map_box_add_norm, Stage::DecoderAddNorm);
    out.residuals.push_back({ffn, norm, !two});
    add(c, row + 2.3f, T::pipeline_map_box_linear, Stage::Output);
    add(c, row + 3.3f, T::pipeline_map_box_softmax, Stage::Output);
  }
  for (const PipelineBox& b : out.boxes) out.top_row = std::max(out.top_row, b.row + 1.3f);
  return out;
}

bool draw_pipeline_map(const PipelineMapView& view, Stage* clicked) {
  const ModelStacks stacks = view.config ? view.config->stacks : ModelStacks::EncoderDecoder;
  // (each shape's figure is made once, not every frame)
  static const PipelineLayout kLayouts[] = {pipeline_layout(ModelStacks::EncoderDecoder),
                                            pipeline_layout(ModelStacks::DecoderOnly),
                                            pipeline_layout(ModelStacks::EncoderOnly)};
  const PipelineLayout& layout = kLayouts[stacks == ModelStacks::EncoderDecoder ? 0
                                          : stacks == ModelStacks::DecoderOnly  ? 1
                                                                                : 2];
  const std::vector<PipelineBox>& kBoxes = layout.boxes;
  const float kTopRow = layout.top_row;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float f = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  // Height: the figure takes what is left above the hints (four lines), a pitch of at most 2.2 font sizes.
  const float height_avail = ImGui::GetContentRegionAvail().y - 7.5f * ImGui::GetTextLineHeightWithSpacing();
  const float pitch = std::clamp(height_avail / (kTopRow + 1.0f), 1.3f * f, 2.2f * f);
  const float box_h = std::min(pitch - 0.35f * f, 1.6f * f);
  const float gap = 0.6f * f;
  const float col_w = (width - (layout.columns + 1) * gap) / static_cast<float>(layout.columns);
  const float bottom = origin.y + (kTopRow + 0.8f) * pitch;  // y of row 0's bottom edge
  auto box_rect = [&](const PipelineBox& b, ImVec2* a, ImVec2* c) {
    const float x = origin.x + gap + b.column * (col_w + gap);
    const float y = bottom - b.row * pitch - box_h;
    *a = ImVec2(x, y);
    *c = ImVec2(x + col_w, y + box_h);
  };
  const ImU32 line = IM_COL32(150, 160, 175, 255);
  const ImU32 text = IM_COL32(235, 235, 235, 255);

  // The layer brackets, "x N", behind the boxes.
  const int n_enc = view.config ? view.config->n_encoder_layers : 0;
  const int n_dec = view.config ? view.config->n_decoder_layers : 0;
  for (int column = 0; column < layout.columns; ++column) {
    const bool encoder = column == layout.encoder_column;
    const float x = origin.x + gap + column * (col_w + gap);
    // Around the layer boxes (rows 3.9 to 8.9), with room for the label beneath them.
    const float last_layer_row = encoder ? 8.9f : layout.cross_attention >= 0 ? 8.9f : 6.9f;
    const float top = bottom - last_layer_row * pitch - box_h - 0.25f * pitch, low = bottom - 2.95f * pitch;
    const bool here = encoder ? is_encoder_layer_stage(view.current) : is_decoder_layer_stage(view.current);
    draw->AddRectFilled(ImVec2(x - gap * 0.45f, top), ImVec2(x + col_w + gap * 0.45f, low),
                        here ? IM_COL32(60, 60, 40, 255) : IM_COL32(45, 48, 55, 255), 6.0f);
    const int n = encoder ? n_enc : n_dec;
    const std::string count = n > 0 ? std::to_string(n) : "N";  // no model (yet): the paper's N
    const T stack = encoder ? (here ? T::pipeline_map_encoder_here : T::pipeline_map_encoder)
                            : (here ? T::pipeline_map_decoder_here : T::pipeline_map_decoder);
    const std::string label =
        here ? tr(stack, {{"count", count}, {"layer", shown_number(view.layer)}}) : tr(stack, {{"count", count}});
    centred_text(draw, ImVec2(x, low - 0.85f * pitch), ImVec2(x + col_w, low),
                 here ? IM_COL32(250, 210, 120, 255) : IM_COL32(170, 175, 185, 255), label.c_str());
  }

  // Arrows: up each column between consecutive boxes; the encoder's output into the cross-attention.
  for (size_t i = 0; i + 1 < kBoxes.size(); ++i) {
    if (kBoxes[i].column != kBoxes[i + 1].column) continue;
    ImVec2 a0, a1, b0, b1;
    box_rect(kBoxes[i], &a0, &a1);
    box_rect(kBoxes[i + 1], &b0, &b1);
    const float cx = (a0.x + a1.x) / 2;
    arrow_up(draw, ImVec2(cx, a0.y), ImVec2(cx, b1.y), line);
  }
  if (layout.cross_attention >= 0) {
    ImVec2 e0, e1, c0, c1;
    box_rect(kBoxes[static_cast<size_t>(layout.encoder_output)], &e0, &e1);   // the encoder's last add & norm
    box_rect(kBoxes[static_cast<size_t>(layout.cross_attention)], &c0, &c1);  // the decoder's cross-attention
    const float cx = (e0.x + e1.x) / 2, up = e0.y - 0.7f * pitch, mid = (e1.x + c0.x) / 2;
    const ImU32 blue = IM_COL32(110, 170, 240, 255);
    draw->AddLine(ImVec2(cx, e0.y), ImVec2(cx, up), blue, 2.0f);
    draw->AddLine(ImVec2(cx, up), ImVec2(mid, up), blue, 2.0f);
    const float cy = (c0.y + c1.y) / 2;
    draw->AddLine(ImVec2(mid, up), ImVec2(mid, cy), blue, 2.0f);
    draw->AddLine(ImVec2(mid, cy), ImVec2(c0.x, cy), blue, 2.0f);
    draw->AddTriangleFilled(ImVec2(c0.x - 7, cy - 4), ImVec2(c0.x - 7, cy + 4), ImVec2(c0.x, cy), blue);
  }
  {
    ImVec2 s0, s1;
    box_rect(kBoxes.back(), &s0, &s1);  // the softmax, on top
    const float sx = (s0.x + s1.x) / 2;
    arrow_up(draw, ImVec2(sx, s0.y), ImVec2(sx, s0.y - 0.45f * pitch), line);
    centred_text(draw, ImVec2(s0.x - gap, s0.y - 1.2f * pitch), ImVec2(s1.x + gap, s0.y - 0.45f * pitch), text,
                 tr(T::pipeline_map_output_probabilities));
  }

  // The residual connections: from each sublayer's input, around the sublayer, into its add & norm (encoder on
  // the left of its column, decoder on the right: the cross-attention's K, V come in from the left).
  {
    const ImU32 residual = IM_COL32(120, 200, 140, 255);
    const auto around = [&](size_t from_below, size_t into, bool left) {
      ImVec2 f0, f1, t0, t1;
      box_rect(kBoxes[from_below], &f0, &f1);  // the sublayer (or first box) whose input the residual carries
      box_rect(kBoxes[into], &t0, &t1);        // the add & norm it joins
      const float cx = (f0.x + f1.x) / 2, start_y = f1.y + 0.5f * (pitch - box_h);  // the gap below the box
      const float side_x = left ? f0.x - 0.32f * gap : f1.x + 0.32f * gap;
      const float end_y = (t0.y + t1.y) / 2, end_x = left ? t0.x : t1.x;
      draw->AddLine(ImVec2(cx, start_y), ImVec2(side_x, start_y), residual, 1.5f);
      draw->AddLine(ImVec2(side_x, start_y), ImVec2(side_x, end_y), residual, 1.5f);
      draw->AddLine(ImVec2(side_x, end_y), ImVec2(end_x, end_y), residual, 1.5f);
      const float dir = left ? 1.0f : -1.0f;
      draw->AddTriangleFilled(ImVec2(end_x - dir * 5, end_y - 3.5f), ImVec2(end_x - dir * 5, end_y + 3.5f),
                              ImVec2(end_x, end_y), residual);
    };
    for (const PipelineResidual& r : layout.residuals)
      around(static_cast<size_t>(r.from), static_cast<size_t>(r.into), r.left);
  }
  if (layout.cross_attention >= 0) {
    // The encoder's output enters every cross-attention as its keys and values.
    ImVec2 e0, e1;
    box_rect(kBoxes[static_cast<size_t>(layout.encoder_output)], &e0, &e1);
    const float up = e0.y - 0.7f * pitch;
    draw->AddText(ImVec2((e0.x + e1.x) / 2 + 4, up - ImGui::GetFontSize() - 2), IM_COL32(110, 170, 240, 255), "K, V");
  }

  // The boxes, each a button.
  bool result = false;
  for (size_t i = 0; i < kBoxes.size(); ++i) {
    const PipelineBox& b = kBoxes[i];
    ImVec2 a, c;
    box_rect(b, &a, &c);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(static_cast<int>(i));
    const bool pressed = ImGui::InvisibleButton("stage", ImVec2(c.x - a.x, c.y - a.y));
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    record_item("pipeline.box", a, c, static_cast<int>(i), stage_info(b.stage).id);
    if (pressed) {
      *clicked = b.stage;
      result = true;
    }
    if (hovered)
      ImGui::SetTooltip(
          "%s", tr(T::pipeline_map_stage, {{"title", tr(stage_info(b.stage).title)}, {"id", stage_info(b.stage).id}})
                    .c_str());
    const bool here = b.stage == view.current;
    const ImU32 fill = here ? IM_COL32(225, 140, 25, 255) : hovered ? IM_COL32(80, 105, 140, 255)
                                                                     : IM_COL32(55, 72, 98, 255);
    draw->AddRectFilled(a, c, fill, 4.0f);
    if (here) draw->AddRect(a, c, IM_COL32(255, 230, 160, 255), 4.0f, 0, 2.0f);
    centred_text(draw, a, c, here ? IM_COL32(20, 20, 20, 255) : text, tr(b.label));
  }

  // Below the figure: the overview of every head, and the keys.
  ImGui::SetCursorScreenPos(ImVec2(origin.x, bottom + 0.4f * f));
  auto stage_button = [&](Stage stage, const char* label) {
    const bool here = view.current == stage;
    if (here) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.88f, 0.55f, 0.10f, 1.0f));
    if (ImGui::Button(label, ImVec2(width, 0))) {
      *clicked = stage;
      result = true;
    }
    if (here) ImGui::PopStyleColor();
  };
  // (the stages outside the figure that this shape has: a model without a decoder decodes nothing)
  const std::pair<Stage, T> below[] = {{Stage::AllHeads, T::pipeline_map_all_heads},
                                       {Stage::Decoding, T::pipeline_map_decoding},
                                       {Stage::Interventions, T::pipeline_map_interventions},
                                       {Stage::Training, T::pipeline_map_training}};
  for (const auto& [stage, label] : below)
    if (stage_in_shape(stage, stacks)) stage_button(stage, tr(label));
  // (T opens training where the shape has it)
  // (an encoder-only model writes nothing: no next token; a click on a word masks it)
  ImGui::TextDisabled("%s", tr(stacks == ModelStacks::EncoderOnly                 ? T::bert_pipeline_map_keys
                               : stage_in_shape(Stage::Training, stacks) ? T::pipeline_map_keys
                                                                           : T::gpt_pipeline_map_keys));
  return result;
}

}  // namespace sf::gui
