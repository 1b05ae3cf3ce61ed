// The app: its state and what one frame draws. The platform (window, GL, fonts) lives in window.h.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gui/app_state.h"
#include "gui/export.h"
#include "gui/model_loader.h"
#include "gui/options.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/output_panel.h"
#include "gui/panels/export_popup.h"
#include "gui/panels/message_dialog.h"
#include "gui/panels/model_info_panel.h"
#include "gui/panels/open_model_dialog.h"
#include "gui/panels/presentation.h"
#include "gui/panels/lessons_popup.h"
#include "gui/panels/view_popup.h"
#include "gui/render/capture.h"
#include "gui/settings.h"
#include "gui/stage_panels.h"
#include "gui/stages.h"
#include "gui/training.h"
#include "gui/view.h"

namespace sf::gui {

class App {
 public:
  // `settings` (may be null: --no-settings) receives the session as it changes; the caller writes it out.
  explicit App(const AppOptions& options, SettingsStore* settings = nullptr);
  void frame();  // builds the ImGui frame; call between Window::begin_frame and Window::end_frame
  const AppState& state() const { return state_; }
  Stage stage() const { return stage_; }
  const AttentionSelection& attention() const { return attention_; }  // the kind, layer and head on show
  int output_position() const { return output_position_; }  // the decoder position the output stage shows
  // Shows decoder position `position` on the output stage (clamped to the pass) until the next step or arrival.
  void set_output_position(int position) {
    output_position_ = position;
    output_followed_version_ = state_.version();
    output_followed_stage_ = Stage::Output;
  }

  // What the script runner, the keys and the widgets do (each false with state().error() set on bad input).
  bool open_model(const std::string& path);  // starts a background load; false only for an empty path
  bool set_sentence(const std::string& text);
  // False for an unknown stage (nothing changes), and for one the model on show lacks (the encoder's stages of a
  // decoder-only model): then its counterpart opens (stage_for_shape) and the state's error says why.
  bool go_to(const std::string& stage_name);
  // Whether the model on show has the stage (every stage before a model is there).
  bool has_stage(Stage stage) const;
  void select_head(const HeadRef& head);      // also opens the head's attention stage
  void select_layer(int layer);
  void select_head_index(int head);
  // The attention stages' view switch and cell expansion (also the script's `view` and `expand`).
  void set_attention_view(AttentionView view) { attention_panel().set_view(view); }
  // The output stage's view: the probabilities, or every layer's guess (the script's `output-view`).
  void set_output_view(OutputView view) { panels_.get<OutputPanel>().set_view(view); }
  void set_why_method(AttributionMethod method) { panels_.get<OutputPanel>().set_why_method(method); }
  void set_why_part(WhyPart part) { panels_.get<OutputPanel>().set_why_part(part); }
  void expand_attention_cell(int row, int col) { attention_panel().expand(row, col); }
  void collapse_attention_cell() { attention_panel().collapse(); }
  const std::optional<AttentionCell>& expanded_attention_cell() { return attention_panel().expanded_cell(); }
  // Zooms the attention map (1: the whole map) with cell (row, col) in view (the script's `zoom`).
  void zoom_attention(float zoom, int row, int col) { attention_panel().map().set_zoom(zoom, row, col); }
  // Interventions and decoding (also the script's commands).
  bool set_interventions(const Interventions& next) { return state_.set_interventions(next); }
  AppState& mutable_state() { return state_; }
  // Live training and the training timeline (the Training stage; the script's train, snapshot, wait-train).
  Training& training() { return training_; }
  const Training& training() const { return training_; }
  const std::string& training_data_dir() const { return training_data_dir_; }

  // [SECTION] presentation, view, lessons, export
  // The wanted look (main applies it between frames with a ViewApplier): F5, F11, the View popup, scripts.
  const ViewSettings& view() const { return view_; }
  ViewSettings& view() { return view_; }
  // The lesson's caption over the bottom of the stage area ("" hides it).
  void set_caption(const std::string& text) { caption_ = text; }
  const std::string& caption() const { return caption_; }
  // A lesson tells where it stands; while it waits at a pause, Space/Right/PageDown and Left/PageUp (and the
  // prompt's buttons) are its keys rather than the stage's: take_lesson_step() returns +1, -1 or 0, once.
  void set_lesson_status(const LessonStatus& status) { lesson_ = status; }
  int take_lesson_step() { return std::exchange(lesson_step_, 0); }
  // Queues an export of what the next frame draws (CSV/NPY during the frame, PNG in after_render()).
  void request_export(const ExportRequest& request);
  // A PNG export is coming: main hides the pointer for these frames, so that no tooltip or hover highlight
  // (which lags a frame) ends up in the picture.
  bool capturing() const;
  bool exports_pending() const { return !queued_exports_.empty() || !frame_exports_.empty(); }
  // After Window::end_frame, before present: PNG exports read the back buffer.
  void after_render();
  // What happened since the last call (exports saved or refused), for the console; each also shows in the UI.
  struct Message {
    bool ok = true;
    std::string text;
  };
  std::vector<Message> take_messages() { return std::exchange(messages_, {}); }
  // Where the last frame put things, in framebuffer pixels (the panel export's crop, the layout dump).
  struct FrameLayout {
    PixelRect stage;     // the stage panel
    PixelRect pipeline;  // the pipeline map; zero-sized when hidden (presentation mode)
    float font_size = 0; // the body text's pixel size
    float stage_content_right = 0, stage_room_right = 0;  // the stage panel's widgets' right edge, and its room's
    float stage_content_bottom = 0, stage_room_bottom = 0;  // their bottom edge, and the room's (past it: scrolled)
  };
  const FrameLayout& frame_layout() const { return layout_; }
  // [SECTION] model files (app_model.cpp). A load runs in the background; when it is done, the next frame
  // swaps the model in, or shows the error dialog and keeps the current one.
  void open_dropped(const std::vector<std::string>& paths);  // files dropped onto the window: the first opens
  bool loading() const { return loader_.busy(); }
  void finish_loading();                     // blocks until a load in progress is swapped in (tests)
  const std::string& last_load_error() const { return last_load_error_; }  // "" after a load that worked
  const MessageDialog& dialog() const { return dialog_; }
  void show_message(DialogMessage message) { dialog_.show(std::move(message)); }
  // A lesson picked in the Lessons popup, once: the main loop starts it (in place of a script or lesson running).
  std::optional<std::string> take_lesson_request() { return std::exchange(lesson_request_, std::nullopt); }
  // How an export is written: the request's replace and folder, never onto the open model (io/user_files.h).
  WriteRules export_rules(const ExportRequest& r) const;
  bool showing_model_info() const { return show_model_info_; }
  // "model-info", "open-model" or "stage" (back to the stage, closing dialogs); false for another name.
  bool show(const std::string& view);
  // A text size the user picked (A-/A+, Ctrl+-/Ctrl+=, clamped to the View popup's range).
  void set_text_scale(float scale);

