// Scripts: `stepformer --script FILE` runs commands one per line, for tests and for teachers' prepared
// walkthroughs. Blank lines and lines starting with # are ignored.
//
//   model PATH               open a model file, in the background as the Open dialog does; the script waits
//                            for it (a bad file shows the error dialog, is reported, the current model stays)
//   open PATH                start opening a model file and go on at once (as a click on Open: the next
//                            commands run while it loads; for screenshots of the loading indicator)
//   sentence TEXT...         set the source sentence and translate it
//   stage NAME               go to a stage (the names of --stage)
//   attention KIND.L.H       select an attention head (KIND: enc, dec, cross) and open its stage; layers and
//                            heads are numbered from 1, as in the paper (enc.1.4: encoder layer 1, head 4)
//   layer L / head H         select a layer / a head (from 1); rows, columns and positions count from 0
//   hover ROW COL            put the mouse over a cell of the attention heatmap on screen
//   unhover                  take the mouse off the window (whatever the real pointer does)
//   wait N                   render N frames, at most 36000 (a frame is drawn between any two commands anyway)
//   screenshot PATH          save a PNG of the window (after the screen has settled)
//   layout PATH              write where each heatmap was drawn, as JSON (as --layout-json)
// A script or lesson never replaces a file and writes (screenshot, layout, export-*) only under the folder the
// app was started in, or the one --allow-write names: lessons are shared, and must not write elsewhere.
//   present on|off           presentation mode (large type, high contrast, the stage alone)
//   fullscreen on|off        full screen on the primary monitor
//   ui-scale X               the UI scale, 0.5 .. 4 (fonts re-rendered at the new size)
//   caption TEXT...          a caption in large type over the bottom of the stage ("caption" alone hides it)
//   pause                    a lesson (--lesson) waits here for Space / Right / PageDown; --script goes on
//   export-png PATH          the window as PNG         } written atomically; an existing file is never
//   export-panel PATH        the stage panel as PNG    } replaced (the script logs that and goes on)
//   export-csv PATH          the panel's main tensor (its first heatmap) as CSV
//   export-npy PATH          ... as NumPy .npy (float32, shape (rows, cols))
//   show VIEW                model-info (the model-info panel), open-model (the Open dialog), stage (back to
//                            the stage; closes dialogs)
//   quit                     exit (exit code 0; a script that ends without quit leaves the app open)
// Interventions (each recomputes the translation and every view):
//   head-off KIND.L.H / head-on KIND.L.H     switch a head off / on
//   causal-mask on|off, padding-mask on|off, positional on|off
//   mask KIND.L.H ROW COL    flip one cell of the head's mask (blocked <-> allowed), as a click in "paint mask"
//   reset                    every intervention back to the model as trained
// Decoding:
//   step [N] / back [N]      N tokens forward / back (default 1, at most 10000); run: to <eos>; restart: to <bos>
//   decode greedy | decode sample TEMPERATURE [TOP_K [TOP_P [SEED]]] | decode beam WIDTH [ALPHA]
//                            (WIDTH 1 to 64: decode/decoder.h kMaxBeamWidth)
//   reference TEXT           teacher forcing with this reference translation ("reference -": free running)
//   force POS WORD           force WORD at output position POS; the rest of the translation follows
//   output-view probabilities|lens   the output stage's view: the probabilities, or each layer's guess (logit lens)
//   position POS             the output stage shows decoder position POS (from 0; after `stage output`: arriving
//                            at the stage shows the last one); an encoder-only model's: sentence position POS
// Fill in the blank (an encoder-only model with a [MASK] token, config mask_id):
//   mask-token N             token N of the sentence as read (0: [CLS]) reads [MASK] in place of its word; the
//                            output stage then shows position N. A model without [MASK], [CLS], [SEP] or <pad>,
//                            or N past the sentence: the script logs why and goes on
//   unmask-token N           token N's word back
// Training (gui/training.h, the Training stage):
//   train start RECIPE [MODEL]  start a live run (RECIPE: classroom, de-en, gpt-classroom or bert-classroom) on Multi30k (--data); the views
//                            show its weights every few seconds. With MODEL (under the folder scripts may write)
//                            the model and MODEL.checkpoint are written after each epoch, and a start with the
//                            same MODEL resumes from that checkpoint
//   train pause | train resume | train stop
//   wait-train STEPS         wait (frames go on) until the run has taken STEPS steps or ended, then show its
//                            weights of that moment
//   snapshot N | latest | file   show snapshot N (from 0) of the timeline on show (the shipped classroom run when
//                            there is no other), its last one, or the model file again: every stage follows
//
// What a lesson is written for (checked against the model open, in the app and by --check-lesson; nothing loads):
//   written-for SRC-TGT        its languages, as codes (de-en)
//   written-for model NAME     its model, by file name (de-en.safetensors)
// A lesson's every `sentence` (and `reference`) is checked too: a word the model reads as <unk> is named.
//
// A lesson is parsed leniently: a command this version does not know is reported when it is reached and
// skipped, so a lesson written for a newer Stepformer still runs. A script's unknown command is an error.
// Every number has a ceiling (kMaxScriptCount unless named above); a file is at most kMaxScriptBytes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/app.h"
#include "gui/script/script_parse.h"

