#include "gui/script/script.h"

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "gui/panels/attention_panel.h"
#include "gui/panels/interventions_panel.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "gui/text/text.h"
#include "gui/words.h"
#include "gui/widgets.h"
#include "io/user_files.h"
#include "model/languages.h"
#include "model/model.h"
#include "util/error.h"
#include "util/paths.h"

namespace sf::gui {

namespace {

// A model a script names: a path (as given, from the working directory), or a shipped model's name ("gpt-en",
// "de-en") where no file or folder has that name: a lesson finds the models shipped with it wherever the app is
// installed.
std::string script_model_path(const std::string& given) {
  std::error_code ec;
  if (given.find('/') != std::string::npos || std::filesystem::exists(given, ec)) return given;
  const std::string shipped = shipped_model_path(given);
  return std::filesystem::exists(shipped, ec) ? shipped : given;
}

// Commands that only produce output or pass time: skipped when a lesson replays up to an earlier pause.
bool is_output_or_time(const std::string& name) {
  return name == "wait" || name == "hover" || name == "screenshot" || name == "layout" || name == "quit" ||
         name.rfind("export-", 0) == 0 || name == "wait-train";
}

// What the loaded model cannot show of a command that names a head or a layer ("" when it can): a lesson
// written for the shipped model, played on a smaller one, skips these rather than show the wrong thing.
std::string beyond_the_model(const App& app, const ScriptCommand& c) {
  if (!app.state().model()) return "";
  const Config& m = app.state().model()->config;
  const auto layers_of = [&](AttentionKind k) { return k == AttentionKind::Encoder ? m.n_encoder_layers : m.n_decoder_layers; };
  const auto head_problem = [&](const HeadRef& h) -> std::string {
    if (!stage_in_shape(attention_stage(h.kind), m.stacks))  // a decoder-only model's encoder or cross-attention
      return stage_missing_text(attention_stage(h.kind), m.stacks);
    if (h.layer >= layers_of(h.kind))
      return tr(h.kind == AttentionKind::Encoder ? T::script_beyond_encoder_layers : T::script_beyond_decoder_layers,
                {{"layers", layers_of(h.kind)}, {"ref", c.args[0]}, {"layer", shown_number(h.layer)}});
    if (h.head >= m.n_heads)
      return tr(T::script_beyond_heads_of_head,
                {{"heads", m.n_heads}, {"ref", c.args[0]}, {"head", shown_number(h.head)}});
    return "";
  };
  if (c.name == "attention" || c.name == "head-off" || c.name == "head-on" || c.name == "mask") {
    const HeadRef h = parse_head_ref(c.args[0]);
    return head_problem(h);
  }
  if (c.name == "layer") {  // a layer of the attention kind on show (the encoder and decoder may differ)
    const AttentionKind kind = app.attention().kind;
    if (std::stoi(c.args[0]) > layers_of(kind))  // (numbered from 1)
      return tr(kind == AttentionKind::Encoder ? T::script_beyond_encoder_layer : T::script_beyond_decoder_layer,
                {{"layers", layers_of(kind)}, {"layer", c.args[0]}});
  }
  if (c.name == "head" && std::stoi(c.args[0]) > m.n_heads)
    return tr(T::script_beyond_heads, {{"heads", m.n_heads}, {"head", c.args[0]}});
  return "";
}

// The interventions and decoding commands: each changes the state through the app, which recomputes.
// "" when (row, col) is a cell of the attention map on show, else what the map's size is: a cell past it is
// named, not silently moved to the edge.
std::string outside_the_map(const App& app, int row, int col) {
  const AttentionTrace* a = selected_attention(app.state().trace(), app.attention());
  if (!a || a->probs.empty()) return "";
  const Mat& p = a->probs[std::min<size_t>(static_cast<size_t>(app.attention().head), a->probs.size() - 1)];
  if (row < p.rows() && col < p.cols()) return "";
  return tr(T::script_no_cell, {{"row", row}, {"column", col}, {"rows", p.rows()}, {"columns", p.cols()}});
}

// The words of `text` the model reads as <unk>, as typed ('Hemd', 'Straße'), joined: "" when it knows every one.
// Text the model cannot read at all (too long, say) has no unknown words to name: the command that took it
// (set_sentence, set_reference) has already said why it was refused.
std::string unknown_words(const Model& model, const std::string& text, Side side) {
  std::vector<Token> tokens;
  try {
    tokens = encode_text(model, text, side, /*specials=*/false);
  } catch (const Error&) {
    return "";
  }
  std::string out;
  for (const Token& t : tokens)
    if (t.unknown) out += (out.empty() ? "'" : ", '") + (t.surface.empty() ? t.text : t.surface) + "'";
  return out;
}

// What a `written-for` line says against the model open: "" when they agree, else the difference in words.
std::string written_for_problem(const App& app, const std::vector<std::string>& args) {
  const AppState& state = app.state();
  if (!state.model()) return "";
  const std::string model_file = std::filesystem::path(state.model_path()).filename().string();
  if (args[0] == "model") {
    if (model_file == args[1]) return "";
    return tr(T::script_written_for_model, {{"wanted", args[1]}, {"model", model_file}});
  }
  const size_t dash = args[0].find('-');
  const std::string source = args[0].substr(0, dash), target = args[0].substr(dash + 1);
  const std::string model_source = state.model()->tokenizer.source_language, model_target = state.model()->tokenizer.target_language;
  const std::string wanted = tr(
      T::script_languages, {{"source", language_word(source)}, {"target", language_word(target)}, {"pair", args[0]}});
  if (model_source.empty() || model_target.empty())
    return tr(T::script_written_for_unnamed, {{"wanted", wanted}, {"model", model_file}});
  if (language_name(source) == language_name(model_source) && language_name(target) == language_name(model_target)) return "";
  return tr(T::script_written_for_languages,
            {{"wanted", wanted},
             {"model", model_file},
             {"languages", tr(T::script_languages, {{"source", language_word(model_source)},
                                                    {"target", language_word(model_target)},
                                                    {"pair", model_source + "-" + model_target}})}});
}

bool run_model_command(App& app, const ScriptCommand& c, std::vector<std::string>& log, const std::string& where) {
  AppState& state = app.mutable_state();
  auto report = [&](bool ok) {
    if (!ok && !state.error().empty()) log.push_back(where + state.error());
  };
  Interventions iv = state.interventions();
  try {
    if (c.name == "head-off" || c.name == "head-on") {
      const HeadRef h = parse_head_ref(c.args[0]);
      if (iv.head_off(h.kind, h.layer, h.head) != (c.name == "head-off")) toggle_head(iv, h);
      report(app.set_interventions(iv));
    } else if (c.name == "causal-mask" || c.name == "padding-mask" || c.name == "positional") {
      bool& flag = c.name == "causal-mask" ? iv.causal_mask : c.name == "padding-mask" ? iv.padding_mask
                                                                                        : iv.positional_encoding;
      flag = c.args[0] == "on";
      report(app.set_interventions(iv));
    } else if (c.name == "mask") {
      const HeadRef h = parse_head_ref(c.args[0]);
      if (!toggle_mask_cell(state.trace(), iv, h, std::stoi(c.args[1]), std::stoi(c.args[2])))
        log.push_back(where + "no cell (" + c.args[1] + ", " + c.args[2] + ") in the mask of " + c.args[0]);
      else
        report(app.set_interventions(iv));
    } else if (c.name == "reset") {
      report(app.set_interventions(Interventions{}));
    } else if (c.name == "step" || c.name == "back") {
      const int n = c.args.empty() ? 1 : std::stoi(c.args[0]);
      if (c.name == "step") state.step(n);  // n steps, one trace
      else state.step_back(n);
    } else if (c.name == "run") {
      state.run_to_end();
    } else if (c.name == "restart") {
      report(state.restart());
    } else if (c.name == "decode") {
      // decode greedy | decode sample TEMPERATURE [TOP_K [TOP_P [SEED]]] | decode beam WIDTH [ALPHA]
      std::istringstream words(c.args[0]);
      std::string strategy;
      words >> strategy;
      DecodeOptions o = state.decode_options();
      if (strategy == "greedy") {
        o.strategy = DecodeStrategy::Greedy;
      } else if (strategy == "sample") {
        o.strategy = DecodeStrategy::Sample;
        words >> o.sampling.temperature;
        if (!words.eof()) words >> o.sampling.top_k;
        if (!words.eof()) words >> o.sampling.top_p;
        if (!words.eof()) words >> o.seed;
      } else if (strategy == "beam") {
        o.strategy = DecodeStrategy::Beam;
        words >> o.beam_width;
        if (!words.eof()) words >> o.length_penalty;
      } else {
        log.push_back(where + "decode takes greedy, sample TEMPERATURE [TOP_K [TOP_P [SEED]]] or beam WIDTH [ALPHA]");
        return true;
      }
      if (words.fail()) {
        log.push_back(where + "decode: cannot read the numbers in '" + c.args[0] + "'");
        return true;
      }
      report(state.set_decode_options(o));
    } else if (c.name == "reference") {
      report(state.set_reference(c.args[0] == "-" ? "" : c.args[0]));
      if (state.model() && c.args[0] != "-")
        if (const std::string unknown = unknown_words(*state.model(), c.args[0], Side::Target); !unknown.empty())
          log.push_back(where + tr(T::script_unknown_words_reference, {{"words", unknown}}));
    } else if (c.name == "force") {
      if (!state.model()) return true;
      const std::optional<int> id = state.model()->tgt_vocab.find(c.args[1]);
      if (!id) log.push_back(where + "'" + c.args[1] + "' is not in the target vocabulary");
      else report(state.force_token(std::stoi(c.args[0]), *id));
    } else if (c.name == "mask-token" || c.name == "unmask-token") {
      // (each says what it wants, not a toggle: a lesson reads the same run twice)
      const int position = std::stoi(c.args[0]);
      const std::vector<int>& masked = state.masked_positions();
      if (std::binary_search(masked.begin(), masked.end(), position) != (c.name == "mask-token")) {
        const bool ok = state.toggle_mask(position);
        report(ok);
        if (ok && c.name == "mask-token") app.set_output_position(position);
      }
      else if (c.name == "mask-token" && !state.why_not_maskable(position).empty() &&
               !std::binary_search(masked.begin(), masked.end(), position))
        log.push_back(where + state.why_not_maskable(position));
    } else {
      return false;
    }
  } catch (const Error& e) {
    log.push_back(where + e.what());
  }
  return true;
}

}  // namespace


ScriptRunner::ScriptRunner(Script script, bool interactive) : script_(std::move(script)), interactive_(interactive) {
  pauses_ = static_cast<int>(std::count_if(script_.commands.begin(), script_.commands.end(),
                                           [](const ScriptCommand& c) { return c.name == "pause"; }));
}

void ScriptRunner::publish(App& app) const {
  if (!interactive_) return;
  LessonStatus status;
  status.active = true;
  status.waiting = waiting_;
  status.finished = finished();
  status.pause = pause_;
  status.pauses = pauses_;
  app.set_lesson_status(status);
}

void ScriptRunner::restart_for_replay(App& app, int target_pause) {
  skipped_.clear();
  notes_.clear();
  // The lesson's own state starts over; the app keeps the rest, which the replayed commands set again.
  next_ = 0;
  pause_ = 0;
  wait_frames_ = 0;
  pending_export_.reset();
  mouse_.reset();
  app.set_caption("");
  // Interventions and decoding start from the model as trained: `mask` flips a cell, so a replay over a
  // changed state would undo what it redoes.
  app.set_interventions(Interventions{});
  app.mutable_state().set_decode_options(DecodeOptions{});
  replay_to_ = target_pause;
}

void ScriptRunner::skip(const std::string& where, const std::string& what, std::vector<std::string>& log) {
  if (!replay_to_)
    log.push_back(where + tr(T::script_skipped, {{"what", what}}));  // (a replay only rebuilds the notes)
  skipped_.push_back(what);
}

void ScriptRunner::note(const std::string& where, const std::string& what, std::vector<std::string>& log) {
  if (!replay_to_) log.push_back(where + what);
  notes_.push_back(what);
}

void ScriptRunner::before_frame(App& app, std::vector<std::string>& log) {
  if (quit_) return;
  if (interactive_ && finished()) {  // at the end, Back returns to the last pause
    if (app.take_lesson_step() < 0 && pause_ > 0) restart_for_replay(app, pause_);
    else return publish(app);
  }
  if (waiting_) {
    const int step = app.take_lesson_step();
    if (step == 0) return publish(app);
    waiting_ = false;
    if (step < 0) restart_for_replay(app, std::max(1, pause_ - 1));
  }
  if (wait_frames_ > 0) {
    --wait_frames_;
    return publish(app);
  }
  if (pending_export_) {  // the screen has settled: the next frame exports
    app.request_export(*pending_export_);
    pending_export_.reset();
    return publish(app);
  }
  // A model loads in the background (the app's first, or a `model` command's): frames go on, commands wait.
  if (wait_for_load_ && app.loading()) return publish(app);
  if (app.state().busy()) return publish(app);  // a decoding off the frame thread finishes first
  // So does a view's work off the frame thread (the attributions of a long sentence take seconds), so that a
  // screenshot or a layout shows its result; at most 6000 frames, then the script goes on with what shows.
  if (a_view_is_computing() && view_wait_frames_ < 6000) {
    ++view_wait_frames_;
    return publish(app);
  }
  view_wait_frames_ = 0;
  if (std::string late = app.mutable_state().take_late_failure(); !late.empty())
    log.push_back("script line " + std::to_string(busy_line_) + ": " + late);
  if (wait_train_to_ >= 0) {  // wait-train: frames go on while the run trains
    Training& training = app.training();
    if (training.running() && training.status().step < wait_train_to_) {
      if (!training.paused()) return publish(app);
      // A paused run takes no steps: waiting would never end. Go on with the weights of this moment.
      log.push_back("script line " + std::to_string(wait_train_line_) + ": wait-train " + std::to_string(wait_train_to_) +
                    ": the run is paused at step " + std::to_string(training.status().step) +
                    " and takes no steps (train resume before wait-train); going on");
      wait_train_to_ = 0;  // done waiting: the weights of this moment are shown, as at the step asked for
    }
    if (!wait_train_refreshed_) {  // the weights of this moment, shown before the next command
      training.refresh_now();
      wait_train_refreshed_ = true;
    }
    if (training.refresh_pending()) return publish(app);
    wait_train_to_ = -1;
    wait_train_refreshed_ = false;
    if (training.status().state == TrainingSession::State::Failed)
      log.push_back("script line " + std::to_string(wait_train_line_) + ": training failed: " + training.status().message);
    return publish(app);
  }
  wait_for_load_ = false;
  if (loading_line_ > 0) {
    if (!app.last_load_error().empty())
      log.push_back("script line " + std::to_string(loading_line_) + ": " + app.last_load_error());
    loading_line_ = 0;
  }
  while (next_ < script_.commands.size()) {
    const ScriptCommand& c = script_.commands[next_++];
    const std::string where = "script line " + std::to_string(c.line) + ": ";
    if (replay_to_ && is_output_or_time(c.name)) continue;
    if (dry_run_ && (c.name == "screenshot" || c.name == "layout" || c.name == "quit" || c.name.rfind("export-", 0) == 0)) {
      // Not written, but held to the rules the lesson will meet (the folder it may write to, no file replaced,
      // no link followed): what --lesson would refuse, the check reports.
      if (c.name != "quit" && !c.args.empty()) {
        const std::string refused = check_output_path(c.args[0], write_rules());
        log.push_back(where + c.name + " " + c.args[0] + ": " + (refused.empty() ? "not written in a check" : refused));
      }
      continue;
    }
    if (dry_run_ && (c.name == "train" || c.name == "wait-train")) {  // a check trains nothing
      if (c.args[0] == "start") log.push_back(where + "train start " + c.args[1] + ": not run in a check");
      continue;
    }
    if (!c.known) {
      skip(where, c.problem.empty() ? tr(T::script_unknown_command, {{"command", c.name}}) : c.problem, log);
      continue;
    }
    if (const std::string beyond = beyond_the_model(app, c); !beyond.empty()) {
      skip(where, tr(T::script_beyond, {{"command", c.name}, {"argument", c.args[0]}, {"problem", beyond}}), log);
      continue;
    }
    try {  // one boundary: a command the core refuses is reported against its line, and the script goes on
      if (c.name == "pause") {
        ++pause_;
        last_pause_line_ = c.line;
        // What this part of the lesson skipped goes under its caption, for the teacher to see at the pause.
        // ("(skipped: a; b)": the items joined by the table's separator, the list in the table's sentence)
        const auto listed = [](const std::vector<std::string>& items) {
          std::string out;
          for (const std::string& s : items) out += (out.empty() ? "" : tr(T::script_list_separator)) + s;
          return out;
        };
        if (!skipped_.empty() && interactive_) {
          const std::string note = tr(T::script_caption_skipped, {{"items", listed(skipped_)}});
          app.set_caption(app.caption().empty() ? note : app.caption() + "\n" + note);
        }
        // What the lesson found untrue of this model (its languages, words it does not know), for the teacher.
        if (!notes_.empty() && interactive_) {
          const std::string note = tr(T::script_caption_note, {{"items", listed(notes_)}});
          app.set_caption(app.caption().empty() ? note : app.caption() + "\n" + note);
        }
        skipped_.clear();
        notes_.clear();
        if (!interactive_) return;  // a script does not wait: one frame, then on
        if (replay_to_ && pause_ < replay_to_) continue;
        replay_to_ = 0;
        waiting_ = true;
        return publish(app);
      } else if (c.name == "caption") {
        app.set_caption(c.args.empty() ? "" : c.args[0]);
      } else if (c.name == "title") {
        // the lessons popup's name for the lesson: nothing to do when it plays
      } else if (c.name == "language") {
        language_from_code(c.args[0], &app.view().language);  // the grammar let only en, ko and zh through
      } else if (c.name == "present") {
        app.view().present = c.args[0] == "on";
      } else if (c.name == "fullscreen") {
        app.view().fullscreen = c.args[0] == "on";
      } else if (c.name == "ui-scale") {
        parse_ui_scale(c.args[0], &app.view().ui_scale);
      } else if (c.name.rfind("export-", 0) == 0) {
        ExportRequest request;
        request.kind = c.name == "export-png" ? ExportKind::WindowPng
                       : c.name == "export-panel" ? ExportKind::PanelPng
                       : c.name == "export-csv" ? ExportKind::Csv : ExportKind::Npy;
        request.path = c.args[0];  // replace stays false: a script never overwrites
        request.allowed_folder = write_folder_;  // and writes only where the user allowed
        pending_export_ = request;
        wait_frames_ = 2;  // let the layout settle, as for a screenshot
        return publish(app);
      } else if (c.name == "model") {
        app.open_model(script_model_path(c.args[0]));  // loads in the background: the next commands wait for it
        loading_line_ = c.line;
        wait_for_load_ = true;
      } else if (c.name == "open") {
        app.open_model(script_model_path(c.args[0]));  // loads in the background while the script goes on
      } else if (c.name == "sentence") {
        if (!app.set_sentence(c.args[0])) log.push_back(where + app.state().error());
        // A lesson's captions speak of the sentence's words: a word the model reads as <unk> makes them false (a
        // lesson and its check say so; a script, which has no captions to be false, goes on quietly).
        if (app.state().model() && (interactive_ || dry_run_))
          if (const std::string unknown = unknown_words(*app.state().model(), c.args[0],
                                                        app.state().decoder_only() ? Side::Target : Side::Source);
              !unknown.empty())
            note(where, tr(T::script_unknown_words_sentence, {{"words", unknown}}), log);
      } else if (c.name == "written-for") {
        if (const std::string problem = written_for_problem(app, c.args); !problem.empty()) note(where, problem, log);
      } else if (c.name == "stage") {
        Stage stage;
        if (!stage_from_name(c.args[0], &stage))
          log.push_back(where + "unknown stage '" + c.args[0] + "'");
        else if (!app.go_to(c.args[0]))  // a stage the model's shape lacks: its counterpart, and why
          log.push_back(where + app.state().error());
      } else if (c.name == "attention") {
        app.select_head(parse_head_ref(c.args[0]));
      } else if (c.name == "layer") {  // numbered from 1, as everywhere a person types one
        app.select_layer(std::stoi(c.args[0]) - 1);
      } else if (c.name == "head") {
        app.select_head_index(std::stoi(c.args[0]) - 1);
      } else if (c.name == "hover") {
        // The cell's centre on the attention heatmap of the last frame.
        const int row = std::stoi(c.args[0]), col = std::stoi(c.args[1]);
        bool found = false;
        for (const HeatmapPlacement& p : heatmap_placements()) {
          const HeatmapWindow& w = p.window;  // a zoomed map shows part of its cells
          if (p.name == "attention" && row < p.rows && col < p.cols && col + 0.5f >= w.col0 &&
              col + 0.5f <= w.col0 + w.cols && row + 0.5f >= w.row0 && row + 0.5f <= w.row0 + w.rows) {
            mouse_ = ImVec2(p.min.x + (col + 0.5f - w.col0) * (p.max.x - p.min.x) / w.cols,
                            p.min.y + (row + 0.5f - w.row0) * (p.max.y - p.min.y) / w.rows);
            found = true;
          }
        }
        if (!found) log.push_back(where + "no attention heatmap with cell (" + c.args[0] + ", " + c.args[1] + ") on screen");
        wait_frames_ = 2;  // the tooltip appears on the next frames
        return;
      } else if (c.name == "unhover") {
        mouse_ = ImVec2(-FLT_MAX, -FLT_MAX);  // ImGui's "no mouse": nothing hovered, whatever the real pointer does
        return;
      } else if (c.name == "wait") {
        wait_frames_ = std::stoi(c.args[0]);
        return;
      } else if (c.name == "screenshot") {
        screenshot_ = c.args[0];
        wait_frames_ = 2;  // let the layout settle (ImGui sizes some widgets from the previous frame)
        return;
      } else if (c.name == "layout") {
        layout_ = c.args[0];
        return;
      } else if (c.name == "pad") {
        if (!app.mutable_state().set_source_padding(std::stoi(c.args[0]))) log.push_back(where + app.state().error());
      } else if (c.name == "position") {  // the output stage's decoder position
        app.set_output_position(std::stoi(c.args[0]));
      } else if (c.name == "explain") {
        fold_explanations(c.args[0] == "off");
      } else if (c.name == "view") {
        app.set_attention_view(c.args[0] == "lines" ? AttentionView::Lines : AttentionView::Heatmap);
      } else if (c.name == "output-view") {
        app.set_output_view(c.args[0] == "lens"  ? OutputView::Lens
                            : c.args[0] == "why" ? OutputView::Why
                                                 : OutputView::Probabilities);
      } else if (c.name == "why-method") {
        app.set_why_method(parse_attribution_method(c.args[0]));
      } else if (c.name == "why-part") {
        app.set_why_part(c.args[0] == "sentence" ? WhyPart::Sentence : WhyPart::Word);
      } else if (c.name == "expand") {
        if (c.args[0] == "off") app.collapse_attention_cell();
        else if (const std::string problem = outside_the_map(app, std::stoi(c.args[0]), std::stoi(c.args[1])); !problem.empty())
          log.push_back(where + "expand: " + problem);
        else app.expand_attention_cell(std::stoi(c.args[0]), std::stoi(c.args[1]));
        wait_frames_ = 2;  // the column lays out on the next frames
        return;
      } else if (c.name == "zoom") {
        if (c.args.size() == 3)
          if (const std::string problem = outside_the_map(app, std::stoi(c.args[1]), std::stoi(c.args[2])); !problem.empty())
            log.push_back(where + "zoom: " + problem + " (zoomed around the map's corner)");
        app.zoom_attention(std::strtof(c.args[0].c_str(), nullptr), c.args.size() == 3 ? std::stoi(c.args[1]) : -1,
                           c.args.size() == 3 ? std::stoi(c.args[2]) : -1);
        wait_frames_ = 2;
        return;
      } else if (c.name == "show") {
        if (!app.show(c.args[0])) log.push_back(where + "unknown view '" + c.args[0] + "' (model-info, open-model, stage)");
      } else if (c.name == "quit") {
        quit_ = true;
        return;
      } else if (c.name == "train") {
        Training& training = app.training();
        if (c.args[0] == "start") {
          std::string error;
          if (replay_to_ && training.running()) continue;  // a lesson stepping back keeps the run it started
          if (training.stopping()) {  // a `train stop` just before: the run ends (its step finishes) first
            --next_;
            return publish(app);
          }
          // With MODEL, the run saves there (under the folder scripts may write) and resumes from its checkpoint.
          if (!training.start(c.args[1], app.training_data_dir(), 0, &error, c.args.size() > 2 ? c.args[2] : "",
                              write_folder_))
            log.push_back(where + error);
        } else if (!training.session()) {
          log.push_back(where + "train " + c.args[0] + ": no training run (train start RECIPE first)");
        } else if (c.args[0] == "pause") {
          training.pause();
        } else if (c.args[0] == "resume") {
          training.resume();
        } else {
          training.stop();
        }
      } else if (c.name == "wait-train") {
        if (!app.training().session()) {
          log.push_back(where + "wait-train: no training run (train start RECIPE first)");
        } else {
          wait_train_to_ = std::stoi(c.args[0]);
          wait_train_line_ = c.line;
          return publish(app);
        }
      } else if (c.name == "snapshot") {
        Training& training = app.training();
        AppState& state = app.mutable_state();
        bool ok = true;
        state.clear_error();
        if (c.args[0] == "file") {
          ok = training.show_file_model(state) || training.file_model_shown(state);
          if (!ok && state.error().empty()) state.set_error("no model file to go back to");
        } else {
          if (!training.timeline() || training.timeline_loading()) {  // the shipped classroom run, read now
            training.want_shipped_timeline();
            training.finish_loading();
            training.poll(state);
          }
          ok = c.args[0] == "latest" ? training.show_latest_snapshot(state)
                                     : training.show_snapshot(state, std::stoi(c.args[0]));
        }
        if (!ok) log.push_back(where + "snapshot " + c.args[0] + ": " + state.error());
      } else if (!run_model_command(app, c, log, where)) {
        log.push_back(where + "unhandled command '" + c.name + "'");
      }
    } catch (const Error& e) {
      log.push_back(where + e.what());
    }
    // model, sentence, stage, attention, layer, head, ...: draw a frame before the next command (replaying
    // a lesson: straight on, unless a decoding still runs: the next command waits for it).
    busy_line_ = c.line;
    if (replay_to_ && !app.state().busy()) continue;
    return publish(app);
  }
  replay_to_ = 0;
  publish(app);
}

std::optional<std::string> ScriptRunner::screenshot_due() {
  if (!screenshot_ || wait_frames_ > 0) return std::nullopt;
  std::optional<std::string> out = std::move(screenshot_);
  screenshot_.reset();
  return out;
}

std::optional<std::string> ScriptRunner::layout_due() {
  if (!layout_ || wait_frames_ > 0) return std::nullopt;
  std::optional<std::string> out = std::move(layout_);
  layout_.reset();
  return out;
}

}  // namespace sf::gui
