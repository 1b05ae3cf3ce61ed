#include "gui/render/colormap.h"

#include <algorithm>
#include <cmath>

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

// Diverging: the shader's lab_to_srgb and diverging(), in double.
Rgb lab_to_srgb(double l, double a, double b) {
  const double fy = (l + 16.0) / 116.0, f[3] = {fy + a / 500.0, fy, fy - b / 200.0};
  const double white[3] = {0.95047, 1.0, 1.08883};
  double xyz[3];
  for (int i = 0; i < 3; ++i) {
    const double cubed = f[i] * f[i] * f[i];
    xyz[i] = (cubed > 0.008856 ? cubed : (f[i] - 16.0 / 116.0) / 7.787) * white[i];
  }
  const double m[3][3] = {{3.2404542, -1.5371385, -0.4985314}, {-0.9692660, 1.8760108, 0.0415560},
                          {0.0556434, -0.2040259, 1.0572252}};
  float out[3];
  for (int i = 0; i < 3; ++i) {
    const double lin = std::clamp(m[i][0] * xyz[0] + m[i][1] * xyz[1] + m[i][2] * xyz[2], 0.0, 1.0);
    out[i] = static_cast<float>(lin > 0.0031308 ? 1.055 * std::pow(lin, 1.0 / 2.4) - 0.055 : 12.92 * lin);
  }
  return {out[0], out[1], out[2]};
}

Rgb diverging(double t) {
  const double s = 2.0 * t - 1.0, w = std::abs(s);
  const double end[3] = {70.0, s < 0 ? -6.0 : 36.0, s < 0 ? -40.0 : 50.0};
  return lab_to_srgb(12.0 + (end[0] - 12.0) * w, end[1] * w, end[2] * w);
}

float horner(const double (&c)[7][3], int channel, double t) {
  double v = c[6][channel];
  for (int i = 5; i >= 0; --i) v = c[i][channel] + t * v;
  return static_cast<float>(std::clamp(v, 0.0, 1.0));
}

}  // namespace

Rgb colormap_rgb(Colormap map, float t) {
  const double x = std::clamp(static_cast<double>(t), 0.0, 1.0);
  if (map == Colormap::Diverging) return diverging(x);
  const auto& c = map == Colormap::Magma ? kMagma : kViridis;
  return {horner(c, 0, x), horner(c, 1, x), horner(c, 2, x)};
}

Lab srgb_to_lab(const Rgb& c) {
  const auto linear = [](double v) { return v > 0.04045 ? std::pow((v + 0.055) / 1.055, 2.4) : v / 12.92; };
  const double r = linear(c.r), g = linear(c.g), b = linear(c.b);
  const double xyz[3] = {(0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
                         0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
                         (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883};
  double f[3];
  for (int i = 0; i < 3; ++i) f[i] = xyz[i] > 0.008856 ? std::cbrt(xyz[i]) : 7.787 * xyz[i] + 16.0 / 116.0;
  return {static_cast<float>(116.0 * f[1] - 16.0), static_cast<float>(500.0 * (f[0] - f[1])),
          static_cast<float>(200.0 * (f[1] - f[2]))};
}

float colormap_position(float value, float lo, float hi) {
  const float span = hi - lo;
  if (!(span > 0.0f)) return 0.5f;
  return std::clamp((value - lo) / span, 0.0f, 1.0f);
}

}  // namespace sf::gui
