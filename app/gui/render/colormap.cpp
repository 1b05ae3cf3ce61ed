#include "gui/render/colormap.h"

#include <algorithm>

namespace sf::gui {

namespace {

// Same coefficients as shaders/heatmap.frag.glsl: polynomial fits of matplotlib's maps, within 0.013 (viridis)
// and 0.02 (magma) of the tables (tests/gui/test_colormap.cpp checks them against matplotlib).
constexpr double kViridis[7][3] = {
    {0.2777273272234177, 0.005407344544966578, 0.3340998053353061},
    {0.1050930431085774, 1.404613529898575, 1.384590162594685},
    {-0.3308618287255563, 0.214847559468213, 0.09509516302823659},
    {-4.634230498983486, -5.799100973351585, -19.33244095627987},
    {6.228269936347081, 14.17993336680509, 56.69055260068105},
    {4.776384997670288, -13.74514537774601, -65.35303263337234},
    {-5.435455855934631, 4.645852612178535, 26.3124352495832}};
constexpr double kMagma[7][3] = {
    {-0.002136485053939582, -0.000749655052795221, -0.005386127855323933},
    {0.2516605407371642, 0.6775232436837668, 2.494026599312351},
    {8.353717279216625, -3.577719514958484, 0.3144679030132573},
    {-27.66873308576866, 14.26473078096533, -13.64921318813922},
    {52.17613981234068, -27.94360607168351, 12.94416944238394},
    {-50.76852536473588, 29.04658282127291, 4.23415299384598},
    {18.65570506591883, -11.48977351997711, -5.601961508734096}};

float horner(const double (&c)[7][3], int channel, double t) {
  double v = c[6][channel];
  for (int i = 5; i >= 0; --i) v = c[i][channel] + t * v;
  return static_cast<float>(std::clamp(v, 0.0, 1.0));
}

}  // namespace

Rgb colormap_rgb(Colormap map, float t) {
  const double x = std::clamp(static_cast<double>(t), 0.0, 1.0);
  const auto& c = map == Colormap::Magma ? kMagma : kViridis;
  return {horner(c, 0, x), horner(c, 1, x), horner(c, 2, x)};
}

float colormap_position(float value, float lo, float hi) {
  const float span = hi - lo;
  if (!(span > 0.0f)) return 0.5f;
  return std::clamp((value - lo) / span, 0.0f, 1.0f);
}

}  // namespace sf::gui
