#include "gui/panels/attribution_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gui/panels/logit_lens_panel.h"  // chosen_ids
#include "gui/render/colormap.h"
#include "gui/render/item_placements.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "transformer/forward.h"
#include "transformer/interventions.h"  // shown_number
#include "util/error.h"

namespace sf::gui {

namespace {

// A signed value on the diverging map, its range symmetric about 0 (0: the map's dark centre).
ImU32 diverging(float value, float largest) {
  return colormap_colour(static_cast<int>(Colormap::Diverging), colormap_position(value, -largest, largest));
}
ImU32 viridis(float p) { return colormap_colour(static_cast<int>(Colormap::Viridis), p); }

// A signed value as a class reads it: two decimals from 0.1 up, two significant digits below ("-0.031",
// "+0.0042"), so that no bar that is there reads 0.00.
std::string signed_text(double v) {
  char buffer[32];
  if (v == 0) return "0";
  std::snprintf(buffer, sizeof buffer, std::abs(v) >= 0.1 ? "%+.2f" : "%+.2g", v);
  return buffer;
}

// The work of one Result: attribution of the rows whose token is given (-1 elsewhere), and the last layer's mean
// attention from a traced pass under the same interventions.
AttributionPanel::Result compute(const std::shared_ptr<const Model>& model, const std::vector<int>& source,
                                 const std::vector<int>& target, const Interventions& iv,
                                 const std::vector<int>& tokens, AttributionMethod method,
                                 const std::atomic<bool>& cancelled) {
  const Config& c = model->config;
  AttributionPanel::Result r;
  const Trace trace = forward(c, model->weights, source, target, iv);
  r.cross = c.has_cross_attention();
  r.attention = c.has_decoder()
                    ? mean_attention(c, trace, r.cross ? AttentionKind::Cross : AttentionKind::Decoder,
                                     c.n_decoder_layers - 1)
                    : mean_attention(c, trace, AttentionKind::Encoder, c.n_encoder_layers - 1);
  try {
    r.map = attribute_rows(c, model->weights, source, target, iv, tokens, method, AttributionPanel::kSteps,
                           &cancelled);
  } catch (const Error& e) {  // (a model whose parts have no backward: said in the view, the attention still shown)
    r.error = e.what();
  }
  return r;
}

}  // namespace

std::string AttributionPanel::completeness_text(const Result& r, int position) const {
  // integrated gradients' completeness: the bars' sum against f(x) - f(0)
  if (method_ != AttributionMethod::IntegratedGradients || position >= r.map.rows()) return "";
  const double sum = r.map.values.row(position).cast<double>().sum();
  const double change = r.map.f[static_cast<size_t>(position)] - r.map.f_baseline[static_cast<size_t>(position)];
  return tr(T::why_completeness, {{"sum", signed_text(sum)},
                                  {"change", signed_text(change)},
                                  {"steps", kSteps},
                                  {"gap", signed_text(std::abs(sum - change)).substr(1)}});
}

std::string AttributionPanel::method_name() const {
  switch (method_) {
    case AttributionMethod::GradientXInput: return tr(T::why_method_gxi);
    case AttributionMethod::IntegratedGradients: return tr(T::why_method_ig, {{"steps", kSteps}});
    case AttributionMethod::Rollout: return tr(T::why_method_rollout);
  }
  return "";
}

void AttributionPanel::draw_method_switch() {
  const std::string ig = tr(T::why_method_ig, {{"steps", kSteps}});
  const std::string tip = tr(T::why_method_tip, {{"steps", kSteps}});
  const std::pair<AttributionMethod, std::string> methods[] = {
      {AttributionMethod::GradientXInput, tr(T::why_method_gxi)},
      {AttributionMethod::IntegratedGradients, ig},
      {AttributionMethod::Rollout, tr(T::why_method_rollout)}};
  bool first = true;
  for (const auto& [m, label] : methods) {
    if (!first) same_line_if_fits(labelled_box_width(label.c_str()));
    first = false;
    if (ImGui::RadioButton(label.c_str(), method_ == m)) method_ = m;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip.c_str());
    record_item("why.method", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(m), label,
                method_ == m ? 1.0f : 0.0f);
  }
  // what is shown: this word's bars (and the maps under them where they fit), or the whole sentence's maps
  const std::pair<WhyPart, const char*> parts[] = {{WhyPart::Word, tr(T::why_part_word)},
                                                   {WhyPart::Sentence, tr(T::why_part_sentence)}};
  for (const auto& [part, label] : parts) {
    same_line_if_fits(labelled_box_width(label) + ImGui::GetFontSize(), part == WhyPart::Word ? ImGui::GetFontSize() : -1.0f);
    if (ImGui::RadioButton(label, part_ == part)) part_ = part;
    record_item("why.part", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(part), label,
                part_ == part ? 1.0f : 0.0f);
  }
}

