#include "gui/app.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

#include "backend/backend.h"
#include "gui/panels/interventions_panel.h"
#include "gui/panels/output_panel.h"
#include "gui/panels/pipeline_map_panel.h"
#include "gui/panels/tokens_panel.h"
#include "gui/render/heatmap.h"
#include "gui/widgets.h"
#include "util/error.h"

namespace sf::gui {

App::App(const AppOptions& options, SettingsStore* settings)
    : settings_(settings), fallback_model_path_(options.fallback_model_path), ui_scale_(options.ui_scale),
      options_(options) {
  stage_from_name(options.stage, &stage_);
  select(stage_);
  if (!options.attention.empty()) {  // --attention KIND.L.H names the head, and its kind the attention stage
    try {
      const HeadRef h = parse_head_ref(options.attention);
      attention_ = {h.kind, h.layer, h.head};
      const bool attention_stage = stage_ == Stage::EncoderAttention || stage_ == Stage::DecoderAttention ||
                                   stage_ == Stage::CrossAttention;
      if (attention_stage)
        stage_ = h.kind == AttentionKind::Encoder ? Stage::EncoderAttention
                 : h.kind == AttentionKind::Decoder ? Stage::DecoderAttention : Stage::CrossAttention;
    } catch (const Error& e) {
      state_.error = e.what();
    }
  }
  state_.sentence = options.sentence.empty() ? kDefaultSentence : options.sentence;
  sentence_input_ = state_.sentence;
  open_model(options.model_path.empty() ? default_model_path() : options.model_path);  // in the background
}

void App::select(Stage stage) {
  stage_ = stage;
  show_model_info_ = false;
  switch (stage) {
    case Stage::EncoderQkv: case Stage::EncoderAttention: case Stage::EncoderConcat: case Stage::EncoderAddNorm:
    case Stage::EncoderFeedForward:
      attention_.kind = AttentionKind::Encoder;
      break;
    case Stage::DecoderAttention: case Stage::DecoderAddNorm: case Stage::DecoderFeedForward:
      attention_.kind = AttentionKind::Decoder;
      break;
    case Stage::CrossAttention: attention_.kind = AttentionKind::Cross; break;
    default: break;
  }
}

bool App::set_sentence(const std::string& text) {
  sentence_input_ = text;
  return state_.set_sentence(text);
}

bool App::go_to(const std::string& stage_name) {
  Stage stage;
  if (!stage_from_name(stage_name, &stage)) return false;
  select(stage);
  return true;
}

void App::select_head(const HeadRef& head) {
  attention_ = {head.kind, head.layer, head.head};
  show_model_info_ = false;
  stage_ = head.kind == AttentionKind::Encoder ? Stage::EncoderAttention
           : head.kind == AttentionKind::Decoder ? Stage::DecoderAttention : Stage::CrossAttention;
}

void App::select_layer(int layer) { attention_.layer = layer; }
void App::select_head_index(int head) { attention_.head = head; }

void App::handle_keys() {
  if (ImGui::GetIO().WantTextInput) return;
  if (ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;  // a dialog has the keys
  // Left/Right: stage; Up/Down: layer; 1-9: head (GLFW key codes: ImGui 1.86's ImGuiKey_* never fire here).
  const int stages = static_cast<int>(Stage::Count);
  const int s = static_cast<int>(stage_);
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) select(static_cast<Stage>((s + 1) % stages));
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT)) select(static_cast<Stage>((s + stages - 1) % stages));
  // Up goes up the stack of layers, as the figure reads bottom to top.
  const int layers = state_.model ? std::max(state_.model->config.n_encoder_layers, state_.model->config.n_decoder_layers) : 1;
  if (ImGui::IsKeyPressed(GLFW_KEY_UP)) attention_.layer = std::min(attention_.layer + 1, layers - 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_DOWN)) attention_.layer = std::max(attention_.layer - 1, 0);
  for (int k = 0; k < 9; ++k)
    if (ImGui::IsKeyPressed(GLFW_KEY_1 + k)) attention_.head = k;
  // Decoding token by token, from any stage: every view follows the new pass.
  if (ImGui::IsKeyPressed(GLFW_KEY_SPACE)) state_.step();
  if (ImGui::IsKeyPressed(GLFW_KEY_BACKSPACE)) state_.step_back();
  if (ImGui::IsKeyPressed(GLFW_KEY_END)) state_.run_to_end();
  if (ImGui::IsKeyPressed(GLFW_KEY_HOME)) state_.restart();
}

