// Loading a model file off the frame thread. The parse and every check of sf::load_model (mmap, header,
// metadata, shapes, finite weights) run on a worker thread; the frame thread polls once per frame and, when the
// result is in, swaps the model in through AppState::use_model (the recompute of the sentence needs the
// frame thread's state). The model is immutable once loaded, so nothing is shared while the worker runs.
#pragma once
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "util/error.h"

namespace sf::gui {

struct LoadedModel {
  std::string path;
  std::shared_ptr<const Model> model;  // null on failure
  std::string error;                   // "" or the problem: a core error's own text ("[load_model] ..."), which
                                       // the app puts into its kind's sentence (gui/app_state.h error_text)
  std::optional<ErrorKind> error_kind;  // set for the core's typed errors (sf::Error)
  std::optional<Error> core_error;      // the core's error itself, which the app words (gui/app_state.h error_text)
  std::vector<std::string> warnings;   // tensors the family does not know, skipped
  double seconds = 0;                  // how long the parse took
};

// The parse itself, on the calling thread; never throws. Stopped when `cancel` becomes true (util/cancel.h): then
// the result has no model and error "cancelled".
LoadedModel read_model_file(const std::string& path, const std::atomic<bool>* cancel = nullptr);

class ModelLoader {
 public:
  using Clock = std::chrono::steady_clock;
  ModelLoader() = default;
  ~ModelLoader();  // stops a load in progress and waits for it (the worker must not outlive what it writes to)
  ModelLoader(const ModelLoader&) = delete;
  ModelLoader& operator=(const ModelLoader&) = delete;

  // Starts loading `path` on a worker thread. While one load runs, a new request stops it and waits for it to
  // stop, replacing any earlier waiting one (the user changed their mind: only the newest matters).
  void start(const std::string& path);
  bool busy() const { return future_.valid(); }
  // The file being loaded ("" when idle) and for how long.
  const std::string& path() const { return path_; }
  double elapsed_seconds(Clock::time_point now = Clock::now()) const;

  // Non-blocking: the result once it is in (then the loader is idle or starts the waiting request).
  std::optional<LoadedModel> poll();
  // Blocking: waits for the load in progress (and a waiting one); for scripts and tests.
  std::optional<LoadedModel> wait();

 private:
  std::optional<LoadedModel> finish();
  std::future<LoadedModel> future_;
  std::shared_ptr<std::atomic<bool>> cancel_;  // the running load's stop request
  std::string path_;
  std::optional<std::string> queued_;
  Clock::time_point started_{};
};

}  // namespace sf::gui
