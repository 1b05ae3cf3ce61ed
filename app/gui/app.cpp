#include "gui/app.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // GetCurrentWindow: how far right a panel laid out (layout dump)
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "backend/backend.h"
#include "gui/key_latch.h"
#include "gui/panels/interventions_panel.h"
#include "gui/panels/output_panel.h"
#include "gui/panels/pipeline_map_panel.h"
#include "gui/panels/tokens_panel.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "gui/text/glyphs.h"
#include "gui/text/text.h"
#include "gui/widgets.h"
#include "gui/words.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/paths.h"
#include "util/printable.h"
#if defined(__EMSCRIPTEN__)
#include "web/browser.h"
#endif

namespace sf::gui {

App::App(const AppOptions& options, SettingsStore* settings)
    : settings_(settings), fallback_model_path_(options.fallback_model_path),
      options_(options) {
  stage_from_name(options.stage, &stage_);
  select(stage_);
  if (!options.attention.empty()) {  // --attention KIND.L.H names the head, and its kind the attention stage
    try {
      const HeadRef h = parse_head_ref(options.attention);
      attention_ = {h.kind, h.layer, h.head};
      if (stage_info(stage_).attention_map) stage_ = attention_stage(h.kind);
    } catch (const Error& e) {
      state_.set_error(error_text(e));
    }
  }
  state_.keep_sentence(options.sentence.empty() ? kDefaultSentence : options.sentence);
  sentence_input_ = state_.sentence();
  training_data_dir_ = options.data_dir.empty() ? multi30k_data_dir() : options.data_dir;
  const DeviceRequest device = parse_device(options.device);  // checked by the option parser
  training_.set_device(device);
  state_.set_device(std::make_shared<ViewDevice>(device));
  view_.ui_scale = options.ui_scale;
  view_.present = options.present;
  view_.fullscreen = options.fullscreen;
  // The app's words: --language or the last session's, else the system's. Without a font for it, English (the
  // view says why once on stderr; asked for on the command line, a dialog says it too).
  Language language = system_language();
  language_chosen_ = !options.language.empty() && language_from_code(options.language, &language);
  view_.language = start_language_ = language;
  set_language(drawable_language(language));
  if (options.language_given && drawable_language(language) != language)
    show_message({tr(T::view_popup_language), "", tr(T::fonts_cjk_missing), ""});
  open_model(options.model_path.empty() ? default_model_path() : options.model_path);  // in the background
}

namespace {
// A stage's own tensors; not the pictures of other stages (the tokens stage's thumbnails) nor a zoomed map's
// minimap.
bool exportable(const std::string& heatmap_name) {
  return heatmap_name.rfind("minimap:", 0) != 0 && heatmap_name.rfind("thumbnail_", 0) != 0;
}
}  // namespace

void App::select(Stage stage) {
  stage_ = stage;
  show_model_info_ = false;
  if (stage == Stage::Training) training_.want_shipped_timeline();  // the classroom run, when no other
  if (const std::optional<AttentionKind> kind = stage_info(stage).layer_of) attention_.kind = *kind;
}

void App::follow_shown_model() {
  // The sentence field shows the sentence on show when the state changed it (a GPT's prompt in place of the German
  // sentence, and back); what the user is typing stays until the state changes its sentence.
  if (state_.sentence() != shown_sentence_) sentence_input_ = shown_sentence_ = state_.sentence();
  if (!state_.model()) return;
  const Config& c = state_.model()->config;
  if (shown_stacks_ == c.stacks) return;
  const bool first = !shown_stacks_;
  shown_stacks_ = c.stacks;
  if (first) return;  // the first model: adopt() fitted the stage (and said what it changed)
  // Another shape on show: the stage on show moves to its counterpart quietly, as when a model file opens.
  if (!stage_in_shape(stage_, c.stacks)) select(stage_for_shape(stage_, c.stacks));
  if ((attention_.kind == AttentionKind::Cross && !c.has_cross_attention()) ||
      (attention_.kind == AttentionKind::Encoder && !c.has_encoder()))
    attention_.kind = AttentionKind::Decoder;
}

bool App::set_sentence(const std::string& text) {
  sentence_input_ = text;
  return state_.set_sentence(text);
}

bool App::go_to(const std::string& stage_name) {
  Stage stage;
  if (!stage_from_name(stage_name, &stage)) return false;
  if (!has_stage(stage)) {  // (a lesson for a translator played on GPT: the counterpart, and why)
    state_.set_error(stage_missing_text(stage, state_.model()->config.stacks));
    select(stage_for_shape(stage, state_.model()->config.stacks));
    return false;
  }
  select(stage);
  return true;
}

bool App::has_stage(Stage stage) const {
  return !state_.model() || stage_in_shape(stage, state_.model()->config.stacks);
}

void App::select_head(const HeadRef& head) {
  if (!has_stage(attention_stage(head.kind))) {  // a decoder-only model's encoder or cross-attention head
    state_.set_error(stage_missing_text(attention_stage(head.kind), state_.model()->config.stacks));
    return;
  }
  attention_ = {head.kind, head.layer, head.head};
  show_model_info_ = false;
  stage_ = attention_stage(head.kind);
}

void App::select_layer(int layer) { attention_.layer = layer; }
void App::select_head_index(int head) { attention_.head = head; }

void App::handle_keys() {
  // F5: presentation mode; F11: full screen; Esc leaves both (when no popup is open).
  if (key_pressed(GLFW_KEY_F5, false)) view_.present = !view_.present;
  if (key_pressed(GLFW_KEY_F11, false)) view_.fullscreen = !view_.fullscreen;
  if (key_pressed(GLFW_KEY_ESCAPE, false) && (view_.present || view_.fullscreen) &&
      !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId))
    view_.present = view_.fullscreen = false;
  if (ImGui::GetIO().WantTextInput) return;
  if (ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;  // a dialog has the keys
  // A lesson waiting at a pause owns Space, Right, PageDown (next) and Left, PageUp (back).
  if (lesson_.active && lesson_.waiting) {
    if (key_pressed(GLFW_KEY_SPACE, false) || key_pressed(GLFW_KEY_RIGHT, false) ||
        key_pressed(GLFW_KEY_PAGE_DOWN, false))
      lesson_step_ = +1;
    if (key_pressed(GLFW_KEY_LEFT, false) || key_pressed(GLFW_KEY_PAGE_UP, false)) lesson_step_ = -1;
  }
  const bool stage_keys = !(lesson_.active && lesson_.waiting);
  // Left/Right: stage; Up/Down: layer; 1-9: head 1-9 (layers and heads are numbered from 1, as on every label) (GLFW key codes: ImGui 1.86's ImGuiKey_* never fire here).
  // key_pressed also sees taps shorter than a frame (gui/key_latch.h).
  // (the stages of the model's shape: a decoder-only model's Right goes from the tokens past no encoder)
  const std::vector<Stage> order =
      stages_of_shape(state_.model() ? state_.model()->config.stacks : ModelStacks::EncoderDecoder);
  const int stages = static_cast<int>(order.size());
  const int s = static_cast<int>(std::find(order.begin(), order.end(), stage_) - order.begin());
  // PageDown/PageUp too: what a presenter's clicker sends.
  if (stage_keys && (key_pressed(GLFW_KEY_RIGHT) || key_pressed(GLFW_KEY_PAGE_DOWN)))
    select(order[static_cast<size_t>((s + 1) % stages)]);
  if (stage_keys && (key_pressed(GLFW_KEY_LEFT) || key_pressed(GLFW_KEY_PAGE_UP)))
    select(order[static_cast<size_t>((std::min(s, stages) + stages - 1) % stages)]);
  // Up goes up the stack of layers, as the figure reads bottom to top.
  const int layers = state_.model() ? std::max(state_.model()->config.n_encoder_layers, state_.model()->config.n_decoder_layers) : 1;
  if (key_pressed(GLFW_KEY_UP)) attention_.layer = std::min(attention_.layer + 1, layers - 1);
  if (key_pressed(GLFW_KEY_DOWN)) attention_.layer = std::max(attention_.layer - 1, 0);
  const int heads = state_.model() ? state_.model()->config.n_heads : 9;
  for (int k = 0; k < std::min(9, heads); ++k)  // a key past the model's heads does nothing
    if (key_pressed(GLFW_KEY_1 + k)) attention_.head = k;
  // Decoding token by token, from any stage: every view follows the new pass (Space is the lesson's while
  // it waits at a pause).
  if (stage_keys && key_pressed(GLFW_KEY_SPACE)) state_.step();
  if (key_pressed(GLFW_KEY_BACKSPACE)) state_.step_back();
  if (key_pressed(GLFW_KEY_END)) state_.run_to_end();
  if (key_pressed(GLFW_KEY_HOME)) state_.restart();
  if (key_pressed(GLFW_KEY_T, false) && has_stage(Stage::Training)) select(Stage::Training);
}

void App::draw_pipeline_map() {
  PipelineMapView view;
  view.current = stage_;
  view.layer = attention_.layer;
  view.config = state_.model() ? &state_.model()->config : nullptr;
  Stage clicked;
  if (sf::gui::draw_pipeline_map(view, &clicked)) select(clicked);
}

void App::draw_stage() {
  // The output stage follows the decoding: on arriving and after every step it shows the last row, the
  // distribution the newest token came from (or, while decoding, the next token's); the slider then moves freely
  // until the next step.
  // (an encoder-only model decodes nothing: its position stays where the user, or a click that masked it, put it)
  if (stage_ == Stage::Output && !state_.encoder_only() &&
      (output_followed_version_ != state_.version() || output_followed_stage_ != stage_)) {
    output_position_ = std::max(0, static_cast<int>(state_.trace().tgt.ids.size()) - 1);
    output_followed_version_ = state_.version();
  }
  const PanelContext context{state_, stage_, attention_, view_.present, output_position_, training_,
                             training_data_dir_};
  apply(panels_.for_stage(stage_).draw(context));
}

void App::apply(const PanelAsk& ask) {
  if (ask.select) attention_ = *ask.select;
  if (ask.open_stage && has_stage(*ask.open_stage)) select(*ask.open_stage);  // (a head clicked in the grid: its kind's attention stage)
  if (ask.output_position) output_position_ = *ask.output_position;
  if (ask.interventions) state_.set_interventions(*ask.interventions);
  if (ask.source_padding) state_.set_source_padding(*ask.source_padding);
  if (ask.decode_options) state_.set_decode_options(*ask.decode_options);
  if (ask.reference) state_.set_reference(*ask.reference);
  if (ask.force_token) state_.force_token(ask.force_token->first, ask.force_token->second);
  if (ask.toggle_mask && state_.toggle_mask(*ask.toggle_mask)) output_position_ = *ask.toggle_mask;  // (its predictions)
  switch (ask.step) {
    case PanelAsk::Step::None: break;
    case PanelAsk::Step::Restart: state_.restart(); break;
    case PanelAsk::Step::Back: state_.step_back(); break;
    case PanelAsk::Step::Forward: state_.step(); break;
    case PanelAsk::Step::ToEnd: state_.run_to_end(); break;
  }
  if (ask.training) training_.apply(*ask.training, state_, training_data_dir_);
}

void App::frame() {
  state_.poll_background();  // a decoding done off the frame thread is shown from this frame on
  training_.poll(state_);    // a timeline read in the background; a live run's progress and weights
  follow_shown_model();
  note_text_on_screen();
  begin_heatmap_frame();
  begin_item_frame();
  begin_token_hover_frame();
  begin_key_latch_frame();
  for (const ExportRequest& r : frame_exports_) report_export(r, tr(T::app_export_not_rendered));  // no after_render()
  frame_exports_.clear();
  for (auto it = queued_exports_.begin(); it != queued_exports_.end();)
    if (it->frames_to_wait-- > 0) {
      ++it;
    } else {
      frame_exports_.push_back(it->request);
      it = queued_exports_.erase(it);
    }
  poll_model_loader();
  handle_model_shortcuts();
  handle_keys();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  // No background of its own: the window fills the screen, and the clear colour is its background colour
  // (Window::end_frame). Without a GPU, Mesa draws on the CPU, and a blended full-screen rectangle was half of
  // every frame's drawing there (4 of 9 ms at 1280 x 800).
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoBackground;
  ImGui::Begin("##stepformer", nullptr, flags);  // no title bar: the name is an id
  if (view_.present) {
    draw_presentation_header();
  } else {
    ImGui::TextUnformatted(tr(T::app_name_version, {{"version", STEPFORMER_VERSION}}).c_str());
    draw_model_bar();  // the buttons before the model line: a long file name cannot push them off the window
    draw_view_and_export_buttons();
    ImGui::SameLine();
    if (state_.model() && state_.encoder_only())
      ImGui::TextDisabled("%s", tr(T::bert_model_line, {{"file", model_file_name()},
                                                        {"family", state_.model()->family},
                                                        {"shape", shape_text(state_.model()->config.stacks)},
                                                        {"d_model", state_.model()->config.d_model},
                                                        {"heads", state_.model()->config.n_heads},
                                                        {"layers", state_.model()->config.n_encoder_layers}})
                                    .c_str());
    else if (state_.model() && state_.decoder_only())
      ImGui::TextDisabled("%s", tr(T::gpt_model_line, {{"file", model_file_name()},
                                                       {"family", state_.model()->family},
                                                       {"shape", shape_text(state_.model()->config.stacks)},
                                                       {"d_model", state_.model()->config.d_model},
                                                       {"heads", state_.model()->config.n_heads},
                                                       {"layers", state_.model()->config.n_decoder_layers}})
                                    .c_str());
    else if (state_.model())
      ImGui::TextDisabled("%s", tr(T::app_model_line, {{"file", model_file_name()},
                                                       {"family", state_.model()->family},
                                                       {"d_model", state_.model()->config.d_model},
                                                       {"heads", state_.model()->config.n_heads},
                                                       {"encoder_layers", state_.model()->config.n_encoder_layers},
                                                       {"decoder_layers", state_.model()->config.n_decoder_layers}})
                                    .c_str());
    else
      ImGui::TextDisabled("%s", tr(T::app_no_model_loaded));
    if (state_.model() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", state_.model_path().c_str());
    // Which device computed what the views show, at the end of the sentence's line (the model line is full at
    // 1280 pixels): the GPU, or the CPU (hovering says why, where a GPU is there).
    const BackendInfo& backend = backend_info();
    const std::string device = state_.shown_device();
    const std::string device_text = tr(T::app_device, {{"device", device}});
    const float device_width = ImGui::CalcTextSize(device_text.c_str()).x + ImGui::GetStyle().ItemSpacing.x;
    // A decoder-only model continues a prompt: the box is named so, and its button generates.
    const bool prompt = state_.decoder_only(), whole = state_.encoder_only();
    if (prompt || whole) {
      ImGui::TextUnformatted(tr(prompt ? T::gpt_prompt_label : T::bert_sentence_label));
      ImGui::SameLine();
    }
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6 - device_width);
    if (ImGui::InputText("##sentence", &sentence_input_, ImGuiInputTextFlags_EnterReturnsTrue))
      state_.set_sentence(sentence_input_);
    ImGui::SameLine();
    if (ImGui::Button(prompt  ? tr_label(T::gpt_generate, "translate").c_str()
                      : whole ? tr_label(T::bert_read_button, "translate").c_str()
                              : tr_label(T::app_translate, "translate").c_str()))
      state_.set_sentence(sentence_input_);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", device_text.c_str());
    record_item("top_bar.device", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, device);
    if (ImGui::IsItemHovered()) {
      std::string tip;
      if (!backend.cuda_available)
        tip = tr(T::app_device_tip_no_gpu, {{"reason", backend.description}});
      else if (!state_.shown_gpu().empty())
        tip = tr(T::app_device_tip_gpu);
      else if (state_.device()->request() == DeviceRequest::Cpu)
        tip = tr(T::app_device_tip_cpu_asked, {{"gpu", backend.cuda_device_name}});
      else
        tip = tr(T::app_device_tip_cpu,
                 {{"why", state_.device_why().empty() ? std::string(tr(T::app_device_gpu_not_yet)) : state_.device_why()}});
      ImGui::SetTooltip("%s", printable(tip).c_str());
    }
    if (const std::string shown = training_.shown_label(state_); !shown.empty() && state_.ready()) {
      ImGui::TextColored(ImVec4(1.0f, 0.72f, 0.25f, 1.0f), "[%s]", shown.c_str());  // whose weights translate
      ImGui::SameLine();
    }
    if (state_.ready() && state_.encoder_only()) {  // the sentence with each blank filled by the likeliest word
      text_wrapped(tr(T::bert_top_filled, {{"text", state_.filled_in_text()}}));
    } else if (state_.ready() && state_.decoder_only()) {  // the prompt, then what the model wrote after it
      text_wrapped(tr(T::gpt_top_continuation, {{"prompt", state_.sentence()}, {"continuation", state_.translation_text()}}) +
                   (state_.decoding_finished() ? "" : tr(T::app_decoding_space_next_token)));
    } else if (state_.ready()) {
      text_wrapped("-> " + state_.translation_text() +
                   (state_.decoding_finished() ? "" : tr(T::app_decoding_space_next_token)));
    }
    if (state_.busy() && state_.busy_seconds() > 0.2)  // (the views show the last result meanwhile)
      ImGui::TextColored(ImVec4(0.55f, 0.8f, 1.0f, 1.0f), "%s",
                         tr(state_.decoder_only() ? T::gpt_computing : state_.encoder_only() ? T::bert_computing : T::app_computing, {{"seconds", number_text("%.1f", state_.busy_seconds())}}).c_str());
    const std::string changed = interventions_summary(state_.interventions());
    if (!changed.empty()) {
      ImGui::TextColored(ImVec4(1.0f, 0.72f, 0.25f, 1.0f), "%s",
                         tr(T::app_changed_model, {{"changes", changed}}).c_str());
      ImGui::SameLine();
      if (ImGui::SmallButton(tr(T::app_reset_all))) state_.set_interventions(Interventions{});
    }
    if (!state_.error().empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", state_.error().c_str());
    ImGui::Separator();
  }
  const ImVec2 fb_scale = ImGui::GetIO().DisplayFramebufferScale;
  auto pixel_rect = [&](ImVec2 pos, ImVec2 size) {  // ImGui units -> framebuffer pixels
    auto px = [](float v, float scale) { return static_cast<int>(std::lround(v * scale)); };
    return PixelRect{px(pos.x, fb_scale.x), px(pos.y, fb_scale.y), px(size.x, fb_scale.x), px(size.y, fb_scale.y)};
  };
  layout_ = {};
  layout_.font_size = ImGui::GetFontSize() * fb_scale.y;
  if (!view_.present) {  // presentation mode shows the stage alone
    ImGui::BeginChild("pipeline", ImVec2(ImGui::GetFontSize() * 17, 0), true);
    layout_.pipeline = pixel_rect(ImGui::GetWindowPos(), ImGui::GetWindowSize());
    draw_pipeline_map();
    ImGui::EndChild();
    ImGui::SameLine();
  }
  // In presentation mode a lesson's caption is the explanation: the panel's own paragraph makes room for the data.
  show_explanations(!(view_.present && !caption_.empty()));
  // Presenting, the lesson's prompt is in the header; otherwise in the caption box.
  const LessonStatus caption_lesson = view_.present ? LessonStatus{} : lesson_;
  const float caption_height = caption_overlay_height(caption_, caption_lesson, ImGui::GetContentRegionAvail().x);
  ImGui::BeginChild("stage", ImVec2(0, -caption_height), false);
  layout_.stage = pixel_rect(ImGui::GetWindowPos(), ImGui::GetWindowSize());
  const ImVec2 stage_min = ImGui::GetWindowPos();  // the caption goes in the strip kept free below the stage
  const ImVec2 stage_max(stage_min.x + ImGui::GetWindowSize().x,
                         stage_min.y + ImGui::GetWindowSize().y + caption_height);
  if (state_.model()) clamp_selection(state_.model()->config, attention_);  // whatever model is on show now
  if (!draw_model_views()) draw_stage();
  // How far right the panel laid out its widgets, against the room it has (the scroll bar excluded): a wider
  // layout runs off the window (large type on a small screen), which the screen tests look for.
  layout_.stage_content_right = ImGui::GetCurrentWindow()->DC.CursorMaxPos.x * fb_scale.x;
  layout_.stage_room_right = (ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) * fb_scale.x;
  // (as laid out from the top: a panel scrolled down would have moved its content up)
  layout_.stage_content_bottom = (ImGui::GetCurrentWindow()->DC.CursorMaxPos.y + ImGui::GetScrollY()) * fb_scale.y;
  layout_.stage_room_bottom = (ImGui::GetWindowPos().y + ImGui::GetWindowContentRegionMax().y) * fb_scale.y;
  ImGui::EndChild();
  frame_tensors_.clear();
  for (const HeatmapPlacement& p : heatmap_placements())
    if (p.heatmap && exportable(p.name) &&
        std::find(frame_tensors_.begin(), frame_tensors_.end(), p.name) == frame_tensors_.end())
      frame_tensors_.push_back(p.name);
  output_followed_stage_ = stage_;
  lesson_step_ += draw_caption_overlay(caption_, caption_lesson, stage_min, stage_max);
  draw_model_dialogs();
  ImGui::End();
  export_tensors();
  sync_settings();
}

// [SECTION] presentation, view, export

void App::note_text_on_screen() const {
  // What is typed into any field this frame (an IME's Hangul or Han too): drawn from the next frame's atlas.
  for (const ImWchar c : ImGui::GetIO().InputQueueCharacters) note_glyph(c);
  // The text from outside the string table that the views draw: what is typed, the lesson's caption, the tokens
  // read and written, the model's file name and the recent ones (the open dialog). Their characters join the font
  // atlas between frames (gui/text/glyphs.h; the values the table's texts take are noted by tr() itself). ASCII
  // costs a scan.
  note_glyphs(sentence_input_);
  note_glyphs(caption_);
  note_glyphs(state_.sentence());
  note_glyphs(state_.reference());
  note_glyphs(state_.model_path());
  for (const Token& t : state_.source_tokens()) note_glyphs(t.text);
  if (const Model* model = state_.model().get()) {
    const Vocabulary& target = model->tgt_vocab;
    for (const int id : state_.translation())
      if (id >= 0 && id < target.size()) note_glyphs(target.token(id));
  }
  if (settings_)
    for (const std::string& path : settings_->settings().recent_models) note_glyphs(path);
}

void App::draw_view_and_export_buttons() {
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
  if (ImGui::Button(tr(T::app_present))) view_.present = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::app_presentation_mode_f5_large));
  ImGui::SameLine();
  view_popup_.draw(&view_);
  ImGui::SameLine();
  if (auto lesson = lessons_popup_.draw(shipped_lessons_folder(), current_language())) lesson_request_ = *lesson;
  ImGui::SameLine();
  if (auto request = export_popup_.draw({stage_name(stage_), frame_tensors_})) request_export(*request);
  if (!export_status_.text.empty()) {
    ImGui::SameLine();
    if (export_status_.ok) ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1.0f), "%s", export_status_.text.c_str());
    else ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", export_status_.text.c_str());
  }
}

