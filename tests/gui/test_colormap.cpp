// The colormaps the heatmaps are drawn with (app/gui/render/colormap.cpp; the shader uses the same fits):
// polynomial fits of matplotlib's tables, checked at 33 points of each table (tests/fixtures/colormaps.json,
// written by tests/reference/make_colormap_fixtures.py from matplotlib itself).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "gui/render/colormap.h"

namespace sf::gui {
namespace {

// Each map against matplotlib's table, within its fit's accuracy: viridis 0.013, magma 0.02 (its fit is loosest
// in the blue channel, 0.0193 at 91/255). A map swapped for another misses by 0.1 or more somewhere.
void expect_matches_matplotlib(Colormap map, const char* name, float tolerance) {
  std::ifstream in(std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/colormaps.json");
  ASSERT_TRUE(in) << "missing tests/fixtures/colormaps.json";
  const nlohmann::json points = nlohmann::json::parse(in)["maps"][name];
  ASSERT_EQ(points.size(), 33u);
  for (const auto& p : points) {
    const float t = p["t"];
    const Rgb c = colormap_rgb(map, t);
    EXPECT_NEAR(c.r, p["rgb"][0].get<float>(), tolerance) << name << " at " << t;
    EXPECT_NEAR(c.g, p["rgb"][1].get<float>(), tolerance) << name << " at " << t;
    EXPECT_NEAR(c.b, p["rgb"][2].get<float>(), tolerance) << name << " at " << t;
  }
}

TEST(Colormap, ViridisMatchesMatplotlib) { expect_matches_matplotlib(Colormap::Viridis, "viridis", 0.013f); }
TEST(Colormap, MagmaMatchesMatplotlib) { expect_matches_matplotlib(Colormap::Magma, "magma", 0.02f); }

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
