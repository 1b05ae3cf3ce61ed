// Watching a model learn, in the app: a training run on worker threads (core/train/session.h) whose weights the
// app shows as they change, and the timeline of a run (core/train/timeline.h), whose snapshots every stage can
// show: the model as it was at that step. The Training stage (panels/training_panel.h) draws it; the script's
// `train`, `snapshot` and `wait-train` commands drive it.
//
// What is shown is always AppState's model: showing a snapshot, or a refresh of the live weights, swaps the
// weights in (AppState::use_weights: the sentence and the interventions stay), and every stage follows. The
// model file that was opened stays in memory, and "Back to the model file" shows it again. Training never
// writes a file unless asked (Save timeline); never over the open model file.
#pragma once
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gui/app_state.h"
#include "gui/text/text.h"
#include "train/session.h"
#include "train/timeline.h"

namespace sf::gui {

// A training run the app offers: a size and its hyperparameters (the data folder is filled in at the start).
// options.model.stacks says what it trains: a translator (EncoderDecoder), a language model (DecoderOnly) or a
// masked language model (EncoderOnly).
struct TrainingRecipe {
  std::string id;     // what `train start` takes: "classroom", "de-en", "gpt-classroom", "bert-classroom"
  T title;            // for the recipe picker (the string table's entry)
  T about;            // one line: the model's size and how long it takes
  TrainOptions options;
};
const std::vector<TrainingRecipe>& training_recipes();
const TrainingRecipe* find_training_recipe(const std::string& id);  // null for an unknown id
std::string training_recipe_ids();  // "classroom, de-en, gpt-classroom, bert-classroom", for messages
// What a language model's weights continue when they replace a translator (or no model) on show: the start of the
// shipped example's caption, so the next word to learn is "shirt".
inline constexpr const char* kTrainingPrompt = "a man in an orange";
// What a masked language model's weights fill in when they replace another shape on show: the same caption with
// its next word blanked, so the blank to learn is "shirt" again (the word tokenizer keeps "[MASK]" whole).
inline constexpr const char* kTrainingBlankSentence = "a man in an orange [MASK] is standing on the street .";

// How peaked an attention map is: the mean over its rows (queries) of the entropy of each row, in nats; blocked
// cells (NaN, zero probability) count as zero. A uniform row over n keys gives ln n; a row on one key gives 0.
double mean_row_entropy(const Mat& probabilities);

// What the user did on the Training stage (the panel asks; the app does it with Training::apply).
struct TrainingAsk {
  enum class Do { Start, Pause, Resume, Stop, ShowSnapshot, FollowLive, ShowFileModel, SaveTimeline };
  explicit TrainingAsk(Do d) : what(d) {}
  Do what;
  std::string recipe;  // Start: the recipe's id
  int threads = 0;     // Start
  std::string path;    // Start: where the run saves ("": nothing written); SaveTimeline: the file
  int snapshot = -1;   // ShowSnapshot: which
};

class Training {
 public:
  // How often the live weights are shown again: kRefreshSeconds after the last refresh, and never before the
  // views have shown a settled result (no decoding in flight) for that long. A decoding slower than the interval
  // (a beam of 64 on a long sentence) would otherwise be restarted by the next weights the moment it ends: the
  // result would flash for one frame, and a script waiting for the views to settle would wait for ever.
  static constexpr double kRefreshSeconds = 3.0;

  Training() = default;
  // Where the next run's steps compute (--device; the views follow it too: AppState::device).
  void set_device(DeviceRequest device) { device_ = device; }
  Training(const Training&) = delete;
  Training& operator=(const Training&) = delete;
  ~Training();  // stops a run and waits for its worker

  // [SECTION] the model file and the timeline
  // A model file was opened: it is what "Back to the model file" shows, and a timeline beside it
  // (timeline_path_for) is read in the background and becomes the timeline on show.
  void set_file_model(std::shared_ptr<const Model> model, const std::string& path);
  // The shipped classroom run (assets/models/classroom-de-en.timeline.safetensors), read in the background,
  // when no other timeline is there yet: what the Training stage shows on first start.
  void want_shipped_timeline();
  // Reads `path` in the background as the timeline on show (replacing one from a file; not a live run's).
  void open_timeline(const std::string& path);
  bool timeline_loading() const { return loading_.valid(); }
  void finish_loading();  // blocks until a timeline being read is in (scripts, tests)
  const TrainingTimeline* timeline() const { return timeline_.get(); }
  const std::string& timeline_source() const { return timeline_source_; }  // its file, or "live run"
  const std::string& timeline_error() const { return timeline_error_; }    // the last timeline that failed
  // The snapshot on show, or -1 (the model file, or the live weights).
  int shown_snapshot() const { return shown_snapshot_; }
  // Shows snapshot `index` in every stage; false (state.error() set, what is shown kept) for a bad index.
  bool show_snapshot(AppState& state, int index);
  bool show_latest_snapshot(AppState& state);
  // Shows the model file again (false when there is none, or it is already shown).
  bool show_file_model(AppState& state);
  bool file_model_shown(const AppState& state) const { return file_model_ && state.model() == file_model_; }
  // "step 306 of 919 (epoch 2)" for the model line while a snapshot or the live weights are shown; "" otherwise.
  std::string shown_label(const AppState& state) const;
  // For Model info: where the weights on show come from and how they are stored ("" for the model file's).
  std::string weights_note(const AppState& state) const;
  // Writes the timeline on show to `path` (never over the open model file or an existing file unless
  // `replace`); "" or the problem.
  std::string save_timeline_to(const std::string& path, bool replace, const std::string& allowed_folder = "") const;

