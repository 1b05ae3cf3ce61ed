// The views that teach the connections, as a user sees them: the app under xvfb-run -a on the shipped model
// and the default sentence, driven by a script, its screenshots' pixels checked against the trace: the hovered
// cell's row and column outlined (not the row's token as a column), decoder rows labelled "input -> predicted",
// an opened cell's steps, the line view's strongest lines, a switched-off head drawn in the diverging scale's
// centre colour, and a zoomed map with its minimap and full-size labels.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app_under_xvfb.h"
#include "gui/app_state.h"
#include "gui/panels/attention_lines_panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/colormap.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

struct Shot {
  testing::Image image;
  nlohmann::json layout;
  const nlohmann::json* heatmap(const std::string& name) const {
    for (const auto& h : layout["heatmaps"])
      if (h["name"] == name) return &h;
    return nullptr;
  }
  std::vector<nlohmann::json> items(const std::string& name) const {
    std::vector<nlohmann::json> out;
    for (const auto& i : layout["items"])
      if (i["name"] == name) out.push_back(i);
    return out;
  }
};

// Runs the app at `size` (1600x1000) on `commands` (after the shipped model and the default sentence), then takes one
// screenshot and layout.
Shot run(const std::string& name, const std::string& commands, const std::string& size = "1600x1000") {
  const fs::path dir = testing::fresh_output_dir("connections_" + name);
  {
    std::ofstream script(dir / "script.txt");
    script << "unhover\n" << commands << "screenshot " << (dir / "shot.png").string() << "\nlayout "
           << (dir / "layout.json").string() << "\nquit\n";
  }
  Shot s;
  const std::string cmd = testing::headless_app_command("--no-settings --size " + size + " --script " +
                                                        (dir / "script.txt").string() + " > " +
                                                        (dir / "log.txt").string() + " 2>&1");
  if (cmd.empty() || std::system(cmd.c_str()) != 0) return s;
  s.image = testing::load_png(dir / "shot.png");
  s.layout = testing::load_json(dir / "layout.json");
  return s;
}

bool orange(const unsigned char* p) {  // the hover colour (240, 150, 30)
  return std::abs(p[0] - 240) <= 12 && std::abs(p[1] - 150) <= 12 && std::abs(p[2] - 30) <= 12;
}

// Any hover-coloured pixel in the column x0..x1 at row y.
bool orange_between(const testing::Image& image, int x0, int x1, int y) {
  for (int x = std::max(0, x0); x <= x1 && x < image.width; ++x)
    if (orange(image.at(x, y))) return true;
  return false;
}
bool orange_between_rows(const testing::Image& image, int x, int y0, int y1) {
  for (int y = std::max(0, y0); y <= y1 && y < image.height; ++y)
    if (orange(image.at(x, y))) return true;
  return false;
}

TEST(ConnectionScreens, HoverOutlinesTheHoveredRowAndTheHoveredColumn) {
  // Row 3 ("in"), column 10 ("straße") of encoder layer 1, head 2: on encoder attention both axes are the same
  // tokens, and the old outline sat on column 3 ("in" again).
  const Shot s = run("hover", "attention enc.2.3\nhover 3 10\n");
  ASSERT_TRUE(s.image.pixels);
  const nlohmann::json* map = s.heatmap("attention");
  ASSERT_NE(map, nullptr);
  const float x0 = (*map)["x0"], y0 = (*map)["y0"], x1 = (*map)["x1"], y1 = (*map)["y1"];
  const float cw = (x1 - x0) / 13, ch = (y1 - y0) / 13;
  const auto col_x = [&](int j) { return static_cast<int>(std::lround(x0 + j * cw)); };
  const auto row_y = [&](int i) { return static_cast<int>(std::lround(y0 + i * ch)); };
  // The hovered row's top and bottom edges, seen at column 1 (far from the pointer and its tooltip).
  const int x_probe = static_cast<int>(x0 + 1.5f * cw);
  EXPECT_TRUE(orange_between_rows(s.image, x_probe, row_y(3) - 2, row_y(3) + 2)) << "no outline on top of row 3";
  EXPECT_TRUE(orange_between_rows(s.image, x_probe, row_y(4) - 2, row_y(4) + 2)) << "no outline under row 3";
  // The hovered column's edges, seen at row 1 (above the pointer).
  const int y_probe = static_cast<int>(y0 + 1.5f * ch);
  EXPECT_TRUE(orange_between(s.image, col_x(10) - 2, col_x(10) + 2, y_probe)) << "no outline left of column 10";
  EXPECT_TRUE(orange_between(s.image, col_x(11) - 2, col_x(11) + 2, y_probe)) << "no outline right of column 10";
  // Not the query's token as a column.
  EXPECT_FALSE(orange_between(s.image, col_x(3) - 2, col_x(3) + 2, y_probe)) << "column 3 (the row's token) outlined";
  EXPECT_FALSE(orange_between(s.image, col_x(4) - 2, col_x(4) + 2, y_probe));
  // Nor another row.
  EXPECT_FALSE(orange_between_rows(s.image, x_probe, row_y(7) - 2, row_y(7) + 2));
}