namespace sf::gui {

// Runs a script one step per frame against the app. Interactive (a lesson): `pause` waits until the app
// reports a step (Space / Right / PageDown, or the prompt's Next); a step back replays the lesson from its
// start, without frames, screenshots or exports, up to the previous pause.
class ScriptRunner {
 public:
  explicit ScriptRunner(Script script, bool interactive = false);
  // A check (--check-lesson): screenshots, layouts and exports are reported, not written; `quit` is ignored.
  void set_dry_run(bool dry) { dry_run_ = dry; }
  // The folder the script's screenshot, layout and export commands may write under (--allow-write; the
  // current folder by default). They never replace a file.
  void set_write_folder(std::string folder) { write_folder_ = std::move(folder); }
  WriteRules write_rules() const { return {.replace = false, .inputs = {}, .allowed_folder = write_folder_}; }
  // The line of the pause passed last (0 before the first).
  int last_pause_line() const { return last_pause_line_; }

  // Before building a frame: runs commands until one needs the frame drawn. Messages (errors of a command,
  // e.g. a model that does not load) go to `log`.
  void before_frame(App& app, std::vector<std::string>& log);
  // The mouse position a `hover` asked for (framebuffer pixels), while it applies.
  std::optional<ImVec2> mouse() const { return mouse_; }
  // After the frame is rendered: a screenshot / layout path to write now, if one is due.
  std::optional<std::string> screenshot_due();
  std::optional<std::string> layout_due();
  bool quit() const { return quit_; }
  bool finished() const {
    return next_ >= script_.commands.size() && wait_frames_ == 0 && !pending_export_ && !waiting_;
  }
  bool waiting() const { return waiting_; }
  int pauses_passed() const { return pause_; }
  int pauses() const { return pauses_; }  // in the whole script
  bool interactive() const { return interactive_; }  // a lesson (waits at its pauses), not a script
  // A lesson started in a running app (the Lessons button) starts from what its first line assumes: no caption,
  // the model as trained (no interventions), greedy decoding; as a step back to its start does.
  void start_in(App& app) { restart_for_replay(app, 0); }

 private:
  void restart_for_replay(App& app, int target_pause);
  void skip(const std::string& where, const std::string& what, std::vector<std::string>& log);
  // Something the lesson says that is untrue of the model open (its languages, a word it does not know): logged
  // (a problem for --check-lesson) and shown under the caption at the next pause.
  void note(const std::string& where, const std::string& what, std::vector<std::string>& log);
  void publish(App& app) const;  // the lesson's status, for the prompt and the keys
  Script script_;
  bool interactive_ = false;
  std::string write_folder_ = ".";
  size_t next_ = 0;
  int wait_frames_ = 0;
  int view_wait_frames_ = 0;  // frames waited for a view computing off the frame thread (a_view_is_computing)
  int pause_ = 0, pauses_ = 0;  // pauses reached so far, and in the whole script
  bool waiting_ = false;
  int replay_to_ = 0;           // replaying up to this pause (1-based); 0: not replaying
  std::optional<ExportRequest> pending_export_;  // asked for once the screen has settled
  std::optional<ImVec2> mouse_;
  std::optional<std::string> screenshot_, layout_;
  bool quit_ = false;
  bool wait_for_load_ = true;  // at start (the app's first model) and after `model`: commands wait for it
  int loading_line_ = 0;       // the line of a `model` command whose file is loading
  int64_t wait_train_to_ = -1;  // wait-train: the step the live run must reach; -1: not waiting
  int wait_train_line_ = 0;
  bool wait_train_refreshed_ = false;  // asked for the weights of the step reached
  int busy_line_ = 0;          // the line of the last command that changed the model, the sentence or the decoding
  bool dry_run_ = false;
  int last_pause_line_ = 0;
  std::vector<std::string> skipped_;  // what was skipped since the last pause (shown under its caption)
  std::vector<std::string> notes_;    // what the lesson says that is untrue of this model, since the last pause
};

}  // namespace sf::gui