  // Does what the Training stage asked: `data_dir` is where a run reads Multi30k. A start's or a save's outcome is
  // message() (the panel shows it beside its buttons); a snapshot that cannot be shown sets state.error().
  void apply(const TrainingAsk& ask, AppState& state, const std::string& data_dir);
  struct Message {
    bool ok = false;
    std::string text;  // "" : nothing to say
  };
  const Message& message() const { return message_; }

  // [SECTION] live training
  // Starts the recipe `recipe_id` on `threads` threads (0: all but one core) on the data in `data_dir`; false
  // with `error` set (an unknown recipe, no data, a run already going, an output it may not write). The run
  // keeps its snapshots; the app shows its weights every kRefreshSeconds. It writes nothing, unless `save_to`
  // names a model file: then the model (best validation BLEU so far) and its checkpoint (SAVE_TO.checkpoint)
  // are written after every epoch, atomically, and a run started again with the same name resumes from that
  // checkpoint (at the last finished epoch), as `stepformer-cli train` does. `save_to` must not exist without
  // its checkpoint (a user's file is never replaced), nor be the open model file, and lies under
  // `allowed_folder` when one is given (scripts).
  bool start(const std::string& recipe_id, const std::string& data_dir, int threads, std::string* error,
             const std::string& save_to = "", const std::string& allowed_folder = "");
  bool resumed() const { return resumed_; }  // the run started from a checkpoint
  bool running() const;  // a run exists and has not ended
  bool paused() const;
  void pause();
  void resume();
  void stop();
  bool stopping() const { return session_ && session_->stopping(); }  // stop asked, the run not yet ended
  const TrainingSession* session() const { return session_.get(); }
  const std::string& recipe_id() const { return recipe_id_; }
  // The last status, the whole loss curve, and the step whose weights are on show (-1: none yet).
  const TrainingSession::Status& status() const { return status_; }
  const std::vector<TrainingSession::LossPoint>& losses() const { return losses_; }
  int64_t live_step_shown() const { return live_step_shown_; }
  // Whether the live weights are shown as they change (from start() until a snapshot or the model file is
  // shown); follow_live() goes back to them.
  bool following_live() const { return follow_live_; }
  void follow_live() { follow_live_ = session_ != nullptr; last_refresh_ = {}; live_step_shown_ = -1; }
  double seconds_since_refresh() const;
  // Once a frame, never blocking: a timeline read in the background is taken; a live run's status is read, its
  // new snapshots join the timeline, and, while following the run, its weights are asked for every
  // kRefreshSeconds (the worker copies them after its step in progress) and shown once they come and the views
  // have been settled (not decoding) for kRefreshSeconds.
  void poll(AppState& state);
  // Shows the live weights as soon as they can be had (follows the run again); refresh_pending() until then
  // (the script's wait-train waits for it).
  void refresh_now();
  // Only the refresh asked for counts: the regular ones, due every kRefreshSeconds while the run goes on, would
  // keep a waiting script waiting for ever when each decoding of the views takes longer than that.
  bool refresh_pending() const { return force_refresh_; }

 private:
  // state.use_weights, with kTrainingPrompt as the sentence when a decoder-only model replaces another shape.
  bool use_weights_fitting_sentence(AppState& state, std::shared_ptr<const Model> model, const std::string& source);
  Message message_;  // the last start or save (apply)
  std::shared_ptr<const Model> file_model_;
  std::string file_model_path_;
  std::shared_ptr<TrainingTimeline> timeline_;
  std::string timeline_source_, timeline_error_;
  bool timeline_live_ = false;  // timeline_ is the live run's (no file replaces it)
  bool shipped_wanted_ = false;
  struct Loaded {
    std::string path;
    std::shared_ptr<TrainingTimeline> timeline;
    std::string error;
  };
  std::future<Loaded> loading_;
  int shown_snapshot_ = -1;
  // Live training.
  std::unique_ptr<TrainingSession> session_;
  std::string recipe_id_;
  TrainingSession::Status status_;
  std::vector<TrainingSession::LossPoint> losses_;
  std::shared_ptr<const Model> live_model_;  // the live weights last shown
  int64_t live_step_shown_ = -1;
  bool follow_live_ = false;
  bool resumed_ = false;
  DeviceRequest device_ = DeviceRequest::Auto;
  int threads_before_ = 0;          // the core's threads before the run set its own; restored when it ends
  bool force_refresh_ = false;      // refresh_now(): ask at once, whatever the time since the last refresh
  bool weights_requested_ = false;  // asked the worker for a copy; it has not come yet
  std::chrono::steady_clock::time_point last_refresh_{};
  std::chrono::steady_clock::time_point last_busy_{};  // the last poll that saw a decoding in flight
};

}  // namespace sf::gui
