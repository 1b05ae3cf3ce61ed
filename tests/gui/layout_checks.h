// What a screen's layout dump (--layout-json, the script's `layout`) says is wrong with it, in words: the checks
// every screen answers to (tests/gui/test_projector.cpp, test_languages.cpp).
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace sf::gui::testing {

using nlohmann::json;

inline float num(const json& j, const char* key) { return j.at(key).get<float>(); }

inline std::vector<json> items_named(const json& layout, const std::string& name) {
  std::vector<json> out;
  for (const json& item : layout["items"])
    if (item["name"] == name) out.push_back(item);
  return out;
}

// The characters a screen drew as the replacement mark (a glyph its font atlas lacked), in words ("" when none).
inline std::string glyph_problems(const json& layout) {
  std::ostringstream out;
  const json& fonts = layout.at("app").at("fonts");
  const std::string where = layout["app"]["stage"].get<std::string>();
  if (fonts.at("fallback_glyphs_drawn").get<int>() > 0)
    out << where << ": " << fonts["fallback_glyphs_drawn"].get<int>() << " glyph(s) drawn as the replacement mark; ";
  if (!fonts.at("missing").empty()) out << where << ": characters no font has: " << fonts["missing"].dump() << "; ";
  return out.str();
}

// What runs past the stage's room, in words ("" when nothing): its content's bottom and right edge, and each
// scrolled column's (a scroll bar would hide what a caption names).
inline std::string fit_problems(const json& layout) {
  std::ostringstream out;
  const json& panels = layout.at("panels");
  const std::string where = layout["app"]["stage"].get<std::string>();
  // Nothing past the stage: its content's bottom and right edge within its room (a scroll bar would hide it).
  if (num(panels, "stage_content_bottom") > num(panels, "stage_room_bottom") + 0.5f)
    out << where << ": the stage's content runs " << num(panels, "stage_content_bottom") - num(panels, "stage_room_bottom")
        << " px past its bottom; ";
  if (num(panels, "stage_content_right") > num(panels, "stage_room_right") + 0.5f)
    out << where << ": the stage's content runs " << num(panels, "stage_content_right") - num(panels, "stage_room_right") << " px past its right edge; ";
  for (const json& region : items_named(layout, "scroll_region"))
    if (num(region, "value") > 0.5f)
      out << where << ": the " << region["text"].get<std::string>() << " column runs " << num(region, "value")
          << " px past its bottom; ";
  return out.str();
}

// What is wrong with one layout, in words ("" when nothing): the checks every presented screen answers to.
inline std::string problems_of(const json& layout, bool want_main_map) {
  std::ostringstream out;
  out << glyph_problems(layout);
  const json& panels = layout.at("panels");
  const json& stage = panels.at("stage");
  const float font = num(panels, "font_size");
  const float sx0 = num(stage, "x0"), sy0 = num(stage, "y0"), sx1 = num(stage, "x1"), sy1 = num(stage, "y1");
  const float width = sx1 - sx0, height = sy1 - sy0;
  const std::string where = layout["app"]["stage"].get<std::string>();
  out << fit_problems(layout);
  // Labels at least half the body text (half a pixel of a fitted size's rounding allowed).
  for (const json& item : layout["items"]) {
    const std::string name = item["name"];
    const bool label = name.size() > 4 && (name.ends_with(".row") || name.ends_with(".col"));
    if (label && num(item, "value") < 0.5f * font - 0.5f)
      out << where << ": label '" << item["text"].get<std::string>() << "' of " << name << " at " << num(item, "value")
          << " px, under half the body text (" << font << "); ";
  }
  // A caption in its own band under the stage.
  for (const json& caption : items_named(layout, "caption"))
    if (num(caption, "y0") < sy1 - 0.5f) out << where << ": the caption overlaps the stage; ";
  // The main map: its cells (the heatmaps inside its rectangle, minimaps and thumbnails aside) with their row and
  // column labels meet the room on one side.
  const std::vector<json> main = items_named(layout, "main_map");
  const std::vector<json> lines = items_named(layout, "main_lines");
  if (want_main_map && main.empty() && lines.empty()) out << where << ": no main map; ";
  // The lines view (a head's attention as lines between two columns of words): the words at least half the body
  // text, the rows spread over the height below the heads' switches (or as far apart as the view draws them).
  for (const json& l : lines) {
    const float pitch = num(l, "value"), room = num(l, "y1") - num(l, "y0");
    const size_t rows = std::max(items_named(layout, "lines.query").size(), items_named(layout, "lines.key").size());
    if (rows * pitch < room - pitch && pitch < 2.6f * font - 0.5f)
      out << where << ": the lines' " << rows << " rows take " << rows * pitch << " of " << room << " px; ";
    for (const char* words : {"lines.query", "lines.key"})
      for (const json& w : items_named(layout, words))
        if (num(w, "y1") - num(w, "y0") < 0.5f * font - 0.5f)
          out << where << ": the word '" << w["text"].get<std::string>() << "' of the lines under half the body text; ";
  }
  for (const json& m : main) {
    float x0 = 1e9f, y0 = 1e9f, x1 = -1e9f, y1 = -1e9f;
    const auto take = [&](const json& r) {
      x0 = std::min(x0, num(r, "x0")), y0 = std::min(y0, num(r, "y0"));
      x1 = std::max(x1, num(r, "x1")), y1 = std::max(y1, num(r, "y1"));
    };
    bool cells = false;
    for (const json& h : layout["heatmaps"]) {
      const std::string name = h["name"];
      if (name.starts_with("minimap:") || name.starts_with("thumbnail_")) continue;
      // (2 px: a map's rectangle and the panel's record of it round apart)
      if (num(h, "x0") < num(m, "x0") - 2 || num(h, "x1") > num(m, "x1") + 2 || num(h, "y0") < num(m, "y0") - 2 ||
          num(h, "y1") > num(m, "y1") + 2)
        continue;
      cells = true;
      take(h);
      for (const json& label : layout["items"])
        if (label["name"] == name + ".row" || label["name"] == name + ".col") take(label);
    }
    if (!cells) {
      out << where << ": its main map holds no heatmap; ";
      continue;
    }
    if (y1 - y0 < 0.7f * height && x1 - x0 < 0.7f * width)
      out << where << ": the main map with its labels is " << x1 - x0 << " x " << y1 - y0 << " px in a stage of "
          << width << " x " << height << " (under 70% both ways); ";
  }
  return out.str();
}

}  // namespace sf::gui::testing
