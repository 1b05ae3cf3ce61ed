// stepformer: the desktop app. `stepformer --help` lists the options.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "gui/app.h"
#include "gui/frame_log.h"
#include "gui/key_latch.h"
#include "gui/options.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "gui/fonts.h"
#include "gui/script/lesson_check.h"
#include "gui/script/script.h"
#include "gui/settings.h"
#include "gui/training.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/window.h"
#include "io/user_files.h"
#include "util/memory.h"
#include "util/parallel.h"
#include "util/printable.h"
#if defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>

#include "web/browser.h"
#endif

namespace {

nlohmann::json rect_json(const sf::gui::PixelRect& r) {
  if (r.width <= 0 || r.height <= 0) return nullptr;
  return {{"x0", r.x}, {"y0", r.y}, {"x1", r.x + r.width}, {"y1", r.y + r.height}};
}

// Where each heatmap was drawn, and what the app showed (model, view, dialog): for the screenshot tests.
// Returns "" or why it could not be written.
std::string write_layout_json(const std::string& path, const sf::gui::App& app, const sf::WriteRules& rules) {
  nlohmann::json heatmaps = nlohmann::json::array();
  for (const auto& p : sf::gui::heatmap_placements())
    heatmaps.push_back({{"name", p.name}, {"x0", p.min.x}, {"y0", p.min.y}, {"x1", p.max.x}, {"y1", p.max.y},
                        {"rows", p.rows}, {"cols", p.cols}, {"lo", p.lo}, {"hi", p.hi},
                        {"window", {p.window.col0, p.window.row0, p.window.cols, p.window.rows}},
                        {"colormap", p.colormap == sf::gui::Colormap::Diverging ? "diverging"
                                     : p.colormap == sf::gui::Colormap::Magma   ? "magma"
                                                                                : "viridis"}});
  nlohmann::json items = nlohmann::json::array();
  for (const auto& p : sf::gui::item_placements())
    items.push_back({{"name", p.name}, {"x0", p.min.x}, {"y0", p.min.y}, {"x1", p.max.x}, {"y1", p.max.y},
                     {"index", p.index}, {"text", p.text}, {"value", p.value}});
  // The panels: where the stage and the pipeline map (null when hidden) are, and the body text's size.
  const auto& layout = app.frame_layout();
  const nlohmann::json panels = {{"stage", rect_json(layout.stage)}, {"pipeline", rect_json(layout.pipeline)},
                                 {"font_size", layout.font_size}, {"caption", app.caption()},
                                 {"stage_content_right", layout.stage_content_right},
                                 {"stage_room_right", layout.stage_room_right},
                                 {"stage_content_bottom", layout.stage_content_bottom},
                                 {"stage_room_bottom", layout.stage_room_bottom},
                                 {"present", app.view().present}};
  const sf::gui::AttentionSelection& a = app.attention();
  nlohmann::json shown = {{"model_path", app.state().model() ? app.state().model_path() : ""},
                          {"view", app.showing_model_info() ? "model-info" : "stage"},
                          {"stage", sf::gui::stage_name(app.stage())},
                          {"attention", sf::head_ref_text({a.kind, a.layer, a.head})},
                          {"sentence", app.state().sentence()},
                          {"translation", app.state().translation_text()},
                          {"output_position", app.output_position()},
                          {"loading", app.loading()},
                          {"dialog", nullptr}};
  if (const sf::gui::DialogMessage* d = app.dialog().current())
    shown["dialog"] = {{"title", d->title}, {"file", d->file}, {"problem", d->problem}, {"hint", d->hint}};
  // The fonts: which files, the atlas's size (a software renderer's texture limit), the characters no font has,
  // and how many glyphs this frame drew as the fallback (a character the atlas lacked).
  const sf::gui::FontAtlasReport fonts = sf::gui::font_atlas_report();
  std::vector<unsigned> missing(fonts.missing.begin(), fonts.missing.end());
  shown["language"] = sf::gui::language_code(sf::gui::current_language());
  shown["fonts"] = {{"files", fonts.fonts},     {"atlas_width", fonts.width},
                    {"atlas_height", fonts.height}, {"glyphs", fonts.glyphs},
                    {"missing", missing},        {"fallback_glyphs_drawn", sf::gui::fallback_glyphs_drawn()}};
  const std::string text = nlohmann::json{{"heatmaps", heatmaps}, {"items", items}, {"panels", panels}, {"app", shown}}
                               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return sf::write_user_file(path, text, rules);
}

void print_error(const std::string& text) { std::fprintf(stderr, "stepformer: %s\n", sf::printable_lines(text).c_str()); }

// The app from its first frame to its last: the window, the app, the script or lesson running, and what the
// command line asked to write. One frame at a time (frame()), so that the desktop's loop and a web page's
// animation frames (emscripten_set_main_loop) run the same code.
// Runs `step` (returning an exit code when the app is done); an exception escaping it is fatal, said as such:
// exit code 3 for a window that cannot be had, 1 for anything else.
template <class Step>
std::optional<int> fatal_as_exit_code(Step&& step) {
  try {
    return step();
  } catch (const sf::gui::WindowError& e) {
    print_error(e.message);
    return 3;
  } catch (const std::exception& e) {
    print_error(std::string("fatal error: ") + e.what());
    return 1;
  }
}

class Session {
 public:
  // The last session fills in what the command line left open; a damaged settings file is moved aside and
  // reported here and, once, in the app.
  explicit Session(sf::gui::AppOptions options)
      : options_(std::move(options)),
        settings_(options_.no_settings ? std::string() : sf::gui::default_settings_path()) {
    if (!settings_.problem().empty()) print_error(settings_.problem());
    if (settings_.enabled()) sf::gui::apply_last_session(settings_.settings(), options_);
  }