void App::draw_pipeline_map() {
  PipelineMapView view;
  view.current = stage_;
  view.layer = attention_.layer;
  view.config = state_.model ? &state_.model->config : nullptr;
  Stage clicked;
  if (sf::gui::draw_pipeline_map(view, &clicked)) select(clicked);
}

void App::frame() {
  heatmap_placements().clear();
  begin_token_hover_frame();
  poll_model_loader();
  handle_model_shortcuts();
  handle_keys();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("Stepformer", nullptr, flags);
  ImGui::Text("Stepformer %s", STEPFORMER_VERSION);
  draw_model_bar();  // the buttons before the model line: a long file name cannot push them off the window
  ImGui::SameLine();
  if (state_.model)
    ImGui::TextDisabled("  model: %s (%s, d_model %d, %d heads, %d+%d layers)", model_file_name().c_str(),
                        state_.model->family.c_str(), state_.model->config.d_model, state_.model->config.n_heads,
                        state_.model->config.n_encoder_layers, state_.model->config.n_decoder_layers);
  else
    ImGui::TextDisabled("  no model loaded");
  if (state_.model && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", state_.model_path.c_str());

  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
  if (ImGui::InputText("##sentence", &sentence_input_, ImGuiInputTextFlags_EnterReturnsTrue))
    state_.set_sentence(sentence_input_);
  ImGui::SameLine();
  if (ImGui::Button("Translate")) state_.set_sentence(sentence_input_);
  if (state_.ready()) {
    ImGui::Text("-> %s%s", state_.translation_text().c_str(),
                state_.decoding_finished() ? "" : "   ... (decoding: Space for the next token, End to finish)");
  }
  const std::string changed = interventions_summary(state_.interventions);
  if (!changed.empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.72f, 0.25f, 1.0f), "Changed model: %s", changed.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("reset all")) state_.set_interventions(Interventions{});
  }
  if (!state_.error.empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", state_.error.c_str());
  ImGui::Separator();

  ImGui::BeginChild("pipeline", ImVec2(ImGui::GetFontSize() * 17, 0), true);
  draw_pipeline_map();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("stage", ImVec2(0, 0), false);
  if (!draw_model_views()) switch (stage_) {
    case Stage::Tokens: draw_tokens_panel(state_); break;
    case Stage::Embedding: embedding_panel_.draw(state_); break;
    case Stage::Positional: positional_panel_.draw(state_); break;
    case Stage::EncoderAttention:
    case Stage::DecoderAttention:
    case Stage::CrossAttention: {
      Interventions edit = state_.interventions;
      if (attention_panel_.draw(state_, attention_, edit)) state_.set_interventions(edit);
      break;
    }
    case Stage::EncoderQkv: qkv_panel_.draw(state_, attention_); break;
    case Stage::EncoderConcat: concat_panel_.draw(state_, attention_); break;
    case Stage::EncoderAddNorm:
    case Stage::DecoderAddNorm:
      add_norm_panel_.draw(state_, attention_);
      break;
    case Stage::EncoderFeedForward:
    case Stage::DecoderFeedForward:
      feed_forward_panel_.draw(state_, attention_);
      break;
    case Stage::AllHeads:
      if (heads_grid_panel_.draw(state_, attention_))
        stage_ = attention_.kind == AttentionKind::Encoder ? Stage::EncoderAttention
                 : attention_.kind == AttentionKind::Decoder ? Stage::DecoderAttention : Stage::CrossAttention;
      break;
    case Stage::Output: {
      int token = -1;
      if (draw_output_panel(state_, output_position_, &token)) state_.force_token(output_position_, token);
      break;
    }
    case Stage::Decoding: decoding_panel_.draw(state_); break;
    case Stage::Interventions: {
      Interventions edit = state_.interventions;
      if (draw_interventions_panel(state_, edit)) state_.set_interventions(edit);
      break;
    }
    case Stage::Count: break;
  }
  ImGui::EndChild();
  draw_model_dialogs();
  ImGui::End();
  sync_settings();
}

}  // namespace sf::gui
