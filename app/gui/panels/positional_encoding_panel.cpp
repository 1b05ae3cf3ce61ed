#include "gui/panels/positional_encoding_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "nn/positional_encoding.h"

namespace sf::gui {

namespace {

constexpr int kPositions = 64;  // rows shown: longer than any sentence of the training data
constexpr ImU32 kCurveColours[] = {IM_COL32(240, 190, 40, 255), IM_COL32(90, 180, 250, 255),
                                   IM_COL32(240, 90, 90, 255), IM_COL32(120, 220, 120, 255)};

// Line plot of column `dim` of m over its rows, in the rectangle [p0, p1], values in [-lo, lo].
void plot_column(ImDrawList* draw, const Mat& m, int dim, ImVec2 p0, ImVec2 p1, float range, ImU32 colour) {
  const int n = static_cast<int>(m.rows());
  ImVec2 last;
  for (int i = 0; i < n; ++i) {
    const float x = p0.x + (p1.x - p0.x) * i / (n - 1);
    const float y = p0.y + (p1.y - p0.y) * (0.5f - 0.5f * std::clamp(m(i, dim) / range, -1.0f, 1.0f));
    if (i) draw->AddLine(last, ImVec2(x, y), colour, 2.5f);
    last = ImVec2(x, y);
  }
}

const char kHalvesTag = 0;  // source_ for a computed table in halves (Marian), unlike the interleaved one's nullptr

}  // namespace

PanelAsk PositionalEncodingPanel::draw(const PanelContext& context) {
  draw_stage(context.state);
  return {};
}

namespace {

// (P, P) cosine similarity of the rows of m: PE_i . PE_j / (|PE_i| |PE_j|), in -1 .. 1.
Mat cosine_similarity(const Mat& m) {
  Mat unit = m;
  for (Eigen::Index r = 0; r < unit.rows(); ++r) {
    const float n = unit.row(r).norm();
    if (n > 0) unit.row(r) /= n;
  }
  return unit * unit.transpose();
}

}  // namespace

// Learned positions (GPT-2's wpe, the tutorials' nn.Embedding): the table and how alike its rows are, beside what
// the paper's sinusoids of the same size would be; what a class compares is the pattern, not the numbers.
void PositionalEncodingPanel::draw_learned(const AppState& state) {
  const Config& c = state.model()->config;
  const Mat& table = c.has_encoder() ? state.model()->weights.src_positions : state.model()->weights.tgt_positions;  // (P, C)
  const void* source = &table;
  if (source != source_ || encoding_.cols() != c.d_model || encoding_.rows() == 0) {
    encoding_ = table.topRows(std::min<Eigen::Index>(kPositions, table.rows()));
    const int P = static_cast<int>(encoding_.rows());
    const float range = std::max(1e-3f, encoding_.cwiseAbs().maxCoeff());
    matrix_.set_values(encoding_.data(), P, c.d_model, -range, range);
    const Mat similarity = cosine_similarity(encoding_);
    similarity_.set_values(similarity.data(), P, P, -1.0f, 1.0f);
    const Mat sines = sinusoidal_positional_encoding(P, c.d_model, c.sinusoid_layout);  // (P, C)
    sine_matrix_.set_values(sines.data(), P, c.d_model, -1.0f, 1.0f);
    const Mat sine_similarity = cosine_similarity(sines);
    sine_similarity_.set_values(sine_similarity.data(), P, P, -1.0f, 1.0f);
    source_ = source;
  }
  const int P = static_cast<int>(encoding_.rows());
  if (!high_contrast()) ImGui::TextUnformatted(tr(T::positional_encoding_heading_learned));
  // (two paragraphs, one "Explain" when presenting: the maps take the height)
  explanation((std::string(tr(T::positional_encoding_explanation_learned)) + "\n" + tr(T::gpt_positions_compare)).c_str());
  formula(std::string("$x_i = E[id_i] \\cdot scale + P_{pos}$") +
          tr(T::positional_encoding_learned_shape, {{"rows", static_cast<int>(table.rows())}, {"d_model", c.d_model}, {"shown", P}}));
  // Two rows of two: the learned table and its similarities; the sinusoids of the same size and theirs.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float spacing = style.ItemSpacing.x;
  const float bar = std::max(colour_bar_width(-1.0f, 1.0f), colour_bar_width(matrix_.lo(), matrix_.hi()));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const std::string titles[4] = {tr(T::gpt_positions_learned_title, {{"positions", P}, {"d_model", c.d_model}}),
                                 tr(T::gpt_positions_similarity_learned),
                                 tr(T::gpt_positions_sines_title, {{"positions", P}, {"d_model", c.d_model}}),
                                 tr(T::gpt_positions_similarity_sines)};
  // Each row: its titles (wrapped at their maps' widths), then the maps; the two rows share the height left.
  // The similarity maps are square, so their width follows the height: measured twice.
  float row_h = 0, side = avail.x * 0.3f, matrix_w = 0;
  const auto fit_rows = [&] {  // the rows' height with the titles wrapped at the widths `side` gives
    matrix_w = std::max(64.0f, avail.x - side - 2 * bar - 5 * spacing);
    float titles_h = 0;
    for (int r = 0; r < 2; ++r)
      titles_h += std::max(ImGui::CalcTextSize(titles[2 * r].c_str(), nullptr, false, matrix_w + spacing + bar).y,
                           ImGui::CalcTextSize(titles[2 * r + 1].c_str(), nullptr, false, side + spacing + bar).y) +
                  2 * style.ItemSpacing.y;
    row_h = std::max(ImGui::GetFontSize() * 3, (avail.y - titles_h - 2 * style.ItemSpacing.y) / 2);
  };
  fit_rows();
  side = std::min(row_h, avail.x * 0.3f);
  fit_rows();  // (a narrower similarity map may wrap its title to more lines: measured again at the width it keeps)
  pictures_top_ = ImGui::GetCursorScreenPos();
  int row = -1, col = -1;
  const auto pair = [&](Heatmap& matrix, const char* matrix_name, const std::string& matrix_title, Heatmap& similarity,
                        const char* similarity_name, const std::string& similarity_title) {
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + matrix_w + spacing + bar);
    ImGui::TextUnformatted(matrix_title.c_str());
    ImGui::PopTextWrapPos();
    if (matrix.draw(matrix_name, ImVec2(matrix_w, row_h), HeatmapStyle{Colormap::Diverging, true}, &row, &col))
      ImGui::SetTooltip("%s", tr(T::positional_encoding_matrix_tip,
                                 {{"position", row}, {"dimension", col}, {"value", number_text("%.4f", matrix.value(row, col))}})
                                  .c_str());
    ImGui::SameLine();
    colour_bar(tr(T::positional_encoding_bar_value), matrix.lo(), matrix.hi(), ImVec2(bar, row_h), Colormap::Diverging);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + side + spacing + bar);
    ImGui::TextUnformatted(similarity_title.c_str());
    ImGui::PopTextWrapPos();
    const float s = std::min(side, row_h);
    if (similarity.draw(similarity_name, ImVec2(s, s), HeatmapStyle{Colormap::Diverging, true}, &row, &col))
      ImGui::SetTooltip("%s", tr(T::gpt_positions_cosine_tip,
                                 {{"i", row}, {"j", col}, {"cosine", number_text("%.2f", similarity.value(row, col))}})
                                  .c_str());
    ImGui::SameLine();
    colour_bar(tr(T::gpt_positions_bar_cosine), -1.0f, 1.0f, ImVec2(bar, s), Colormap::Diverging);
    ImGui::EndGroup();
  };
  pair(matrix_, "positional_encoding", titles[0], similarity_, "positional_similarity", titles[1]);
  pair(sine_matrix_, "sinusoidal_encoding", titles[2], sine_similarity_, "sinusoidal_similarity", titles[3]);
  record_item("main_map", pictures_top_, ImVec2(pictures_top_.x + avail.x, ImGui::GetItemRectMax().y), -1, "positional");
}

