// The App's model files and session: background loading (gui/model_loader.h) polled once per frame, the top
// bar's "Open model..." / "Model info" / text-size buttons, the open and error dialogs, files dropped onto the
// window, and the settings of the session (gui/settings.h).
//
// [SECTION] opening files
// [SECTION] the top bar and the views
// [SECTION] dialogs, shortcuts, settings
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "gui/app.h"
#include "gui/text/text.h"
#include "gui/widgets.h"
#include "util/printable.h"

namespace sf::gui {

namespace fs = std::filesystem;

namespace {

// What an error kind means for someone who just picked a file.
const char* error_hint(const std::optional<ErrorKind>& kind) {
  if (!kind) return "";
  switch (*kind) {
    case ErrorKind::File: return tr(T::open_error_hint_file);
    case ErrorKind::Format: return tr(T::open_error_hint_format);
    case ErrorKind::Shape: return tr(T::open_error_hint_shape);
    case ErrorKind::Missing: return tr(T::open_error_hint_missing);
    case ErrorKind::Value: return tr(T::open_error_hint_value);
    case ErrorKind::Config: return tr(T::open_error_hint_config);
    case ErrorKind::Unsupported: return tr(T::open_error_hint_unsupported);
    case ErrorKind::Input: return tr(T::open_error_hint_input);
  }
  return "";
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

constexpr float kUiScaleStep = 0.25f;

}  // namespace

// [SECTION] opening files

bool App::open_model(const std::string& path) {
  if (path.empty()) return false;
  loader_.start(path);
  return true;
}

void App::open_dropped(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  open_model(paths.front());
  if (paths.size() > 1)
    std::fprintf(stderr, "stepformer: %zu files dropped; opening the first, '%s'\n", paths.size(), printable(paths.front()).c_str());
}

void App::finish_loading() {
  if (auto loaded = loader_.wait()) adopt(std::move(*loaded));
}

void App::poll_model_loader() {
  if (auto loaded = loader_.poll()) adopt(std::move(*loaded));
}

void App::adopt(LoadedModel loaded) {
  const std::string kept = state_.model() ? fs::path(state_.model_path()).filename().string() : "";
  std::optional<ErrorKind> kind = loaded.error_kind;
  // "" when the model is in as asked; a core error in the user's words (the app's one error boundary)
  std::string problem = loaded.core_error ? error_text(*loaded.core_error) : loaded.error;
  if (loaded.model && !state_.use_model(loaded.model, loaded.path)) {
    // The file is fine; the sentence (or the interventions) do not fit the model.
    kind = ErrorKind::Input;
    problem = state_.model() ? tr(T::open_kept_previous, {{"reason", state_.error()}}) : state_.error();
    if (!state_.model() && state_.sentence() != kDefaultSentence) {
      // Nothing to keep, and without a model the sentence cannot be changed: the model with the example.
      const std::string reason = state_.error();
      sentence_input_ = kDefaultSentence;
      state_.keep_sentence(sentence_input_);
      if (state_.use_model(loaded.model, loaded.path)) {
        dialog_.show({tr(T::open_sentence_does_not_fit), loaded.path, reason, tr(T::open_sentence_does_not_fit_hint)});
        problem.clear();
      }
    }
  }
  if (state_.model() && state_.model() == loaded.model) {
    training_.set_file_model(loaded.model, loaded.path);  // and the timeline beside it, if there is one
    fit_stage_to_model();
    check_attention_option();
    last_load_error_.clear();
    model_warnings_ = std::move(loaded.warnings);
    fallback_model_path_.clear();
    if (settings_) {
      Settings s = settings_->settings();
      add_recent_model(s, absolute_path(loaded.path));
      settings_->update(s);
    }
    return;
  }
  last_load_error_ = problem.empty() ? std::string(tr(T::open_cannot_open)) : problem;
  std::fprintf(stderr, "stepformer: cannot open the model '%s': %s\n", printable(loaded.path).c_str(),
               printable(last_load_error_).c_str());
  if (!state_.model()) state_.set_error(last_load_error_);  // the line under the sentence says why nothing shows
  const std::string what_now = state_.model()                    ? tr(T::open_current_stays, {{"model", kept}})
                               : !fallback_model_path_.empty() ? std::string(tr(T::open_shipped_instead))
                                                               : std::string(tr(T::open_none_loaded));
  const std::string meaning = error_hint(kind);
  const std::string hint =
      meaning.empty() ? what_now : tr(T::open_hint, {{"meaning", meaning}, {"what_now", what_now}});
  dialog_.show({tr(T::open_cannot_open_title), loaded.path, last_load_error_, hint});
  if (!state_.model() && !fallback_model_path_.empty()) {
    open_model(fallback_model_path_);  // the last session's model went bad: the shipped one, once
    fallback_model_path_.clear();
  }
}

void App::fit_stage_to_model() {
  const ModelStacks stacks = state_.model()->config.stacks;
  const bool asked = !stage_option_checked_ && (!options_.stage.empty() || !options_.attention.empty());
  stage_option_checked_ = true;
  if (stage_in_shape(stage_, stacks)) return;
  const Stage missing = stage_;
  select(stage_for_shape(stage_, stacks));
  // Asked for on the command line: said in a dialog (never a silent change of what was asked for); a stage on show
  // when another model opens moves to its counterpart quietly.
  if (asked) dialog_.show({tr(T::shape_stage_missing_title), "", stage_missing_text(missing, stacks), ""});
}

// --attention KIND.L.H names a head before any model is loaded: the first model that loads says whether it has
// it. A head past the model's layers or heads is shown as the nearest one the model has, and a dialog says so:
// never a silent change of what was asked for.
void App::check_attention_option() {
  if (attention_option_checked_ || options_.attention.empty() || !state_.model()) return;
  attention_option_checked_ = true;
  const Config& c = state_.model()->config;
  if (!c.has_encoder() || (attention_.kind == AttentionKind::Cross && !c.has_cross_attention()))
    attention_.kind = AttentionKind::Decoder;  // (a kind the model lacks: fit_stage_to_model said so)
  const int layers = attention_.kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  if (attention_.layer < layers && attention_.head < c.n_heads) return;
  const AttentionSelection asked = attention_;
  attention_.layer = std::min(attention_.layer, layers - 1);
  attention_.head = std::min(attention_.head, c.n_heads - 1);
  dialog_.show(
      {tr(T::open_no_such_head), "",
       tr(T::open_no_such_head_problem, {{"option", options_.attention},
                                         {"layer", shown_number(asked.layer)},
                                         {"head", shown_number(asked.head)},
                                         {"layers", layers},
                                         {"heads", c.n_heads}}),
       tr(T::open_no_such_head_hint, {{"head", head_ref_text({asked.kind, attention_.layer, attention_.head})}})});
}

// [SECTION] the top bar and the views

std::string App::model_file_name() const { return fs::path(state_.model_path()).filename().string(); }

// The top bar's buttons, after the app's name: Open model..., Model info, A- A+.
void App::draw_model_bar() {
  const float em = ImGui::GetFontSize();
  ImGui::SameLine();
  if (ImGui::Button(tr(T::app_open_model))) open_dialog_.show(state_.model_path());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::app_open_model_tip));
  ImGui::SameLine();
  const bool info = show_model_info_;
  if (info) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
  if (ImGui::Button(tr(T::app_model_info))) show_model_info_ = !show_model_info_;
  if (info) ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::app_model_info_tip));
  ImGui::SameLine();
  if (ImGui::Button("A-")) set_text_scale(view_.ui_scale - kUiScaleStep);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", tr(T::app_smaller_text, {{"percent", number_text("%.0f", view_.ui_scale * 100)}}).c_str());
  ImGui::SameLine(0, em * 0.2f);
  if (ImGui::Button("A+")) set_text_scale(view_.ui_scale + kUiScaleStep);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", tr(T::app_larger_text, {{"percent", number_text("%.0f", view_.ui_scale * 100)}}).c_str());
}