TEST(ConnectionScreens, DecoderRowsAreLabelledWithWhatTheyPredict) {
  const Shot s = run("decoder_rows", "attention cross.3.3\n");
  ASSERT_TRUE(s.image.pixels);
  const std::vector<nlohmann::json> rows = s.items("attention.row");
  ASSERT_EQ(rows.size(), 13u) << "every row labelled";
  // (the default model reads and writes pieces: ▁ starts a word)
  EXPECT_EQ(rows[0]["text"], "<bos> -> \xe2\x96\x81" "a");
  EXPECT_EQ(rows[5]["text"], "\xe2\x96\x81orange -> \xe2\x96\x81shirt");
  for (const auto& r : rows) {
    EXPECT_NE(r["text"].get<std::string>().find(" -> "), std::string::npos) << r["text"];
    // The label's text is in the picture: light pixels inside its box.
    int light = 0;
    for (int y = static_cast<int>(r["y0"].get<float>()); y < static_cast<int>(r["y1"].get<float>()); ++y)
      for (int x = static_cast<int>(r["x0"].get<float>()); x < static_cast<int>(r["x1"].get<float>()); ++x)
        light += s.image.at(x, y)[0] > 180;
    EXPECT_GT(light, 20) << r["text"] << " is not drawn";
  }
}

TEST(ConnectionScreens, AnOpenedCellShowsItsStepsWithTheTracesNumbers) {
  const Shot s = run("expand", "attention cross.3.3\nexpand 5 6\n");
  ASSERT_TRUE(s.image.pixels);
  AppState state;
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  const AttentionTrace& a = state.trace().decoder[2].cross_attn;
  for (const char* name : {"cell_q", "cell_k", "cell_products", "cell_row_probs", "cell_values", "cell_out"}) {
    const nlohmann::json* h = s.heatmap(name);
    ASSERT_NE(h, nullptr) << name;
    EXPECT_LE((*h)["x1"].get<float>(), 1600.0f) << name;
    EXPECT_LE((*h)["y1"].get<float>(), 1000.0f) << name;
  }
  EXPECT_EQ((*s.heatmap("cell_q"))["cols"], 32);
  const std::vector<nlohmann::json> score = s.items("cell.score"), prob = s.items("cell.prob");
  ASSERT_EQ(score.size(), 1u);
  ASSERT_EQ(prob.size(), 1u);
  EXPECT_NEAR(score[0]["value"].get<float>(), a.scores[2](5, 6), 1e-5f);
  EXPECT_NEAR(prob[0]["value"].get<float>(), a.probs[2](5, 6), 1e-6f);
  // The softmax strip: the cell's column outlined, and the brightest cell where the trace's maximum is.
  const nlohmann::json& strip = *s.heatmap("cell_row_probs");
  const float sx0 = strip["x0"], sx1 = strip["x1"], sy0 = strip["y0"], sy1 = strip["y1"];
  const float cw = (sx1 - sx0) / 13;
  const int mid_y = static_cast<int>((sy0 + sy1) / 2);
  EXPECT_TRUE(orange_between(s.image, static_cast<int>(sx0 + 6 * cw) - 2, static_cast<int>(sx0 + 6 * cw) + 2, mid_y))
      << "column 6 not outlined in the softmax strip";
  Eigen::Index want = 0;
  a.probs[2].row(5).maxCoeff(&want);
  int brightest = -1;
  float best = -1;
  for (int j = 0; j < 13; ++j) {
    const unsigned char* p = s.image.at(static_cast<int>(sx0 + (j + 0.5f) * cw), mid_y);
    const float luma = 0.2126f * p[0] + 0.7152f * p[1] + 0.0722f * p[2];
    if (luma > best) best = luma, brightest = j;
  }
  EXPECT_EQ(brightest, want);
}