std::string App::stage_detail() const {
  const T kind = attention_.kind == AttentionKind::Encoder   ? T::app_detail_kind_encoder
                 : attention_.kind == AttentionKind::Decoder ? T::app_detail_kind_decoder
                                                             : T::app_detail_kind_cross;
  const int layer = shown_number(attention_.layer), head = shown_number(attention_.head);
  switch (stage_info(stage_).detail) {
    case StageDetail::LayerHead: return tr(T::app_detail_layer_head, {{"layer", layer}, {"head", head}});
    case StageDetail::KindLayer: return tr(T::app_detail_kind_layer, {{"kind", tr(kind)}, {"layer", layer}});
    case StageDetail::Layer: return tr(T::app_detail_layer, {{"layer", layer}});
    case StageDetail::KindAttention: return tr(T::app_detail_kind_attention, {{"kind", tr(kind)}});
    case StageDetail::None: break;
  }
  return "";
}

void App::draw_presentation_header() {
  std::string problem = state_.error();
  if (!export_status_.ok && !export_status_.text.empty())
    problem += (problem.empty() ? "" : "   ") + export_status_.text;
  // The attention stages' titles follow the state: "Decoder masked self-attention (causal mask OFF)".
  const bool attention = stage_info(stage_).attention_map;
  const std::string title =
      attention ? attention_title(attention_.kind, state_.interventions()) : std::string(tr(stage_info(stage_).title));
  // "stage n of N" among the stages of the model's shape
  const std::vector<Stage> order =
      stages_of_shape(state_.model() ? state_.model()->config.stacks : ModelStacks::EncoderDecoder);
  const int number = static_cast<int>(std::find(order.begin(), order.end(), stage_) - order.begin()) + 1;
  lesson_step_ += sf::gui::draw_presentation_header(title.c_str(), stage_detail(), number,
                                                    static_cast<int>(order.size()), problem, lesson_);
  // The sentence strip: the source, the translation, and what is changed with the translation as trained.
  if (!state_.ready()) return;
  SentenceStrip strip;
  const LanguageWords languages = language_words(state_.model().get());
  strip.source_language = state_.decoder_only()   ? std::string(tr(T::gpt_strip_prompt))
                          : state_.encoder_only() ? std::string(tr(T::bert_strip_sentence))
                                                  : languages.source_capital;
  strip.target_language = state_.decoder_only()   ? std::string(tr(T::gpt_strip_continuation))
                          : state_.encoder_only() ? std::string(tr(T::bert_strip_filled))
                                                  : languages.target_capital;
  strip.source = state_.sentence();
  if (state_.encoder_only()) {  // the sentence as read ([MASK] where hidden), then with its blanks filled in
    strip.source.clear();
    for (const std::string& label : state_.source_labels()) strip.source += (strip.source.empty() ? "" : " ") + label;
    std::string word;
    for (std::istringstream filled(state_.filled_in_text()); filled >> word;) strip.now.push_back({word});
    draw_sentence_strip(strip);
    ImGui::Separator();
    return;
  }
  const auto words = [&](const std::vector<int>& ids) {
    std::vector<StripWord> out;
    const Model& model = *state_.model();
    if (uses_sentencepiece(model.tokenizer)) {  // pieces joined into the words they make ("▁un c o" -> "unco")
      std::vector<std::string> pieces;
      for (int id : ids)
        if (id != model.config.eos_id) pieces.push_back(model.tgt_vocab.token(id));
      for (const std::string& w : subword_words(model, pieces, Side::Target)) out.push_back({unescape_token(w)});
      return out;
    }
    for (int id : ids)
      if (id != model.config.eos_id) out.push_back({state_.target_token(id)});
    return out;
  };
  strip.now = words(state_.translation());
  strip.decoding = !state_.decoding_finished();
  strip.badge = interventions_summary(state_.interventions(), /*name_heads=*/true);
  if (!strip.badge.empty()) {
    strip.before = words(state_.translation_as_trained());
    // While decoding, the words so far against as many of the model's: the rest is not written yet.
    if (strip.decoding && strip.before.size() > strip.now.size()) strip.before.resize(strip.now.size());
    mark_changed_words(strip.now, strip.before);
  }
  // A translation that runs on (an untrained model repeats a word to the length limit) keeps two lines of the
  // projector: its first words, then how many more.
  constexpr size_t kStripWords = 24;
  for (std::vector<StripWord>* words : {&strip.now, &strip.before})
    if (words->size() > kStripWords + 2) {
      const size_t more = words->size() - kStripWords;
      words->resize(kStripWords);
      words->push_back({tr(T::app_strip_more_words, {{"count", more}})});
    }
  draw_sentence_strip(strip);
  ImGui::Separator();
}

