#include <gtest/gtest.h>

#include "gui/render/colormap.h"

namespace sf::gui {
namespace {

// Reference points of matplotlib's viridis (the 256-entry table at 0, 0.5 and 1).
TEST(Colormap, ViridisMatchesMatplotlibEndpoints) {
  const Rgb lo = colormap_rgb(Colormap::Viridis, 0.0f);
  EXPECT_NEAR(lo.r, 0.267004f, 0.015f);
  EXPECT_NEAR(lo.g, 0.004874f, 0.015f);
  EXPECT_NEAR(lo.b, 0.329415f, 0.015f);
  const Rgb mid = colormap_rgb(Colormap::Viridis, 0.5f);
  EXPECT_NEAR(mid.r, 0.127568f, 0.015f);
  EXPECT_NEAR(mid.g, 0.566949f, 0.015f);
  EXPECT_NEAR(mid.b, 0.550556f, 0.015f);
  const Rgb hi = colormap_rgb(Colormap::Viridis, 1.0f);
  EXPECT_NEAR(hi.r, 0.993248f, 0.015f);
  EXPECT_NEAR(hi.g, 0.906157f, 0.015f);
  EXPECT_NEAR(hi.b, 0.143936f, 0.015f);
}

// Perceptually uniform maps grow monotonically in lightness; a cheap proxy: luma increases along the map.
TEST(Colormap, LumaIncreasesMonotonically) {
  for (Colormap map : {Colormap::Viridis, Colormap::Magma}) {
    float last = -1.0f;
    for (int i = 0; i <= 64; ++i) {
      const Rgb c = colormap_rgb(map, i / 64.0f);
      const float luma = 0.2126f * c.r + 0.7152f * c.g + 0.0722f * c.b;
      EXPECT_GT(luma, last - 1e-3f) << "at " << i;
      last = luma;
    }
  }
}

TEST(Colormap, PositionClampsAndHandlesEmptyRange) {
  EXPECT_FLOAT_EQ(colormap_position(5.0f, 0.0f, 10.0f), 0.5f);
  EXPECT_FLOAT_EQ(colormap_position(-5.0f, 0.0f, 10.0f), 0.0f);
  EXPECT_FLOAT_EQ(colormap_position(50.0f, 0.0f, 10.0f), 1.0f);
  EXPECT_FLOAT_EQ(colormap_position(3.0f, 3.0f, 3.0f), 0.5f);
}

}  // namespace
}  // namespace sf::gui