TEST(ConnectionScreens, TheLineViewDrawsEachQuerysStrongestLineInItsHeadsColour) {
  // Encoder layer 1, head 5: every row has one clear maximum (at least 0.75 above the next).
  // (the word model, whose head this is: the subword default's heads differ)
  const Shot s = run("lines", "model de-en\nattention enc.2.6\nview lines\n");
  ASSERT_TRUE(s.image.pixels);
  EXPECT_EQ(s.heatmap("attention"), nullptr);
  const std::vector<nlohmann::json> queries = s.items("lines.query"), keys = s.items("lines.key");
  ASSERT_EQ(queries.size(), 13u);
  ASSERT_EQ(keys.size(), 13u);
  AppState state;
  ASSERT_TRUE(state.load_model(shipped_model_path("de-en"))) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  const Mat& p = state.trace().encoder[1].self_attn.probs[5];
  const ImU32 colour = head_colour(5, 8);
  const float hr = (colour & 0xff) / 255.0f, hg = ((colour >> 8) & 0xff) / 255.0f, hb = ((colour >> 16) & 0xff) / 255.0f;
  // The pixel a fifth of the way along the line from query i to key j: the head's colour, as opaque as the
  // probability (over the black background).
  const auto matches = [&](int i, int j, float weight) {
    const float xa = queries[static_cast<size_t>(i)]["x1"], ya = (queries[static_cast<size_t>(i)]["y0"].get<float>() + queries[static_cast<size_t>(i)]["y1"].get<float>()) / 2;
    const float xb = keys[static_cast<size_t>(j)]["x0"], yb = (keys[static_cast<size_t>(j)]["y0"].get<float>() + keys[static_cast<size_t>(j)]["y1"].get<float>()) / 2;
    const float t = 0.2f;
    const unsigned char* px = s.image.at(static_cast<int>(xa + t * (xb - xa)), static_cast<int>(std::lround(ya + t * (yb - ya))));
    return std::abs(px[0] - weight * hr * 255) < 25 && std::abs(px[1] - weight * hg * 255) < 25 &&
           std::abs(px[2] - weight * hb * 255) < 25;
  };
  // Fainter lines too: a line of probability 0.1 is a tenth as bright, not the head's full colour.
  int faint = 0, faint_matched = 0;
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 13; ++j)
      if (p(i, j) >= 0.08f && p(i, j) <= 0.4f) {
        ++faint;
        faint_matched += matches(i, j, p(i, j));
      }
  ASSERT_GE(faint, 2) << "the head has no faint lines to check";
  EXPECT_GE(faint_matched, faint - 1) << "faint lines drawn at the wrong opacity";
  int lit = 0;
  for (int i = 0; i < 13; ++i) {
    Eigen::Index j = 0;
    const float weight = p.row(i).maxCoeff(&j);
    lit += matches(i, static_cast<int>(j), weight);
  }
  EXPECT_GE(lit, 11) << "of 13 rows, the strongest line is drawn in the head's colour";
}

