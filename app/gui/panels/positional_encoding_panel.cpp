#include "gui/panels/positional_encoding_panel.h"

#include <imgui.h>

#include <algorithm>

#include "gui/widgets.h"
#include "nn/positional_encoding.h"

namespace sf::gui {

void PositionalEncodingPanel::draw(int d_model, int positions) {
  if (encoding_.rows() != positions || encoding_.cols() != d_model) {
    encoding_ = sinusoidal_positional_encoding(positions, d_model);  // (P, C)
    heatmap_.set_values(encoding_.data(), positions, d_model, -1.0f, 1.0f);
  }

  ImGui::TextUnformatted("Positional encoding");
  help_marker(
      "The Transformer has no recurrence, so it adds a position signal to each token's embedding.\n"
      "Each pair of dimensions is a sine and a cosine at its own wavelength, from 2*pi (dimension 0)\n"
      "to 10000*2*pi (the last). Low dimensions change quickly from position to position, high ones slowly,\n"
      "like the hands of a clock. PE(pos + k) is a rotation of PE(pos), so attention can find relative\n"
      "positions.");
  ImGui::Text("PE(pos, 2i) = sin(pos / 10000^(2i/d))     PE(pos, 2i+1) = cos(pos / 10000^(2i/d))");
  ImGui::TextDisabled("matrix: %d positions x %d dimensions (d_model = %d); rows are positions, columns dimensions",
                      positions, d_model, d_model);

  const float bar_width = ImGui::GetFontSize() * 4.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 size(std::max(64.0f, avail.x - bar_width - ImGui::GetStyle().ItemSpacing.x),
                    std::max(64.0f, avail.y - ImGui::GetTextLineHeightWithSpacing() * 1.5f));
  int row = -1, col = -1;
  const bool hovered = heatmap_.draw("positional_encoding", size, {}, &row, &col);
  ImGui::SameLine();
  colour_bar("PE value", heatmap_.lo(), heatmap_.hi(), ImVec2(bar_width, size.y));
  if (hovered) {
    ImGui::Text("position %d, dimension %d (%s, wavelength %.1f): %.4f", row, col, col % 2 ? "cos" : "sin",
                2.0 * 3.14159265358979 * std::pow(10000.0, (col - col % 2) / static_cast<double>(d_model)),
                heatmap_.value(row, col));
  } else {
    ImGui::TextDisabled("hover a cell to read its value");
  }
}

}  // namespace sf::gui