void AttributionPanel::start_if_stale(const AppState& state, int position) {
  const Key row_key{state.version(), method_, position}, map_key{state.version(), method_, -1};
  // The whole map, once it holds this position, answers every position: no row task then.
  const bool map_current = map_done_ && *map_done_ == map_key;
  const bool map_running = map_task_.running() && map_asked_ == map_key;
  const bool row_current = (row_done_ && *row_done_ == row_key) || (row_task_.running() && row_asked_ == row_key);
  // (most frames: nothing to start, and nothing of the trace is copied)
  if (map_current || (map_running && row_current)) return;
  std::shared_ptr<const Model> model = state.model();
  const Trace& t = state.trace();
  const std::vector<int> source = model->config.has_encoder() ? t.src.ids : std::vector<int>();
  const std::vector<int> target = model->config.has_decoder() ? t.tgt.ids : std::vector<int>();
  std::vector<int> tokens = LogitLensPanel::chosen_ids(state);
  const size_t rows = static_cast<size_t>(model->config.has_decoder() ? target.size() : source.size());
  tokens.resize(rows, -1);
  const Interventions iv = t.interventions;
  if (!row_current && position >= 0 && static_cast<size_t>(position) < rows && tokens[static_cast<size_t>(position)] >= 0) {
    std::vector<int> one(rows, -1);
    one[static_cast<size_t>(position)] = tokens[static_cast<size_t>(position)];
    row_asked_ = row_key;
    row_task_.start([model, source, target, iv, one, method = method_](const std::atomic<bool>& cancelled) {
      return compute(model, source, target, iv, one, method, cancelled);
    });
  }
  // The whole map after the row on show (the two would share the cores).
  if (!map_running && !row_task_.running()) {
    map_asked_ = map_key;
    map_task_.start([model, source, target, iv, tokens, method = method_](const std::atomic<bool>& cancelled) {
      return compute(model, source, target, iv, tokens, method, cancelled);
    });
  }
}

void AttributionPanel::poll() {
  // (a few milliseconds for a short sentence: waited for in this frame, so the view rarely shows "computing")
  for (auto [task, asked, done, result] : {std::tuple{&row_task_, &row_asked_, &row_done_, &row_},
                                           std::tuple{&map_task_, &map_asked_, &map_done_, &map_}}) {
    if (!task->running() || !task->wait_for(4)) continue;
    try {
      Result r = task->take();
      if (!r.map.complete) continue;  // cancelled for a newer question
      *result = std::move(r);
      *done = *asked;
    } catch (const Error& e) {
      Result r;
      r.error = e.what();
      *result = std::move(r);
      *done = *asked;
    }
  }
}

const AttributionPanel::Result* AttributionPanel::result_for(const AppState& state, int position) const {
  if (map_ && map_done_ && *map_done_ == Key{state.version(), method_, -1}) return &*map_;
  if (row_ && row_done_ && *row_done_ == Key{state.version(), method_, position}) return &*row_;
  return nullptr;
}