  // Reads the script or lesson, opens the frame log, the window and the app; -1 when the frames may start, or
  // the exit code.
  int start() {
    // --device cuda asks for a GPU: without a usable one that is an error naming why, as stepformer-cli's, before
    // any window (a GPU that is there but cannot take a model is said in the app, which computes on the CPU).
    if (options_.device == "cuda" && !sf::backend_info().cuda_available) {
      print_error("--device cuda: no usable GPU (" + sf::backend_info().description +
                  "); --device auto or cpu computes on the CPU");
      return 1;
    }
    if (!options_.script_path.empty() || !options_.lesson_path.empty()) {
      const bool lesson = !options_.lesson_path.empty();
      if (const std::string error = start_script(lesson ? options_.lesson_path : options_.script_path, lesson);
          !error.empty()) {
        print_error(error);
        return 2;
      }
    }
    // --screenshot, --layout-json and --frame-log replace a regular file at their path (as --help says), never an
    // input: the model named or the one opened when none is (the last session's, the shipped one), the script.
    const std::vector<std::string> option_inputs = {options_.model_path, options_.fallback_model_path,
                                                    sf::gui::default_model_path(), options_.script_path,
                                                    options_.lesson_path};
    option_outputs_ = sf::WriteRules{.replace = true, .inputs = option_inputs, .allowed_folder = ""};
    // The frame log is opened before the window, so that a path that cannot be written stops the app at once.
    if (!options_.frame_log_path.empty()) {
      std::string error;
      if (!frame_log_.open(options_.frame_log_path, option_inputs, error)) {
        print_error(error);
        return 2;
      }
    }
    const auto failed = fatal_as_exit_code([&]() -> std::optional<int> {
      window_.emplace(options_.width, options_.height, sf::gui::tr(sf::gui::T::app_name), !screenshot_mode(),
                      options_.ui_scale);
      // The app's background work (decodings, model loading, training runs, and the pool's workers they use) runs
      // five nice steps below the frame thread (util/parallel.h): where Mesa draws on the CPU (no GPU) the two
      // compete for the cores, and at equal priority a frame's drawing took up to 4 times as long while a long
      // sentence decoded. Set before anything starts in the background.
      sf::set_worker_niceness(5);
      app_.emplace(options_, &settings_);  // with --no-settings the store keeps the session in memory only
      // Decodings run off the frame thread; a frame waits for one at most 16 ms (an intervention on an ordinary
      // sentence takes a few ms: it shows in the frame that asked), then draws the last result until it is done.
      // The wait is cut to what the frame can spare: 26 ms less 2.5 times the last frame's drawing (maps of a
      // 240-token sentence take 10-25 ms to draw in software, and while the decoding runs beside it on a 2-core
      // machine the same drawing took 2.5 times as long: 7.5 -> 19 ms), so that no frame takes over about 33 ms.
      // Where the last decoding took over twice that wait (a long sentence with positions off, say), the next most
      // likely will too, and the frame waits 1 ms only: waiting in vain would just make it late.
      // Measured with the 237-token interventions script (README, Speed): the longest frame of a run went from
      // 28.9-33.8 ms (equal priority, always waiting) to 22.6-30.8 ms; the price is that a long decoding, sharing
      // the cores with frames that xvfb lets the app draw without pause, took about 60% longer there. (In a web
      // page there are no threads: a decoding runs in the frame that asks for it, app/gui/background_task.h.)
      app_->mutable_state().set_step_budget_ms(16);
      if (!lesson_problems_.empty())
        app_->show_message({sf::gui::tr(sf::gui::T::lesson_problems_title), options_.lesson_path, lesson_problems_,
                            sf::gui::tr(sf::gui::T::lesson_problems_hint)});
      sf::gui::install_key_latch(window_->handle());  // key taps shorter than a frame (a presenter's clicker)
      return std::nullopt;
    });
    if (failed) return *failed;
    return -1;
  }

