// The colormaps of the heatmap shader (shaders/heatmap.frag.glsl), evaluated on the CPU with the same
// polynomials: for colour bars, legends and the tests that check a screenshot's pixels.
#pragma once

namespace sf::gui {

enum class Colormap { Viridis = 0, Magma = 1 };

struct Rgb {
  float r, g, b;  // 0..1
};

Rgb colormap_rgb(Colormap map, float t);  // t in [0, 1] (clamped)

// Maps value to [0, 1] the way the shader does: (value - lo) / (hi - lo), clamped; 0.5 when hi == lo.
float colormap_position(float value, float lo, float hi);

}  // namespace sf::gui