// While a file loads over a model that stays usable: a box at the bottom of the window, above the panels,
// with a spinner, the file's name, the time so far and a moving bar. It takes no input and moves nothing.
void App::draw_loading_toast() {
  if (!loader_.busy() || !state_.model()) return;  // without a model the stage area shows it (draw_model_views)
  const float em = ImGui::GetFontSize();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f,
                                 viewport->WorkPos.y + viewport->WorkSize.y - em),
                          ImGuiCond_Always, ImVec2(0.5f, 1.0f));
  ImGui::SetNextWindowBgAlpha(0.95f);
  ImGui::PushStyleColor(ImGuiCol_Border, ImVec4(1.0f, 0.8f, 0.35f, 0.8f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 2.0f);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                 ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoInputs;
  if (ImGui::Begin("##loading", nullptr, flags)) {
    spinner(em * 0.9f);
    ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::TextUnformatted(tr(T::app_loading, {{"file", fs::path(loader_.path()).filename().string()},
                                               {"seconds", number_text("%.1f", loader_.elapsed_seconds())}})
                               .c_str());
    ImGui::TextDisabled("%s", tr(T::app_loading_note));
    ImGui::EndGroup();
    moving_bar(ImVec2(em * 22, em * 0.35f));
  }
  ImGui::End();
  ImGui::PopStyleVar();
  ImGui::PopStyleColor();
}