  // One frame; the exit code when the app is done. An exception is fatal, said as such.
  std::optional<int> frame_guarded() { return fatal_as_exit_code([&] { return frame(); }); }

 private:
  bool screenshot_mode() const { return !options_.screenshot_path.empty(); }

  // Reads a script or lesson into `script_` (replacing one running); "" or why it cannot start.
  std::string start_script(const std::string& path, bool lesson) {
    std::string error;
    const auto mode = lesson ? sf::gui::ScriptParse::Lesson : sf::gui::ScriptParse::Strict;
    auto parsed_script = sf::gui::parse_script_file(path, error, mode);
    if (!parsed_script) return error;
    lesson_problems_.clear();
    if (lesson && !error.empty()) {
      std::fprintf(stderr, "stepformer: the lesson has lines it will skip:\n%s\n", sf::printable_lines(error).c_str());
      lesson_problems_ = error;
    }
    script_.emplace(std::move(*parsed_script), lesson);
    script_->set_write_folder(options_.allow_write_folder);
    return "";
  }

  std::optional<int> frame() {
    sf::gui::Window& window = *window_;
    sf::gui::App& app = *app_;
    if (window.should_close()) return 0;
#if defined(__EMSCRIPTEN__)
    sf::web::fit_canvas_to_page();
    app.open_dropped(sf::web::take_chosen_files());  // the page's file picker (Open model > Choose a file)
#endif
    frame_log_.begin_frame(app.state());
    const double budget = std::clamp(26.0 - 2.5 * last_draw_ms_, 1.0, 16.0);
    app.mutable_state().set_step_budget_ms(app.state().last_recompute_ms() > 2.0 * budget ? 1.0 : budget);
    if (script_) {
      script_->before_frame(app, log_);
      for (const auto& line : log_) print_error(line);
      log_.clear();
      if (script_->quit() && !app.exports_pending()) return 0;  // exports asked for before quit finish first
      // A lesson's place in the title: the window list says where the class is, and a driver (a clicker's
      // software, the tests' xdotool) can wait for a pause by name.
      if (script_->interactive())
        window.set_title(script_->waiting()
                             ? sf::gui::tr(sf::gui::T::app_window_title_lesson_pause,
                                           {{"pause", script_->pauses_passed()}, {"pauses", script_->pauses()}})
                             : std::string(sf::gui::tr(sf::gui::T::app_window_title_lesson)));
    }
    const auto mouse = script_ ? script_->mouse() : std::nullopt;
    const float mouse_xy[2] = {mouse ? mouse->x : 0.0f, mouse ? mouse->y : 0.0f};
    view_.apply(window.handle(), app.view());
    // While a PNG export is due the pointer is away, so no tooltip lands in the picture (a script's hover stays).
    const float away[2] = {-FLT_MAX, -FLT_MAX};
    window.begin_frame(mouse ? mouse_xy : app.capturing() ? away : nullptr);
    app.open_dropped(window.take_dropped_paths());
    app.frame();
    // A lesson picked in the Lessons popup starts at its first line, in place of what was running.
    if (auto path = app.take_lesson_request()) {
      const std::string error = start_script(*path, true);
      if (error.empty()) script_->start_in(app);  // not the last lesson's masks, heads off or caption
      if (!error.empty()) {
        print_error(error);
        app.show_message({sf::gui::tr(sf::gui::T::lessons_button), *path,
                          sf::gui::tr(sf::gui::T::lessons_open_failed, {{"file", *path}, {"problem", error}}), ""});
      } else if (!lesson_problems_.empty()) {
        app.show_message({sf::gui::tr(sf::gui::T::lesson_problems_title), *path, lesson_problems_,
                          sf::gui::tr(sf::gui::T::lesson_problems_hint)});
      }
    }
    frame_log_.built();
    const auto draw_start = std::chrono::steady_clock::now();
    window.end_frame();
    if (frame_log_.is_open()) {
      window.finish_gpu();
      frame_log_.end_frame(app.state());
    }
    app.after_render();
    for (const auto& m : app.take_messages()) {
      std::fprintf(m.ok ? stdout : stderr, "stepformer: %s\n", sf::printable_lines(m.text).c_str());
      std::fflush(m.ok ? stdout : stderr);
    }
    if (script_) {
      if (auto path = script_->screenshot_due()) {
        const std::string error = window.save_screenshot(*path, script_->write_rules());
        if (!error.empty()) {
          print_error("screenshot failed: " + error);
        } else {
          std::printf("stepformer: saved %s\n", sf::printable(*path).c_str());
#if defined(__EMSCRIPTEN__)
          sf::web::offer_download(*path);
#endif
        }
      }
      if (auto path = script_->layout_due()) {
        if (const std::string error = write_layout_json(*path, app, script_->write_rules()); !error.empty())
          print_error("layout failed: " + error);
#if defined(__EMSCRIPTEN__)
        else sf::web::offer_download(*path);
#endif
      }
    }
#if defined(__EMSCRIPTEN__)
    sf::web::PageProgress progress;
    if (script_) {
      progress.script = true;
      progress.lesson = script_->interactive();
      progress.waiting = script_->waiting();
      progress.finished = script_->finished();
      progress.pause = script_->pauses_passed();
      progress.pauses = script_->pauses();
    }
    if (!app.loading() && !app.state().busy() && app.state().model()) progress.model_path = app.state().model_path();
    progress.translation = app.state().translation();
    sf::web::report_progress(progress, [&] { return app.state().translation_text(); });
#endif
    if (!app.loading() && !app.state().busy()) ++frames_with_model_;
    if (screenshot_mode() && frames_with_model_ >= options_.frames) {
      option_outputs_.inputs.push_back(app.state().model_path());  // a model the script opened, too
      const std::string error = window.save_screenshot(options_.screenshot_path, option_outputs_);
      if (!error.empty()) {
        print_error("screenshot failed: " + error);
        return 1;
      }
      if (!options_.layout_json_path.empty())
        if (const std::string layout_error = write_layout_json(options_.layout_json_path, app, option_outputs_);
            !layout_error.empty()) {
          print_error("layout failed: " + layout_error);
          return 1;
        }
      std::printf("stepformer: saved %s\n", options_.screenshot_path.c_str());
      return 0;
    }
    window.present();
    last_draw_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - draw_start).count();
    return std::nullopt;
  }