TEST(ConnectionScreens, ASwitchedOffHeadIsTheDivergingScalesCentreColourInTheConcatenation) {
  const Shot s = run("head_off", "head-off enc.1.1\nstage concat-heads\nlayer 1\n");
  ASSERT_TRUE(s.image.pixels);
  const nlohmann::json* concat = s.heatmap("heads_concat");
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ((*concat)["colormap"], "diverging");
  EXPECT_FLOAT_EQ((*concat)["lo"].get<float>(), -(*concat)["hi"].get<float>()) << "a range symmetric about 0";
  const Rgb centre = colormap_rgb(Colormap::Diverging, 0.5f);
  const float x0 = (*concat)["x0"], x1 = (*concat)["x1"], y0 = (*concat)["y0"], y1 = (*concat)["y1"];
  const int cols = (*concat)["cols"];
  // Head 0's block (columns 0..31) is all zeros: every sampled pixel is the centre colour; head 1's is not.
  int centre_in_head0 = 0, centre_in_head1 = 0, samples = 0;
  for (int k = 0; k < 40; ++k) {
    const float y = y0 + (k + 0.5f) * (y1 - y0) / 40;
    const auto at_col = [&](float col) { return s.image.at(static_cast<int>(x0 + (col + 0.5f) * (x1 - x0) / cols), static_cast<int>(y)); };
    const auto is_centre = [&](const unsigned char* p) {
      return std::abs(p[0] - centre.r * 255) <= 3 && std::abs(p[1] - centre.g * 255) <= 3 && std::abs(p[2] - centre.b * 255) <= 3;
    };
    centre_in_head0 += is_centre(at_col(4.0f + k % 24));
    centre_in_head1 += is_centre(at_col(36.0f + k % 24));
    ++samples;
  }
  EXPECT_EQ(centre_in_head0, samples);
  EXPECT_LT(centre_in_head1, samples / 4);
}

TEST(ConnectionScreens, AZoomedMapShowsItsWindowAMinimapAndFullSizeLabels) {
  const Shot s = run("zoom", "attention enc.2.3\nzoom 4 6 6\n");
  ASSERT_TRUE(s.image.pixels);
  const nlohmann::json* map = s.heatmap("attention");
  ASSERT_NE(map, nullptr);
  EXPECT_NEAR((*map)["window"][2].get<float>(), 13.0f / 4, 0.01f);
  ASSERT_NE(s.heatmap("minimap:attention"), nullptr);
  const nlohmann::json& mini = *s.heatmap("minimap:attention");
  EXPECT_GE(mini["x0"].get<float>(), (*map)["x1"].get<float>()) << "the minimap does not cover the map";
  const std::vector<nlohmann::json> rows = s.items("attention.row");
  ASSERT_GE(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r["value"].get<float>(), s.layout["panels"]["font_size"].get<float>()) << r["text"];
    EXPECT_GE(r["y0"].get<float>(), (*map)["y0"].get<float>() - 1);
    EXPECT_LE(r["y1"].get<float>(), (*map)["y1"].get<float>() + 1);
  }
}

// The longest sentences the model takes: 22 times the default sentence and "und" (242 words, 244 source tokens
// with <bos> and <eos>, under the shipped model's 256 positions).
std::string long_sentence() {
  std::string out;
  for (int i = 0; i < 22; ++i) out += std::string(i ? " " : "") + "Ein Mann in einem orangefarbenen Hemd steht auf der Straße und";
  return out;
}

// No two maps of a layout overlap, and every map lies inside the window.
void expect_maps_apart(const Shot& s, float width, float height, const std::string& what) {
  const auto& maps = s.layout["heatmaps"];
  for (size_t i = 0; i < maps.size(); ++i) {
    const auto& a = maps[i];
    EXPECT_GE(a["x0"].get<float>(), -0.5f) << what << ": " << a["name"];
    EXPECT_GE(a["y0"].get<float>(), -0.5f) << what << ": " << a["name"];
    EXPECT_LE(a["x1"].get<float>(), width + 0.5f) << what << ": " << a["name"];
    EXPECT_LE(a["y1"].get<float>(), height + 0.5f) << what << ": " << a["name"];
    for (size_t j = i + 1; j < maps.size(); ++j) {
      const auto& b = maps[j];
      const bool apart = a["x1"].get<float>() <= b["x0"].get<float>() + 0.5f || b["x1"].get<float>() <= a["x0"].get<float>() + 0.5f ||
                         a["y1"].get<float>() <= b["y0"].get<float>() + 0.5f || b["y1"].get<float>() <= a["y0"].get<float>() + 0.5f;
      EXPECT_TRUE(apart) << what << ": " << a["name"] << " and " << b["name"] << " overlap";
    }
  }
}