void App::request_export(const ExportRequest& request) {
  const bool png = request.kind == ExportKind::WindowPng || request.kind == ExportKind::PanelPng;
  queued_exports_.push_back({request, png ? 1 : 0});
}

bool App::capturing() const {
  auto png = [](const ExportRequest& r) { return r.kind == ExportKind::WindowPng || r.kind == ExportKind::PanelPng; };
  return std::any_of(queued_exports_.begin(), queued_exports_.end(),
                     [&](const QueuedExport& q) { return png(q.request); }) ||
         std::any_of(frame_exports_.begin(), frame_exports_.end(), png);
}

void App::report_export(const ExportRequest& request, const std::string& error) {
  export_status_ = error.empty() ? Message{true, tr(T::app_export_saved, {{"path", request.path}})}
                                 : Message{false, tr(T::app_export_failed, {{"reason", error}})};
  messages_.push_back(export_status_);
#if defined(__EMSCRIPTEN__)
  if (error.empty()) web::offer_download(request.path);  // written in the page's memory: the browser saves it
#endif
}

void App::export_tensors() {
  // The heatmaps drawn this frame are alive until the next frame starts: read their values now.
  std::vector<ExportRequest> pngs;
  for (const ExportRequest& r : frame_exports_) {
    if (r.kind == ExportKind::WindowPng || r.kind == ExportKind::PanelPng) {
      pngs.push_back(r);
      continue;
    }
    const HeatmapPlacement* found = nullptr;
    for (const HeatmapPlacement& p : heatmap_placements())
      if (p.heatmap && exportable(p.name) && (r.tensor.empty() || p.name == r.tensor)) {
        found = &p;
        break;
      }
    if (!found) {
      report_export(r, r.tensor.empty() ? tr(T::app_export_no_tensor, {{"stage", stage_name(stage_)}})
                                        : tr(T::app_export_no_such_tensor, {{"tensor", r.tensor}}));
      continue;
    }
    const Heatmap& h = *found->heatmap;
    TensorView tensor;
    tensor.name = found->name;
    const std::string detail = stage_detail();
    tensor.description =
        detail.empty() ? std::string(tr(stage_info(stage_).title))
                       : tr(T::app_export_description, {{"stage", tr(stage_info(stage_).title)}, {"detail", detail}});
    tensor.rows = h.rows();
    tensor.cols = h.cols();
    tensor.values = h.values().data();
    tensor.row_labels = h.row_labels();
    tensor.col_labels = h.col_labels();
    const std::string bytes =
        r.kind == ExportKind::Csv ? csv_text(tensor) : npy_bytes(tensor.values, tensor.rows, tensor.cols);
    report_export(r, write_user_file(r.path, bytes, export_rules(r)));
  }
  frame_exports_ = std::move(pngs);
}

WriteRules App::export_rules(const ExportRequest& r) const {
  return {.replace = r.replace, .inputs = {state_.model_path()}, .allowed_folder = r.allowed_folder};
}

void App::after_render() {
  for (const ExportRequest& r : frame_exports_) {
    std::vector<unsigned char> rgb;
    int width = 0, height = 0;
    const PixelRect rect = r.kind == ExportKind::PanelPng ? layout_.stage : PixelRect{};
    std::string error = read_back_buffer(rect, &rgb, &width, &height);
    if (error.empty()) {
      const std::string png = png_bytes(rgb, width, height);
      error = png.empty() ? tr(T::app_export_png_failed) : write_user_file(r.path, png, export_rules(r));
    }
    report_export(r, error);
  }
  frame_exports_.clear();
}

}  // namespace sf::gui
