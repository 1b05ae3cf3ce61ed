// A training run on a worker thread of its own, driven from another thread (the app's frame loop, a script):
// pause, resume, stop; its progress (loss curve, learning rate, speed, epoch, time left, validation per epoch)
// and copies of its weights, taken between two steps, for the views and the timeline (train/timeline.h).
//
// The worker runs Trainer (train/trainer.h) a step at a time, so a run paused and resumed, or watched while it
// runs, ends with the very weights an uninterrupted `stepformer-cli train` run with the same options ends with.
// Snapshots are taken where snapshot_due says (step 0, early steps, each epoch's end) and at a stop; a run that
// fails (a non-finite loss, no memory) stops there, says at which step, and keeps its snapshots.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "train/timeline.h"
#include "train/trainer.h"

namespace sf {

class TrainingSession {
 public:
  enum class State { Preparing, Running, Paused, Finished, Stopped, Failed };

  struct LossPoint {
    int64_t step = 0;
    double loss = 0;  // the batch's label-smoothed loss per target token
  };
  struct Status {
    State state = State::Preparing;
    int64_t step = 0;            // optimiser steps done
    int epoch = 0, epochs = 0;   // the epoch in progress (from 1) and the run's planned epochs
    int batch = 0, batches = 0;  // batches done in it, and in it all (0 until its first step)
    float learning_rate = 0;
    double tokens_per_second = 0;  // target tokens per second of stepping in the current epoch
    double seconds_left = -1;      // the run's steps still to go at that speed (-1: not known yet)
    std::vector<LossPoint> losses;       // every step's loss
    std::vector<EpochRecord> history;    // one per finished epoch: validation loss and BLEU (a language model: 0)
    size_t snapshots = 0;
    std::string device;   // where the steps run: the GPU's name (TrainOptions::device), or "" for the CPU
    std::string message;  // Failed: what went wrong and at which step; otherwise empty
  };

  // Starts the worker: it prepares the run (reads the data: errors end in State::Failed with the message) and
  // trains until the planned epochs are done or stop() is called. options.out_path may be empty (nothing written).
  // start_paused: prepares, takes the step-0 snapshot, then waits for resume().
  explicit TrainingSession(const TrainOptions& options, bool start_paused = false);
  ~TrainingSession();  // stops the worker at its next step and waits for it
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  void pause();   // after the step in progress
  void resume();
  void stop();    // after the step in progress; a snapshot of the weights at that step is kept
  bool ended() const;  // Finished, Stopped or Failed

  // The status, with the losses from step record `losses_from` on (a view that polls every frame keeps the
  // curve it has and asks for what is new: status(curve.size())).
  Status status(size_t losses_from = 0) const;
  // The run's model description (config, vocabularies, tokenizer) and weights now, between two steps; false
  // while preparing (or when preparing failed). Blocks while a step runs (a step of a large model takes
  // seconds): a view that must not wait asks with request_weights() instead.
  bool weights_now(Model& model, int64_t& step) const;
  // Never blocking: asks the worker for a copy of its weights, which it makes after the step in progress (at
  // once while paused; from the calling thread once the run has finished or stopped). False when no copy can
  // come: still preparing, or failed (its weights may be half updated: the snapshots keep the good ones).
  bool request_weights();
  // The copy asked for, once made (then the request is done); false until then.
  bool take_requested_weights(std::shared_ptr<const Model>& model, int64_t& step);
  // The model's description (config, vocabularies, tokenizer; no weights); false while preparing. Never blocks
  // on a step.
  bool model_description(Model& model) const;
  // The snapshots so far, with the model description.
  TrainingTimeline timeline() const;
  // The snapshots from index `first` on (what a view that holds the earlier ones lacks).
  std::vector<TimelineSnapshot> snapshots_since(size_t first) const;
  // Waits until `step` steps are done or the run has ended; false on timeout.
  bool wait_for_step(int64_t step, std::chrono::milliseconds timeout) const;
  bool wait_until_ended(std::chrono::milliseconds timeout) const;
  // Asked to stop and not yet ended (the step in progress finishes first).
  bool stopping() const;

 private:
  void run();
  // Copies the weights as they are into the timeline (unless this step's copy is there), with mutex_ held.
  void take_snapshot(double loss, double valid_bleu, double valid_perplexity = -1);
  // With mutex_ held, on the worker between steps (or once it has ended): makes the copy request_weights asked for.
  void publish_requested_weights();

  TrainOptions options_;
  mutable std::mutex mutex_;          // status_, the requests, timeline_
  mutable std::mutex weights_mutex_;  // held by the worker while a step changes the weights, and by weights_now
  mutable std::condition_variable changed_;  // any change of state or step
  bool pause_requested_ = false, stop_requested_ = false;
  bool weights_requested_ = false;
  std::shared_ptr<const Model> published_;  // the copy asked for, until taken
  int64_t published_step_ = 0;
  Status status_;                  // its losses stay empty: status() copies them from losses_
  std::vector<LossPoint> losses_;  // every step's loss
  std::unique_ptr<Trainer> trainer_;  // created by the worker; its weights read under mutex_ between steps
  TrainingTimeline timeline_;
  std::thread worker_;
};

const char* training_state_name(TrainingSession::State state);  // "preparing", "running", ...

}  // namespace sf