TEST(ConnectionScreens, TheLongestSentenceDrawsNoMapOverAnotherAndAWideMapKeepsItsRowsLabelled) {
  const Shot cross = run("long_cross", "sentence " + long_sentence() + "\nattention cross.1.1\n");
  ASSERT_TRUE(cross.image.pixels);
  const nlohmann::json* map = cross.heatmap("attention");
  ASSERT_NE(map, nullptr);
  ASSERT_EQ((*map)["cols"].get<int>(), 244) << "the sentence is not the long one";
  const int rows = (*map)["rows"];
  expect_maps_apart(cross, 1600, 1000, "cross-attention");
  // 20 x 244 with square cells was a strip of 3-pixel rows: the rows take the height and keep their labels.
  const float row_height = ((*map)["y1"].get<float>() - (*map)["y0"].get<float>()) / rows;
  EXPECT_GE(row_height, 10.0f);
  EXPECT_EQ(static_cast<int>(cross.items("attention.row").size()), rows) << "every decoder row labelled";
  for (const char* stage : {"encoder-attention", "decoder-attention", "encoder-qkv", "concat-heads", "encoder-add-norm",
                            "encoder-feed-forward", "embedding"}) {
    const Shot s = run(std::string("long_") + stage, "sentence " + long_sentence() + "\nstage " + stage + "\n");
    ASSERT_TRUE(s.image.pixels) << stage;
    expect_maps_apart(s, 1600, 1000, stage);
  }
}

// How far the white text above a map's column reaches up from the map (pixels): from the first white pixel
// in the column's strip above the map (within 20 rows), upward until 8 rows in a row hold none.
int label_reach(const testing::Image& image, int x0, int x1, int map_top) {
  int top = map_top, blank = 0;
  bool found = false;
  for (int y = map_top - 1; y >= 0 && (found ? blank < 8 : y > map_top - 20); --y) {
    bool white = false;
    for (int x = std::max(0, x0); x <= x1 && x < image.width && !white; ++x) {
      const unsigned char* p = image.at(x, y);
      white = p[0] > 120 && p[1] > 120 && p[2] > 120;
    }
    if (white) {
      top = y;
      blank = 0;
      found = true;
    } else {
      ++blank;
    }
  }
  return map_top - top;
}

TEST(ConnectionScreens, OnAWideProjectorTheStepMapsKeepTheirRowsAndTheLastLabelIsWhole) {
  // Presentation mode at 1920x1080: the steps column is wide enough for labels, and short. Its stretched maps
  // once gave their height to the column labels (a 13 x 13 score map drawn 2 px a row), and the attention map's
  // last column label lost its end ("<eo"): glyphs were culled where they would lie unrotated.
  const Shot s = run("projector", "present on\nstage encoder-attention\n", "1920x1080");
  ASSERT_TRUE(s.image.pixels);
  for (const char* name : {"attention_scores", "attention_masked_scores", "attention_head_output"}) {
    const nlohmann::json* m = s.heatmap(name);
    ASSERT_NE(m, nullptr) << name;
    const float row_height = ((*m)["y1"].get<float>() - (*m)["y0"].get<float>()) / (*m)["rows"].get<float>();
    EXPECT_GE(row_height, 8.0f) << name << ": the step map is squashed to a strip";
  }
  const nlohmann::json* map = s.heatmap("attention");
  ASSERT_NE(map, nullptr);
  const float x0 = (*map)["x0"], x1 = (*map)["x1"];
  const int cols = (*map)["cols"], top = static_cast<int>((*map)["y0"].get<float>());
  ASSERT_EQ(cols, 13);
  const float cw = (x1 - x0) / cols;
  const auto strip = [&](int j) {
    return label_reach(s.image, static_cast<int>(x0 + j * cw) + 2, static_cast<int>(x0 + (j + 1) * cw) - 2, top);
  };
  const int bos = strip(0), eos = strip(cols - 1);  // "<bos>" and "<eos>": the same length in type
  EXPECT_GT(bos, 20);
  EXPECT_NEAR(eos, bos, 0.1 * bos) << "the last column's label is cut: " << eos << " px against " << bos;
}

}  // namespace
}  // namespace sf::gui