bool App::draw_model_views() {
  if (show_model_info_) {
    model_info_panel_.draw(state_, model_warnings_, training_.weights_note(state_));
    return true;
  }
  if (state_.model()) return false;
  // No model yet (the first load runs, or none could be opened): a placeholder instead of empty panels.
  const float em = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + avail.x * 0.5f - em * 10, ImGui::GetCursorPosY() + avail.y * 0.4f));
  ImGui::BeginGroup();
  if (loader_.busy()) {
    spinner(em * 1.2f);
    ImGui::SameLine();
    ImGui::TextUnformatted(tr(T::app_loading, {{"file", fs::path(loader_.path()).filename().string()},
                                               {"seconds", number_text("%.1f", loader_.elapsed_seconds())}})
                               .c_str());
    moving_bar(ImVec2(em * 20, em * 0.35f));
  } else {
    ImGui::TextUnformatted(tr(T::app_no_model));
    if (ImGui::Button(tr(T::app_open_model))) open_dialog_.show("");
  }
  ImGui::EndGroup();
  return true;
}

// [SECTION] dialogs, shortcuts, settings

bool App::show(const std::string& view) {
  if (view == "model-info") {
    show_model_info_ = true;
  } else if (view == "open-model") {
    open_dialog_.show(state_.model_path());
  } else if (view == "stage") {
    show_model_info_ = false;
    open_dialog_.close();
    dialog_.close();
  } else {
    return false;
  }
  return true;
}

void App::draw_model_dialogs() {
  draw_loading_toast();
  if (settings_) {
    const std::string problem = settings_->take_problem();
    if (!problem.empty())
      dialog_.show({tr(T::settings_dialog_title), "", problem, ""});  // the message says what happens now
  }
  if (dialog_.draw()) return;  // one modal at a time: the open dialog waits under a message
  const std::vector<std::string> no_recent;
  const OpenModelChoice choice =
      open_dialog_.draw(settings_ ? settings_->settings().recent_models : no_recent, fs::path(default_model_path()).parent_path().string());
  if (choice.remove && settings_) {
    Settings s = settings_->settings();
    remove_recent_model(s, *choice.remove);
    settings_->update(s);
  }
  if (choice.open) open_model(*choice.open);
}

void App::handle_model_shortcuts() {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.KeyCtrl) return;
  if (ImGui::IsKeyPressed(GLFW_KEY_O, false)) open_dialog_.show(state_.model_path());
  if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD, false))
    set_text_scale(view_.ui_scale + kUiScaleStep);
  if (ImGui::IsKeyPressed(GLFW_KEY_MINUS, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT, false))
    set_text_scale(view_.ui_scale - kUiScaleStep);
  if (ImGui::IsKeyPressed(GLFW_KEY_0, false)) set_text_scale(1.0f);
}

// The View popup's slider, --ui-scale and these buttons all set view_.ui_scale; main's ViewApplier re-renders
// the fonts at the new size between frames.
void App::set_text_scale(float scale) { view_.ui_scale = std::clamp(scale, kMinUiScale, kMaxUiScale); }

void App::sync_settings() {
  if (!settings_) return;
  Settings s = settings_->settings();
  if (state_.model()) s.last_model = absolute_path(state_.model_path());
  if (!state_.sentence().empty()) s.last_sentence = state_.sentence();
  s.last_stage = stage_name(stage_);
  s.ui_scale = view_.ui_scale;
  if (view_.language != start_language_) language_chosen_ = true;
  if (language_chosen_) s.language = language_code(view_.language);
  settings_->update(s);
  settings_->save_if_due();
}

}  // namespace sf::gui