std::optional<int> AttributionPanel::draw(const AppState& state, int position) {
  std::optional<int> clicked;
  if (!state.ready()) return clicked;
  const int rows = static_cast<int>(state.trace().logits.rows());
  if (rows == 0) return clicked;
  position = std::clamp(position, 0, rows - 1);
  // (presenting: the method and the part behind the stage's one-line "Controls" toggle, the method named in the
  // heading; the bars get the lines)
  if (controls_toggle(&controls_open_)) draw_method_switch();
  explanation(tr(T::why_explanation));
  start_if_stale(state, position);
  poll();

  const bool encoder_only = state.encoder_only();
  const std::vector<std::string> labels = encoder_only ? state.source_labels() : state.decoder_input_labels();
  const std::vector<int> chosen = LogitLensPanel::chosen_ids(state);
  const int token = position < static_cast<int>(chosen.size()) ? chosen[static_cast<size_t>(position)] : -1;
  const std::string word = position < static_cast<int>(labels.size()) ? labels[static_cast<size_t>(position)] : "";
  if (token < 0) {
    ImGui::TextUnformatted(tr(T::why_nothing_chosen, {{"word", word}}).c_str());
  } else {
    std::string heading = tr(encoder_only ? T::why_heading_encoder : T::why_heading,
                             {{"token", state.target_token(token)}, {"word", word}});
    if (high_contrast() && !controls_open_) heading = tr(T::why_heading_method, {{"heading", heading}, {"method", method_name()}});
    ImGui::TextUnformatted(heading.c_str());
  }
  record_item("why.heading", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), position,
              token >= 0 ? state.target_token(token) : std::string());
  const Result* r = result_for(state, position);
  if (!r) {
    spinner(ImGui::GetFontSize() * 0.4f);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", tr(T::why_computing));
    record_item("why.computing", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    return clicked;
  }
  if (!r->error.empty()) {
    text_disabled_wrapped("%s", tr(T::why_failed, {{"error", r->error}}).c_str());
    record_item("why.failed", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, r->error);
    return clicked;
  }
  // This word: the bars at full size where they fit (their type shrinks to 0.5 of the font where not: a projector's
  // large type), then the maps under them where a few pixels a row are left; else a line saying where they are.
  // The whole sentence: the maps alone, with all the room.
  const float line = ImGui::GetTextLineHeight();
  if (part_ == WhyPart::Word) {
    const float width = ImGui::GetContentRegionAvail().x, spacing = ImGui::GetStyle().ItemSpacing.y;
    // The height of a wrapped paragraph with its spacing (and half a line: the app's own line breaking may take one
    // line more than ImGui's measure).
    auto wrapped = [&](const std::string& text) {
      return text.empty() ? 0.0f : ImGui::CalcTextSize(text.c_str(), nullptr, false, width).y + line * 0.5f + spacing;
    };
    const std::string completeness = token >= 0 ? completeness_text(*r, position) : std::string();
    const std::string note = method_ == AttributionMethod::Rollout ? tr(T::why_explanation_rollout) : "";
    const std::string elsewhere = tr(T::why_map_elsewhere);
    // the bars' height: bars_lines lines of type (the groups, the words, the chart, the attention) at `scale`,
    // three gaps, then the paragraphs under them at full size
    const bool groups = r->map.source_length > 0 && r->map.target_length > 0;
    const float bars_lines = (groups ? 1.0f : 0.0f) + 1.0f + 5.0f + 2.5f;
    const float fixed = 1.0f + spacing + 6.0f + wrapped(completeness) + wrapped(note) + wrapped(elsewhere);
    const float scale = std::clamp((ImGui::GetContentRegionAvail().y - fixed) / (bars_lines * line), 0.5f, 1.0f);
    if (token >= 0) draw_bars(state, *r, position, scale);
    if (!completeness.empty()) {
      text_disabled_wrapped("%s", completeness.c_str());
      const double sum = r->map.values.row(position).cast<double>().sum();
      const double change = r->map.f[static_cast<size_t>(position)] - r->map.f_baseline[static_cast<size_t>(position)];
      record_item("why.completeness", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), position, "",
                  static_cast<float>(sum - change));
    }
    if (!note.empty()) text_disabled_wrapped("%s", note.c_str());
    const float maps_need = 6.0f * line + 4.0f * static_cast<float>(r->map.rows());
    if (ImGui::GetContentRegionAvail().y < maps_need) {
      text_disabled_wrapped("%s", elsewhere.c_str());
      record_item("why.map_elsewhere", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
      return clicked;
    }
  }
  // The whole map: once it is computed (the row on show comes first).
  if (!map_ || r != &*map_) {
    spinner(ImGui::GetFontSize() * 0.4f);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", tr(T::why_computing));
    record_item("why.computing", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    return clicked;
  }
  return draw_maps(state, *r, position);
}

// [SECTION] the bars of the position on show

void AttributionPanel::draw_bars(const AppState& state, const Result& r, int position, float scale) {
  const AttributionMap& map = r.map;
  const int S = map.source_length, T = map.target_length;
  if (position >= map.rows()) return;
  // The columns: every source word, then the decoder's inputs the row reads (0 .. position).
  struct Column {
    std::string word;
    int value_index;      // into map.values' columns
    int attention_index;  // into r.attention's columns, -1: none (a translator's decoder inputs)
  };
  std::vector<Column> columns;
  const std::vector<std::string> source_words = state.source_labels(), target_words = state.decoder_input_labels();
  const std::vector<std::string>& row_words = state.encoder_only() ? source_words : target_words;
  const std::string row_word = position < static_cast<int>(row_words.size()) ? row_words[static_cast<size_t>(position)] : "";
  for (int j = 0; j < S; ++j)
    columns.push_back({j < static_cast<int>(source_words.size()) ? source_words[static_cast<size_t>(j)] : "?", j,
                       r.attention.cols() == S ? j : -1});
  const int read = T > 0 ? std::min(position + 1, T) : 0;
  for (int j = 0; j < read; ++j)
    columns.push_back({j < static_cast<int>(target_words.size()) ? target_words[static_cast<size_t>(j)] : "?", S + j,
                       r.cross ? -1 : j});
  if (columns.empty()) return;
  const int n = static_cast<int>(columns.size());
  float largest = 1e-12f, strongest = 1e-12f;
  for (const Column& c : columns) largest = std::max(largest, std::abs(map.values(position, c.value_index)));
  for (const Column& c : columns)
    if (c.attention_index >= 0) strongest = std::max(strongest, r.attention(position, c.attention_index));

  const float line = ImGui::GetTextLineHeight() * scale, gap = 2.0f;
  const char* value_label = tr(method_ == AttributionMethod::Rollout ? T::why_row_rollout : T::why_row_attribution);
  const char* attention_label = tr(r.cross ? T::why_row_cross : T::why_row_self);
  const float label_w = std::max(ImGui::CalcTextSize(value_label).x, ImGui::CalcTextSize(attention_label).x) * scale +
                        ImGui::GetFontSize() * 0.5f;
  const float avail = ImGui::GetContentRegionAvail().x;
  const float col_w = std::max(ImGui::GetFontSize() * 0.6f, (avail - label_w) / static_cast<float>(n) - gap);
  const float chart_h = 5.0f * line, attention_h = 2.5f * line;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  auto column_x = [&](int i) { return origin.x + label_w + static_cast<float>(i) * (col_w + gap); };

  // the groups over the words: "source", "read so far" (a translator's two sides)
  float y = origin.y;
  if (S > 0 && read > 0) {
    fitted_text(draw, ImVec2(column_x(0), y), S * (col_w + gap), line, dim, tr(T::why_source_group), scale);
    fitted_text(draw, ImVec2(column_x(S), y), read * (col_w + gap), line, dim, tr(T::why_written_group), scale);
    draw->AddLine(ImVec2(column_x(S) - gap / 2 - 1, y), ImVec2(column_x(S) - gap / 2 - 1, y + 2 * line + chart_h + attention_h),
                  dim, 1.0f);
    y += line;
  }
  // the words
  for (int i = 0; i < n; ++i) fitted_text(draw, ImVec2(column_x(i), y), col_w, line, text, columns[static_cast<size_t>(i)].word, scale);
  y += line + gap;
  // the attribution: bars up (orange) and down (blue) from a zero line, each column's value over it
  const float zero = y + chart_h / 2;
  fitted_text(draw, ImVec2(origin.x, zero - line / 2), label_w, line, dim, value_label, scale);
  draw->AddLine(ImVec2(column_x(0), zero), ImVec2(column_x(n - 1) + col_w, zero), dim, 1.0f);
  for (int i = 0; i < n; ++i) {
    const Column& c = columns[static_cast<size_t>(i)];
    const float v = map.values(position, c.value_index);
    const float h = (chart_h / 2 - line * 0.9f) * std::abs(v) / largest;
    const ImVec2 a(column_x(i) + col_w * 0.1f, v >= 0 ? zero - h : zero), b(column_x(i) + col_w * 0.9f, v >= 0 ? zero : zero + h);
    draw->AddRectFilled(a, ImVec2(b.x, std::max(b.y, a.y + 1)), diverging(v, largest));
    // (the value over the bars that show; none under a twelfth of the largest, where it would be clutter)
    const float small = 0.8f;
    if (std::abs(v) >= largest / 12)
      fitted_text(draw, ImVec2(column_x(i), v >= 0 ? a.y - line * small : b.y), col_w, line * small, text,
                  signed_text(v), small * scale);
    record_item("why.bar", a, b, i, c.word, v);
    ImGui::SetCursorScreenPos(ImVec2(column_x(i), y));
    ImGui::PushID(i);
    ImGui::InvisibleButton("bar", ImVec2(col_w, chart_h));
    ImGui::PopID();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", tr(T::why_map_tip, {{"token", state.target_token(map.tokens[static_cast<size_t>(position)])},
                                                  {"word", row_word},
                                                  {"input", c.word},
                                                  {"value", signed_text(v)}})
                                  .c_str());
  }
  y += chart_h + gap;
  // the last layer's attention at this row, under the same words (0 .. the row's largest)
  fitted_text(draw, ImVec2(origin.x, y + attention_h / 2 - line / 2), label_w, line, dim, attention_label, scale);
  const float base = y + attention_h - line * 0.8f;
  for (int i = 0; i < n; ++i) {
    const Column& c = columns[static_cast<size_t>(i)];
    if (c.attention_index < 0) continue;
    const float p = r.attention(position, c.attention_index);
    const float h = (attention_h - line * 0.8f) * p / strongest;
    const ImVec2 a(column_x(i) + col_w * 0.1f, base - h), b(column_x(i) + col_w * 0.9f, base);
    draw->AddRectFilled(ImVec2(a.x, std::min(a.y, b.y - 1)), b, viridis(p));
    if (p >= strongest / 12) fitted_text(draw, ImVec2(column_x(i), base), col_w, line * 0.8f, text, probability_text(p), 0.8f * scale);
    record_item("why.attention", a, b, i, c.word, p);
  }
  y += attention_h + gap;
  ImGui::SetCursorScreenPos(ImVec2(origin.x, y));
  ImGui::Dummy(ImVec2(1, 1));
}