  sf::gui::AppOptions options_;
  sf::gui::SettingsStore settings_;
  std::optional<sf::gui::ScriptRunner> script_;
  std::string lesson_problems_;  // every line of a lesson at fault, shown in a dialog before the class sees it
  sf::WriteRules option_outputs_;
  sf::gui::FrameLog frame_log_;
  // The window before the app (the app's textures need its context) and destroyed after it.
  std::optional<sf::gui::Window> window_;
  std::optional<sf::gui::App> app_;
  sf::gui::ViewApplier view_;  // fonts, style and full screen follow app.view(), between frames
  std::vector<std::string> log_;
  double last_draw_ms_ = 0;
  int frames_with_model_ = 0;  // --frames counts from when the model is in (it loads in the background)
};

}  // namespace

// The app until its last frame (the desktop), or until its frames are handed to the browser (a web page: then
// this never returns, as emscripten_set_main_loop unwinds the stack); the exit code.
int run_app(int argc, char** argv) {
  sf::keep_freed_memory();  // large buffers of a pass stay in the heap (util/memory.h)
  sf::gui::ParsedOptions parsed = sf::gui::parse_app_options(argc, argv);
  if (parsed.exit_now) return parsed.exit_code;
  if (parsed.options.script_grammar) {  // no display, no settings: the parser's table (gui/script/script_parse.h)
    std::vector<std::string> recipes;
    for (const sf::gui::TrainingRecipe& r : sf::gui::training_recipes()) recipes.push_back(r.id);
    std::fputs(sf::gui::script_grammar_json(recipes).c_str(), stdout);
    return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
  }
  sf::remove_temporary_files_on_signal();  // Ctrl-C or a kill during a write leaves no temporary file behind
  // A lesson checked without a window: no display, no settings, nothing written.
  if (!parsed.options.check_lesson_path.empty()) return sf::gui::check_lesson(parsed.options, stdout);
  auto session = std::make_unique<Session>(std::move(parsed.options));
  if (const int code = session->start(); code >= 0) return code;
#if defined(__EMSCRIPTEN__)
  // A page never blocks: the browser calls one frame per animation frame. The session lives on the heap and is
  // never destroyed (the page's memory ends with the page); emscripten_set_main_loop_arg(..., 1) unwinds the stack
  // and does not return here.
  sf::web::start_page();
  emscripten_set_main_loop_arg(
      [](void* self) {
        if (const auto code = static_cast<Session*>(self)->frame_guarded()) {
          emscripten_cancel_main_loop();
          sf::web::report_exit(*code);
        }
      },
      session.release(), 0, 1);
  return 0;
#else
  for (;;)
    if (const auto code = session->frame_guarded()) return *code;
#endif
}

int main(int argc, char** argv) {
  const int code = run_app(argc, argv);
#if defined(__EMSCRIPTEN__)
  sf::web::report_exit(code);  // the page shows why (what the app wrote to stderr) instead of a blank canvas
#endif
  return code;
}
