#include "gui/app.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <cstdio>

#include "backend/backend.h"
#include "gui/panels/tokens_panel.h"
#include "gui/render/heatmap.h"
#include "util/error.h"

namespace sf::gui {

App::App(const AppOptions& options) : options_(options) {
  stage_ = options.stage == "attention" ? Stage::Attention : options.stage == "positional" ? Stage::Positional : Stage::Tokens;
  try {
    const HeadRef h = parse_head_ref(options.attention);
    attention_ = {h.kind, h.layer, h.head};
  } catch (const Error& e) {
    state_.error = e.what();
  }
  state_.sentence = options.sentence.empty() ? kDefaultSentence : options.sentence;
  sentence_input_ = state_.sentence;
  const std::string path = options.model_path.empty() ? default_model_path() : options.model_path;
  if (!state_.load_model(path))
    std::fprintf(stderr, "stepformer: cannot open the model '%s': %s\n", path.c_str(), state_.error.c_str());
}

void App::handle_keys() {
  if (ImGui::GetIO().WantTextInput) return;
  // Left/Right: stage; Up/Down: layer; 1-9: head (GLFW key codes: ImGui 1.86's ImGuiKey_* never fire here).
  const int stages = 3;
  int s = static_cast<int>(stage_);
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) s = (s + 1) % stages;
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT)) s = (s + stages - 1) % stages;
  if (s != static_cast<int>(stage_)) {
    stage_ = static_cast<Stage>(s);
    stage_from_options_ = true;  // select the tab
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_UP)) --attention_.layer;
  if (ImGui::IsKeyPressed(GLFW_KEY_DOWN)) ++attention_.layer;
  for (int k = 0; k < 9; ++k)
    if (ImGui::IsKeyPressed(GLFW_KEY_1 + k)) attention_.head = k;
}

void App::frame() {
  heatmap_placements().clear();
  handle_keys();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("Stepformer", nullptr, flags);
  ImGui::Text("Stepformer %s", STEPFORMER_VERSION);
  ImGui::SameLine();
  if (state_.model)
    ImGui::TextDisabled("  model: %s (%s, d_model %d, %d heads, %d+%d layers)", state_.model_path.c_str(),
                        state_.model->family.c_str(), state_.model->config.d_model, state_.model->config.n_heads,
                        state_.model->config.n_encoder_layers, state_.model->config.n_decoder_layers);
  else
    ImGui::TextDisabled("  no model loaded");

  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
  if (ImGui::InputText("##sentence", &sentence_input_, ImGuiInputTextFlags_EnterReturnsTrue))
    state_.set_sentence(sentence_input_);
  ImGui::SameLine();
  if (ImGui::Button("Translate")) state_.set_sentence(sentence_input_);
  if (state_.ready()) ImGui::Text("-> %s", state_.translation_text().c_str());
  if (!state_.error.empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", state_.error.c_str());
  ImGui::Separator();

  if (ImGui::BeginTabBar("stages")) {
    const char* names[] = {"Tokens", "Positional encoding", "Attention"};
    for (int s = 0; s < 3; ++s) {
      const ImGuiTabItemFlags tab_flags =
          stage_from_options_ && s == static_cast<int>(stage_) ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(names[s], nullptr, tab_flags)) {
        if (!stage_from_options_) stage_ = static_cast<Stage>(s);
        switch (static_cast<Stage>(s)) {
          case Stage::Tokens: draw_tokens_panel(state_); break;
          case Stage::Positional:
            positional_panel_.draw(state_.model ? state_.model->config.d_model : 256, 64);
            break;
          case Stage::Attention: attention_panel_.draw(state_, attention_); break;
        }
        ImGui::EndTabItem();
      }
    }
    stage_from_options_ = false;
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace sf::gui