void PositionalEncodingPanel::draw_stage(const AppState& state) {
  const int d_model = state.model() ? state.model()->config.d_model : 256;
  const bool learned = state.model() && state.model()->config.positional_encoding == PositionalEncoding::Learned;
  if (learned) {
    draw_learned(state);
    return;
  }
  const bool halves = state.model() && state.model()->config.sinusoid_layout == SinusoidLayout::Halves;  // Marian
  // The table is made again when the model's weights, width or sinusoid layout change.
  const void* source = halves ? static_cast<const void*>(&kHalvesTag) : nullptr;
  if (source != source_ || encoding_.cols() != d_model || encoding_.rows() == 0) {
    encoding_ = sinusoidal_positional_encoding(kPositions, d_model,
                                               halves ? SinusoidLayout::Halves : SinusoidLayout::Interleaved);  // (P, C)
    matrix_.set_values(encoding_.data(), static_cast<int>(encoding_.rows()), d_model, -1.0f, 1.0f);
    const Mat similarity = encoding_ * encoding_.transpose();  // (P, P) PE(i) . PE(j)
    similarity_.set_values(similarity.data(), static_cast<int>(similarity.rows()), static_cast<int>(similarity.cols()),
                           similarity.minCoeff(), similarity.maxCoeff());
    // Each pair of curves a sine and its cosine: dimensions 2i, 2i+1 interleaved; i and C/2 + i in halves.
    if (halves != (source_ == static_cast<const void*>(&kHalvesTag))) {
      const int sines = (d_model + 1) / 2;
      curve_dims_ = halves ? std::array<int, 4>{0, sines, std::min(8, sines - 1), sines + std::min(8, sines - 1)}
                           : std::array<int, 4>{0, 1, 16, 64};
    }
    source_ = source;
  }
  const int P = static_cast<int>(encoding_.rows());

  {
    if (!high_contrast()) ImGui::TextUnformatted(tr(T::positional_encoding_heading));
    explanation(tr(T::positional_encoding_explanation));
    if (halves) {
      char numbers[48];
      std::snprintf(numbers, sizeof(numbers), "     $d_{model}$ = %d", d_model);
      formula(std::string("$PE_{(pos, i)} = sin(pos / 10000^{2i/d_{model}})$     "
                          "$PE_{(pos, d_{model}/2 + i)} = cos(pos / 10000^{2i/d_{model}})$") + numbers);
      text_disabled_wrapped("%s", tr(T::positional_encoding_marian_note));
    } else {
      char numbers[48];
      std::snprintf(numbers, sizeof(numbers), "     $d_{model}$ = %d", d_model);
      formula(std::string("$PE_{(pos, 2i)} = sin(pos / 10000^{2i/d_{model}})$     "
                          "$PE_{(pos, 2i+1)} = cos(pos / 10000^{2i/d_{model}})$") + numbers);
    }
  }

  // Curves of the chosen dimensions over the positions.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::TextDisabled("%s", tr(T::positional_encoding_curves));
  for (size_t k = 0; k < curve_dims_.size(); ++k) {
    ImGui::SameLine();
    ImGui::PushID(static_cast<int>(k));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(kCurveColours[k]));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
    ImGui::InputInt("##dim", &curve_dims_[k]);
    curve_dims_[k] = std::clamp(curve_dims_[k], 0, d_model - 1);
    ImGui::PopStyleColor();
    ImGui::PopID();
  }
  const float range = 1.0f;  // sines and cosines
  {
    // The legend beside the plot: one line per curve, as wide as its longest line; the plot at least as high.
    std::vector<std::string> legend;
    float legend_width = 0;
    for (const int dim : curve_dims_) {
      std::string text;
      if (halves) {  // dim < (d+1)/2: the sine of frequency dim; else the cosine of frequency dim - (d+1)/2
        const int sines = (d_model + 1) / 2, i = dim < sines ? dim : dim - sines;
        text = tr(T::positional_encoding_legend,
                  {{"dim", dim},
                   {"function", dim < sines ? "sin" : "cos"},
                   {"wavelength", number_text("%.0f", 2.0 * 3.14159265 *
                                                          std::pow(10000.0, 2.0 * i / static_cast<double>(d_model)))}});
      } else
        text = tr(T::positional_encoding_legend,
                  {{"dim", dim},
                   {"function", dim % 2 ? "cos" : "sin"},
                   {"wavelength",
                    number_text("%.0f", 2.0 * 3.14159265 *
                                            std::pow(10000.0, (dim - dim % 2) / static_cast<double>(d_model)))}});
      legend.push_back(text);
      legend_width = std::max(legend_width, ImGui::CalcTextSize(text.c_str()).x);
    }
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    pictures_top_ = p0;
    const ImVec2 p1(p0.x + std::max(avail.x * 0.4f, avail.x - legend_width - ImGui::GetStyle().ItemSpacing.x),
                    p0.y + std::max({80.0f, avail.y * (high_contrast() ? 0.22f : 0.28f), line * static_cast<float>(legend.size())}));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(p0, p1, IM_COL32(25, 25, 30, 255));
    draw->AddLine(ImVec2(p0.x, (p0.y + p1.y) / 2), ImVec2(p1.x, (p0.y + p1.y) / 2), IM_COL32(90, 90, 90, 255));
    for (size_t k = 0; k < curve_dims_.size(); ++k) plot_column(draw, encoding_, curve_dims_[k], p0, p1, range, kCurveColours[k]);
    const float legend_x = p1.x + ImGui::GetStyle().ItemSpacing.x;
    for (size_t k = 0; k < legend.size(); ++k)
      draw->AddText(ImVec2(legend_x, p0.y + k * line), kCurveColours[k], legend[k].c_str());
    draw->AddText(ImVec2(p0.x + 4, p1.y - ImGui::GetFontSize() - 2), IM_COL32(160, 160, 160, 255),
                  tr(T::positional_encoding_axis_position, {{"position", 0}}).c_str());
    const std::string last = tr(T::positional_encoding_axis_position, {{"position", P - 1}});
    draw->AddText(ImVec2(p1.x - ImGui::CalcTextSize(last.c_str()).x - 4, p1.y - ImGui::GetFontSize() - 2),
                  IM_COL32(160, 160, 160, 255), last.c_str());
    ImGui::Dummy(ImVec2(p1.x - p0.x, p1.y - p0.y));
  }

  // The matrix and the similarity of positions, side by side.
  const float bar = std::max(colour_bar_width(matrix_.lo(), matrix_.hi()),
                             colour_bar_width(similarity_.lo(), similarity_.hi()));
  // The room left below the curves, but at least 8 lines (large type on a small screen: the panel scrolls).
  const float height = std::max(ImGui::GetFontSize() * 4,
                                ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2.5f);
  // The similarity map's title wraps to the map's width (large type); the map gives up that height. Where the
  // whole title would take more than two lines (presentation mode on a short screen: a word a line, and the
  // map pushed out of view), the formula alone; the map's tooltip says what it means.
  // The title is measured again at the width the map keeps: a narrower map can wrap it to more lines.
  const float widest_side = std::min(height, avail.x * 0.3f);  // the matrix keeps the width its 256 columns need
  const char* similarity_title = tr(T::positional_encoding_similarity_title);
  float sim_side = widest_side;
  for (int pass = 0; pass < 2; ++pass) {
    sim_side = widest_side;
    const float title_extra = math_text_size(similarity_title, sim_side).y - ImGui::GetFontSize();
    if (title_extra > 0) sim_side = std::max(32.0f, std::min(sim_side, height - title_extra));
    if (math_text_size(similarity_title, sim_side).y <= 2.5f * ImGui::GetFontSize()) break;
    similarity_title = "$PE_i \\cdot PE_j$";
  }
  const float matrix_width = std::max(64.0f, avail.x - sim_side - 2 * bar - 4 * ImGui::GetStyle().ItemSpacing.x);
  // Two groups side by side, each its title over its map with the map's colour bar beside it.
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  int row = -1, col = -1;
  ImGui::BeginGroup();
  ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + matrix_width + spacing + bar);
  ImGui::TextUnformatted(tr(T::positional_encoding_matrix_title, {{"positions", P}, {"d_model", d_model}}).c_str());
  ImGui::PopTextWrapPos();
  // Sines and cosines are signed: the diverging scale, 0 in its centre (dark grey), -1 blue, +1 orange.
  if (matrix_.draw("positional_encoding", ImVec2(matrix_width, height), HeatmapStyle{Colormap::Diverging, true}, &row, &col))
    ImGui::SetTooltip(
        "%s", tr(T::positional_encoding_matrix_tip,
                 {{"position", row}, {"dimension", col}, {"value", number_text("%.4f", matrix_.value(row, col))}})
                  .c_str());
  ImGui::SameLine();
  colour_bar(tr(T::positional_encoding_bar_value), matrix_.lo(), matrix_.hi(), ImVec2(bar, height),
             Colormap::Diverging);
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  math_text(similarity_title, sim_side);
  if (similarity_.draw("positional_similarity", ImVec2(sim_side, sim_side), {}, &row, &col))
    ImGui::SetTooltip("%s", tr(T::positional_encoding_similarity_tip,
                               {{"i", row}, {"j", col}, {"dot", number_text("%.2f", similarity_.value(row, col))}})
                                .c_str());
  ImGui::SameLine();
  colour_bar(tr(T::positional_encoding_bar_dot), similarity_.lo(), similarity_.hi(), ImVec2(bar, sim_side));
  ImGui::EndGroup();
  // The stage's picture: the curves over the matrix and the similarities, as wide as the stage.
  record_item("main_map", pictures_top_, ImVec2(pictures_top_.x + avail.x, ImGui::GetItemRectMax().y), -1, "positional");
}

}  // namespace sf::gui