 private:
  void note_text_on_screen() const;  // for the font atlas (gui/text/glyphs.h)
  void draw_view_and_export_buttons();
  void draw_presentation_header();
  std::string stage_detail() const;   // "layer L, head H" where the stage has them
  void export_tensors();              // this frame's CSV/NPY requests
  void report_export(const ExportRequest& request, const std::string& error);
  void handle_keys();
  void poll_model_loader();     // app_model.cpp
  void adopt(LoadedModel loaded);
  void draw_model_bar();
  bool draw_model_views();      // model info or the loading placeholder instead of the stage; true if drawn
  void draw_model_dialogs();
  void draw_loading_toast();
  void handle_model_shortcuts();
  void sync_settings();
  std::string model_file_name() const;  // the top bar shows the file's name; its full path on hover
  void draw_pipeline_map();
  void draw_stage();                  // the stage's panel, by the stage table, and what it asks
  void apply(const PanelAsk& ask);    // what a panel asked for, through the state's setters
  void select(Stage stage);
  AttentionPanel& attention_panel() { return panels_.get<AttentionPanel>(); }
  // Model files, dialogs, settings (app_model.cpp).
  SettingsStore* settings_ = nullptr;
  ModelLoader loader_;
  std::string fallback_model_path_;     // opened once if the first model fails (the last session's is gone bad)
  std::string last_load_error_;
  std::vector<std::string> model_warnings_;
  bool show_model_info_ = false;
  ModelInfoPanel model_info_panel_;
  OpenModelDialog open_dialog_;
  MessageDialog dialog_;
  AppOptions options_;
  AppState state_;
  std::string sentence_input_;
  // What the last frame showed: a training run's weights swapped in (gui/training.h) may bring another shape and
  // sentence (a GPT run over a translator continues a prompt); follow_shown_model() makes the views follow.
  std::string shown_sentence_;
  std::optional<ModelStacks> shown_stacks_;
  Stage stage_ = Stage::Tokens;
  AttentionSelection attention_;
  bool attention_option_checked_ = false;  // --attention compared with the first model loaded
  void check_attention_option();
  // The stage on show, moved to its counterpart where a new model lacks it; the --stage of the command line is
  // compared with the first model loaded, and a stage it lacks said in a dialog.
  bool stage_option_checked_ = false;
  void fit_stage_to_model();
  void follow_shown_model();
  int output_position_ = 0;
  int output_followed_version_ = -1;       // the state's version the output position last followed
  Stage output_followed_stage_ = Stage::Tokens;  // the stage drawn last frame (arriving at Output follows too)

  StagePanels panels_;  // one per panel class, drawn by the stage table
  Training training_;
  std::string training_data_dir_;
  ViewSettings view_;
  ViewPopup view_popup_;
  LessonsPopup lessons_popup_;
  std::optional<std::string> lesson_request_;
  Language start_language_ = Language::English;  // the locale's or --language's: the settings keep another one
  bool language_chosen_ = false;                 // --language, the last session, or changed since (saved)
  ExportPopup export_popup_;
  std::string caption_;
  LessonStatus lesson_;
  int lesson_step_ = 0;
  struct QueuedExport {
    ExportRequest request;
    int frames_to_wait = 0;  // PNG: one frame without the pointer first
  };
  std::vector<QueuedExport> queued_exports_;
  std::vector<ExportRequest> frame_exports_;                   // being done this frame
  std::vector<std::string> frame_tensors_;                     // heatmaps the panel drew last frame, in order
  std::vector<Message> messages_;
  Message export_status_;                                      // the last export's outcome, shown in the UI
  FrameLayout layout_;
};

}  // namespace sf::gui
