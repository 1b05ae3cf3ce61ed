// stepformer: the desktop app. `stepformer --help` lists the options.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
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

}  // namespace

int main(int argc, char** argv) {
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
  // The last session fills in what the command line left open; a damaged settings file is moved aside and
  // reported here and, once, in the app.
  sf::gui::SettingsStore settings(parsed.options.no_settings ? std::string() : sf::gui::default_settings_path());
  if (!settings.problem().empty()) print_error(settings.problem());
  if (settings.enabled()) sf::gui::apply_last_session(settings.settings(), parsed.options);
  const sf::gui::AppOptions& options = parsed.options;
  // --device cuda asks for a GPU: without a usable one that is an error naming why, as stepformer-cli's, before
  // any window (a GPU that is there but cannot take a model is said in the app, which computes on the CPU).
  if (options.device == "cuda" && !sf::backend_info().cuda_available) {
    print_error("--device cuda: no usable GPU (" + sf::backend_info().description + "); --device auto or cpu computes on the CPU");
    return 1;
  }
  const bool screenshot_mode = !options.screenshot_path.empty();
  std::optional<sf::gui::ScriptRunner> script;
  std::string lesson_problems;  // every line of a lesson at fault, shown in a dialog before the class sees it
  // Reads a script or lesson into `script` (replacing one running); "" or why it cannot start.
  const auto start_script = [&](const std::string& path, bool lesson) -> std::string {
    std::string error;
    const auto mode = lesson ? sf::gui::ScriptParse::Lesson : sf::gui::ScriptParse::Strict;
    auto parsed_script = sf::gui::parse_script_file(path, error, mode);
    if (!parsed_script) return error;
    lesson_problems.clear();
    if (lesson && !error.empty()) {
      std::fprintf(stderr, "stepformer: the lesson has lines it will skip:\n%s\n", sf::printable_lines(error).c_str());
      lesson_problems = error;
    }
    script.emplace(std::move(*parsed_script), lesson);
    script->set_write_folder(options.allow_write_folder);
    return "";
  };
  if (!options.script_path.empty() || !options.lesson_path.empty()) {
    const bool lesson = !options.lesson_path.empty();
    if (const std::string error = start_script(lesson ? options.lesson_path : options.script_path, lesson);
        !error.empty()) {
      print_error(error);
      return 2;
    }
  }
  // --screenshot, --layout-json and --frame-log replace a regular file at their path (as --help says), never an
  // input: the model named or the one opened when none is (the last session's, the shipped one), the script.
  const std::vector<std::string> option_inputs = {options.model_path, options.fallback_model_path,
                                                  sf::gui::default_model_path(), options.script_path,
                                                  options.lesson_path};
  sf::WriteRules option_outputs{.replace = true, .inputs = option_inputs, .allowed_folder = ""};

  // The frame log is opened before the window, so that a path that cannot be written stops the app at once.
  sf::gui::FrameLog frame_log;
  if (!options.frame_log_path.empty()) {
    std::string error;
    if (!frame_log.open(options.frame_log_path, option_inputs, error)) {
      print_error(error);
      return 2;
    }
  }

  try {
    sf::gui::Window window(options.width, options.height, sf::gui::tr(sf::gui::T::app_name), !screenshot_mode,
                           options.ui_scale);
    // The app's background work (decodings, model loading, training runs, and the pool's workers they use) runs
    // five nice steps below the frame thread (util/parallel.h): where Mesa draws on the CPU (no GPU) the two compete
    // for the cores, and at equal priority a frame's drawing took up to 4 times as long while a long sentence
    // decoded. Set before anything starts in the background.
    sf::set_worker_niceness(5);
    sf::gui::App app(options, &settings);  // with --no-settings the store keeps the session in memory only
    // Decodings run off the frame thread; a frame waits for one at most 16 ms (an intervention on an ordinary
    // sentence takes a few ms: it shows in the frame that asked), then draws the last result until it is done.
    // The wait is cut to what the frame can spare: 26 ms less 2.5 times the last frame's drawing (maps of a
    // 240-token sentence take 10-25 ms to draw in software, and while the decoding runs beside it on a 2-core
    // machine the same drawing took 2.5 times as long: 7.5 -> 19 ms), so that no frame takes over about 33 ms.
    // Where the last decoding took over twice that wait (a long sentence with positions off, say), the next most
    // likely will too, and the frame waits 1 ms only: waiting in vain would just make it late.
    // Measured with the 237-token interventions script (README, Speed): the longest frame of a run went from
    // 28.9-33.8 ms (equal priority, always waiting) to 22.6-30.8 ms; the price is that a long decoding, sharing
    // the cores with frames that xvfb lets the app draw without pause, took about 60% longer there.
    app.mutable_state().set_step_budget_ms(16);
    double last_draw_ms = 0;
    if (!lesson_problems.empty())
      app.show_message({sf::gui::tr(sf::gui::T::lesson_problems_title), options.lesson_path, lesson_problems,
                        sf::gui::tr(sf::gui::T::lesson_problems_hint)});
    sf::gui::install_key_latch(window.handle());  // key taps shorter than a frame (a presenter's clicker)
    sf::gui::ViewApplier view;  // fonts, style and full screen follow app.view(), between frames
    std::vector<std::string> log;
    int frames_with_model = 0;  // --frames counts from when the model is in (it loads in the background)
    while (!window.should_close()) {
      frame_log.begin_frame(app.state());
      const double budget = std::clamp(26.0 - 2.5 * last_draw_ms, 1.0, 16.0);
      app.mutable_state().set_step_budget_ms(app.state().last_recompute_ms() > 2.0 * budget ? 1.0 : budget);
      if (script) {
        script->before_frame(app, log);
        for (const auto& line : log) print_error(line);
        log.clear();
        if (script->quit() && !app.exports_pending()) return 0;  // exports asked for before quit finish first
        // A lesson's place in the title: the window list says where the class is, and a driver (a clicker's
        // software, the tests' xdotool) can wait for a pause by name.
        if (script->interactive())
          window.set_title(script->waiting()
                               ? sf::gui::tr(sf::gui::T::app_window_title_lesson_pause,
                                             {{"pause", script->pauses_passed()}, {"pauses", script->pauses()}})
                               : std::string(sf::gui::tr(sf::gui::T::app_window_title_lesson)));
      }
      const auto mouse = script ? script->mouse() : std::nullopt;
      const float mouse_xy[2] = {mouse ? mouse->x : 0.0f, mouse ? mouse->y : 0.0f};
      view.apply(window.handle(), app.view());
      // While a PNG export is due the pointer is away, so no tooltip lands in the picture (a script's hover stays).
      const float away[2] = {-FLT_MAX, -FLT_MAX};
      window.begin_frame(mouse ? mouse_xy : app.capturing() ? away : nullptr);
      app.open_dropped(window.take_dropped_paths());
      app.frame();
      // A lesson picked in the Lessons popup starts at its first line, in place of what was running.
      if (auto path = app.take_lesson_request()) {
        const std::string error = start_script(*path, true);
        if (error.empty()) script->start_in(app);  // not the last lesson's masks, heads off or caption
        if (!error.empty()) {
          print_error(error);
          app.show_message({sf::gui::tr(sf::gui::T::lessons_button), *path,
                            sf::gui::tr(sf::gui::T::lessons_open_failed, {{"file", *path}, {"problem", error}}), ""});
        } else if (!lesson_problems.empty()) {
          app.show_message({sf::gui::tr(sf::gui::T::lesson_problems_title), *path, lesson_problems,
                            sf::gui::tr(sf::gui::T::lesson_problems_hint)});
        }
      }
      frame_log.built();
      const auto draw_start = std::chrono::steady_clock::now();
      window.end_frame();
      if (frame_log.is_open()) {
        window.finish_gpu();
        frame_log.end_frame(app.state());
      }
      app.after_render();
      for (const auto& m : app.take_messages()) {
        std::fprintf(m.ok ? stdout : stderr, "stepformer: %s\n", sf::printable_lines(m.text).c_str());
        std::fflush(m.ok ? stdout : stderr);
      }
      if (script) {
        if (auto path = script->screenshot_due()) {
          const std::string error = window.save_screenshot(*path, script->write_rules());
          if (!error.empty()) print_error("screenshot failed: " + error);
          else std::printf("stepformer: saved %s\n", sf::printable(*path).c_str());
        }
        if (auto path = script->layout_due())
          if (const std::string error = write_layout_json(*path, app, script->write_rules()); !error.empty())
            print_error("layout failed: " + error);
      }
      if (!app.loading() && !app.state().busy()) ++frames_with_model;
      if (screenshot_mode && frames_with_model >= options.frames) {
        option_outputs.inputs.push_back(app.state().model_path());  // a model the script opened, too
        const std::string error = window.save_screenshot(options.screenshot_path, option_outputs);
        if (!error.empty()) {
          print_error("screenshot failed: " + error);
          return 1;
        }
        if (!options.layout_json_path.empty())
          if (const std::string layout_error = write_layout_json(options.layout_json_path, app, option_outputs);
              !layout_error.empty()) {
            print_error("layout failed: " + layout_error);
            return 1;
          }
        std::printf("stepformer: saved %s\n", options.screenshot_path.c_str());
        return 0;
      }
      window.present();
      last_draw_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - draw_start).count();
    }
  } catch (const sf::gui::WindowError& e) {
    print_error(e.message);
    return 3;
  } catch (const std::exception& e) {
    print_error(std::string("fatal error: ") + e.what());
    return 1;
  }
  return 0;
}
