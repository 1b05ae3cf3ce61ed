// The app headless on its output stage in one of its views (the logit lens, "Why this word?"): the fixture of
// the tests of the views that compute off the frame thread (test_logit_lens_view.cpp, test_why_view.cpp).
#pragma once
#include <gtest/gtest.h>

#include <imgui.h>

#include <map>
#include <memory>
#include <string>

#include "gui/app.h"
#include "gui/render/item_placements.h"
#include "headless_imgui.h"

namespace sf::gui::testing {

class OutputStageApp : public ::testing::Test {
 protected:
  void start(const std::string& model, const std::string& sentence, OutputView view) {
    start_headless_imgui(true, ImVec2(1600, 1000));
    AppOptions options;
    options.model_path = model;
    options.sentence = sentence;
    options.stage = "output";
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
    app_->set_output_view(view);
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  void frame(ImVec2 mouse = ImVec2(-1, -1), bool down = false) {
    ImGui::GetIO().MouseDown[0] = down;
    headless_frame(*app_, -1, mouse);
  }
  // A click (down, up) at the middle of an item drawn last frame.
  void click(const ItemPlacement& item) {
    const ImVec2 at((item.min.x + item.max.x) / 2, (item.min.y + item.max.y) / 2);
    frame(at, false);
    frame(at, true);
    frame(at, false);
    frame();
  }
  // The items drawn last frame under `name`, by index.
  static std::map<int, ItemPlacement> named(const std::string& name) {
    std::map<int, ItemPlacement> out;
    for (const ItemPlacement& p : item_placements())
      if (p.name == name) out[p.index] = p;
    return out;
  }
  std::unique_ptr<App> app_;
};

}  // namespace sf::gui::testing