// [SECTION] the maps: every prediction from every word, beside the last layer's attention

std::optional<int> AttributionPanel::draw_maps(const AppState& state, const Result& r, int position) {
  std::optional<int> clicked;
  const AttributionMap& map = r.map;
  const int S = map.source_length, T = map.target_length;
  // Rows: the predictions (rows whose token is known); columns: the source words (a translator) or every word read.
  std::vector<int> rows;
  for (int i = 0; i < map.rows(); ++i)
    if (map.tokens[static_cast<size_t>(i)] >= 0) rows.push_back(i);
  const bool translator = S > 0 && T > 0;
  const int first_column = translator || T == 0 ? 0 : S, columns = translator || T == 0 ? S : T;
  if (rows.empty() || columns == 0) return clicked;
  const std::vector<std::string> column_words = S > 0 ? state.source_labels() : state.decoder_input_labels();
  float largest = 1e-12f;
  for (int i : rows)
    for (int j = 0; j < columns; ++j) largest = std::max(largest, std::abs(map.values(i, first_column + j)));

  const float line = ImGui::GetTextLineHeight(), gap = 1.0f;
  // (presenting: the heading in the maps' tooltip, the rows get its line)
  if (!high_contrast()) ImGui::TextUnformatted(tr(translator ? T::why_map_heading : T::why_map_heading_self));
  // Two maps side by side, each with the predictions' words on its left and the inputs' words slanted over it.
  const float avail_w = ImGui::GetContentRegionAvail().x, avail_h = ImGui::GetContentRegionAvail().y;
  float row_label_w = 0;
  for (int i : rows)
    row_label_w = std::max(row_label_w, ImGui::CalcTextSize(state.target_token(map.tokens[static_cast<size_t>(i)]).c_str()).x);
  row_label_w = std::min(row_label_w + ImGui::GetFontSize() * 0.4f, avail_w * 0.12f);
  const float between = ImGui::GetFontSize();
  const float map_w = (avail_w - between) / 2 - row_label_w;
  float column_label_h = 0;
  for (int j = 0; j < columns; ++j)
    column_label_h = std::max(column_label_h, ImGui::CalcTextSize(column_words[static_cast<size_t>(j)].c_str()).x);
  column_label_h = std::min(column_label_h * 0.72f + line, std::max(line * 2, avail_h * 0.25f));  // slanted 45 degrees
  const float cell_w = std::max(2.0f, map_w / static_cast<float>(columns) - gap);
  const float cell_h = std::clamp((avail_h - column_label_h - 2 * line) / static_cast<float>(rows.size()) - gap, 3.0f,
                                  std::max(line * 1.2f, cell_w));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 highlight = IM_COL32(255, 215, 90, 255);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float label_scale = std::clamp(cell_h / line, 0.45f, 1.0f);
  for (int m = 0; m < 2; ++m) {  // 0: the attribution map, 1: the attention map
    const float left = origin.x + m * (map_w + row_label_w + between) + row_label_w;
    const float top = origin.y + line + column_label_h;
    fitted_text(draw, ImVec2(left - row_label_w, origin.y), map_w + row_label_w, line, dim,
                m == 0 ? tr(method_ == AttributionMethod::Rollout ? T::why_method_rollout : T::why_row_attribution)
                       : tr(r.cross ? T::why_attention_map_heading : T::why_attention_map_heading_self));
    // the inputs' words slanted over the columns, clipped to their band (under the map's title)
    draw->PushClipRect(ImVec2(left - row_label_w, origin.y + line), ImVec2(left + map_w + between * 0.8f, top), true);
    for (int j = 0; j < columns; ++j) {
      const float x = left + j * (cell_w + gap) + cell_w * 0.5f;
      rotated_text(draw, ImVec2(x - line * 0.3f, top - 2), text, column_words[static_cast<size_t>(j)].c_str(),
                   0.785398f, ImGui::GetFontSize() * std::clamp(cell_w / line + 0.2f, 0.6f, 1.0f));
    }
    draw->PopClipRect();
    for (size_t k = 0; k < rows.size(); ++k) {
      const int i = rows[k];
      const float y = top + static_cast<float>(k) * (cell_h + gap);
      if (cell_h >= line * 0.45f || i == position)
        fitted_text(draw, ImVec2(left - row_label_w, y + (cell_h - line * label_scale) / 2), row_label_w - 2, line,
                    i == position ? highlight : text, state.target_token(map.tokens[static_cast<size_t>(i)]), label_scale);
      for (int j = 0; j < columns; ++j) {
        const ImVec2 a(left + j * (cell_w + gap), y), b(a.x + cell_w, y + cell_h);
        float v = 0;
        ImU32 colour;
        if (m == 0) {
          v = map.values(i, first_column + j);
          colour = diverging(v, largest);
        } else {
          v = j < r.attention.cols() ? r.attention(i, j) : 0.0f;
          colour = viridis(v);
        }
        draw->AddRectFilled(a, b, colour);
        record_item(m == 0 ? "why.map" : "why.attention_map", a, b, i * columns + j, column_words[static_cast<size_t>(j)], v);
      }
      if (i == position)
        draw->AddRect(ImVec2(left - 1, y - 1), ImVec2(left + columns * (cell_w + gap), y + cell_h + 1), highlight, 0, 0, 2.0f);
      // a click on a row shows that position; the hover names the cell
      ImGui::SetCursorScreenPos(ImVec2(left, y));
      ImGui::PushID(m * 100000 + i);
      if (ImGui::InvisibleButton("row", ImVec2(std::max(1.0f, columns * (cell_w + gap)), cell_h))) clicked = i;
      ImGui::PopID();
      if (ImGui::IsItemHovered()) {
        const int j = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - left) / (cell_w + gap)), 0, columns - 1);
        const float v = m == 0 ? map.values(i, first_column + j) : (j < r.attention.cols() ? r.attention(i, j) : 0.0f);
        const std::vector<std::string> inputs = state.encoder_only() ? state.source_labels() : state.decoder_input_labels();
        ImGui::SetTooltip("%s", tr(T::why_map_tip, {{"token", state.target_token(map.tokens[static_cast<size_t>(i)])},
                                                    {"word", i < static_cast<int>(inputs.size()) ? inputs[static_cast<size_t>(i)] : ""},
                                                    {"input", column_words[static_cast<size_t>(j)]},
                                                    {"value", m == 0 ? signed_text(v) : probability_text(v)}})
                                    .c_str());
      }
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + line + column_label_h + rows.size() * (cell_h + gap)));
  ImGui::Dummy(ImVec2(1, 1));
  return clicked;
}

}  // namespace sf::gui
