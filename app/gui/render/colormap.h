// The colormaps of the heatmap shader (shaders/heatmap.frag.glsl), evaluated on the CPU with the same
// polynomials: for colour bars, legends and the tests that check a screenshot's pixels.
#pragma once

namespace sf::gui {

// Viridis and magma (sequential) for values that are never negative (probabilities, ReLU outputs); Diverging
// for signed values, drawn over a range symmetric about 0 so that 0 is its centre colour (a dark grey):
// blue below, orange above, lightness growing linearly with |value| (straight lines in CIELAB).
enum class Colormap { Viridis = 0, Magma = 1, Diverging = 2 };

struct Rgb {
  float r, g, b;  // 0..1
};

Rgb colormap_rgb(Colormap map, float t);  // t in [0, 1] (clamped)
// CIELAB (D65) of a colour, for tests of perceptual uniformity: L* 0..100.
struct Lab {
  float l, a, b;
};
Lab srgb_to_lab(const Rgb& c);

// Maps value to [0, 1] the way the shader does: (value - lo) / (hi - lo), clamped; 0.5 when hi == lo.
float colormap_position(float value, float lo, float hi);

}  // namespace sf::gui
