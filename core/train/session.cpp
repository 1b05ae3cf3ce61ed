#include "train/session.h"

#include <cmath>
#include <new>

#include "util/error.h"
#include "util/parallel.h"

namespace sf {

const char* training_state_name(TrainingSession::State state) {
  switch (state) {
    case TrainingSession::State::Preparing: return "preparing";
    case TrainingSession::State::Running: return "running";
    case TrainingSession::State::Paused: return "paused";
    case TrainingSession::State::Finished: return "finished";
    case TrainingSession::State::Stopped: return "stopped";
    case TrainingSession::State::Failed: return "failed";
  }
  return "?";
}

TrainingSession::TrainingSession(const TrainOptions& options, bool start_paused) : options_(options) {
  status_.epochs = options.epochs;
  pause_requested_ = start_paused;
  worker_ = std::thread([this] {
    lower_this_thread();  // below the app's frames, as the pool's workers (util/parallel.h)
    run();
  });
}

TrainingSession::~TrainingSession() {
  stop();
  if (worker_.joinable()) worker_.join();
}

void TrainingSession::pause() {
  std::lock_guard<std::mutex> lock(mutex_);
  pause_requested_ = true;
  changed_.notify_all();
}

void TrainingSession::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  pause_requested_ = false;
  changed_.notify_all();
}

void TrainingSession::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stop_requested_ = true;
  changed_.notify_all();
}

bool TrainingSession::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_requested_ && status_.state != State::Finished && status_.state != State::Stopped &&
         status_.state != State::Failed;
}

bool TrainingSession::ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_.state == State::Finished || status_.state == State::Stopped || status_.state == State::Failed;
}

TrainingSession::Status TrainingSession::status(size_t losses_from) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Status copy = status_;  // status_.losses stays empty: the curve is losses_
  if (losses_from < losses_.size())
    copy.losses.assign(losses_.begin() + static_cast<std::ptrdiff_t>(losses_from), losses_.end());
  return copy;
}

bool TrainingSession::weights_now(Model& model, int64_t& step) const {
  std::lock_guard<std::mutex> lock(weights_mutex_);
  if (!trainer_) return false;
  model = trainer_->model();
  model.weights = trainer_->weights();
  step = trainer_->steps();
  return true;
}

TrainingTimeline TrainingSession::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_;
}

std::vector<TimelineSnapshot> TrainingSession::snapshots_since(size_t first) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first >= timeline_.snapshots.size()) return {};
  return {timeline_.snapshots.begin() + static_cast<std::ptrdiff_t>(first), timeline_.snapshots.end()};
}

bool TrainingSession::wait_for_step(int64_t step, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return status_.step >= step || status_.state == State::Finished || status_.state == State::Stopped ||
           status_.state == State::Failed;
  });
}

bool TrainingSession::wait_until_ended(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return status_.state == State::Finished || status_.state == State::Stopped || status_.state == State::Failed;
  });
}

bool TrainingSession::request_weights() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!trainer_ || status_.state == State::Failed) return false;
  weights_requested_ = true;
  if (status_.state == State::Finished || status_.state == State::Stopped) publish_requested_weights();  // no worker
  changed_.notify_all();  // a paused worker wakes to make the copy
  return true;
}

bool TrainingSession::take_requested_weights(std::shared_ptr<const Model>& model, int64_t& step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!published_) return false;
  model = std::move(published_);
  step = published_step_;
  return true;
}

bool TrainingSession::model_description(Model& model) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!trainer_) return false;
  model = trainer_->model();  // the description only: set when the run was prepared, never changed
  model.weights = ModelWeights();
  return true;
}

void TrainingSession::publish_requested_weights() {
  if (!weights_requested_ || !trainer_) return;
  auto copy = std::make_shared<Model>(trainer_->model());
  copy->weights = trainer_->weights();  // the worker is the only writer: between steps they hold still
  attach_packed_weights(copy->weights);  // the copy holds still: its decoding reads them packed (model/weights.h)
  published_ = std::move(copy);
  published_step_ = trainer_->steps();
  weights_requested_ = false;
}

void TrainingSession::take_snapshot(double loss, double valid_bleu, double valid_perplexity) {
  const int64_t step = trainer_->steps();
  // The worker is the only writer of the weights: no lock needed to read them.
  record_snapshot(timeline_, step, step == 0 ? 0 : status_.epoch, loss, valid_bleu, trainer_->weights(),
                  valid_perplexity);
  status_.snapshots = timeline_.snapshots.size();
}

void TrainingSession::run() {
  auto fail_with = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.state = State::Failed;
    status_.message = message;
    changed_.notify_all();
  };
  std::unique_ptr<Trainer> trainer;
  try {
    trainer = std::make_unique<Trainer>(options_);
  } catch (const std::bad_alloc&) {
    return fail_with("preparing the run: out of memory");
  } catch (const std::exception& e) {
    return fail_with(std::string("preparing the run: ") + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    {
      std::lock_guard<std::mutex> weights_lock(weights_mutex_);
      trainer_ = std::move(trainer);
    }
    timeline_.model = trainer_->model();
    timeline_.model.weights = ModelWeights();
    status_.step = trainer_->steps();
    status_.epoch = trainer_->epoch();
    status_.history = trainer_->result().history;
    status_.device = trainer_->device();
    take_snapshot(0, -1);  // the weights before training (or where a resumed run starts)
    changed_.notify_all();
  }

  double step_seconds = 0;  // this epoch's time in steps, for the speed and the time left
  int epoch_of_timing = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      publish_requested_weights();
      if (pause_requested_ && !stop_requested_) {
        status_.state = State::Paused;
        changed_.notify_all();
        for (;;) {  // paused, but still answering requests for the weights
          changed_.wait(lock, [&] { return !pause_requested_ || stop_requested_ || weights_requested_; });
          publish_requested_weights();
          if (!pause_requested_ || stop_requested_) break;
        }
      }
      if (stop_requested_) {
        take_snapshot(losses_.empty() ? 0 : losses_.back().loss, -1);
        publish_requested_weights();
        status_.state = State::Stopped;
        changed_.notify_all();
        return;
      }
      if (trainer_->done()) break;
      status_.state = State::Running;
      changed_.notify_all();
    }
    StepRecord r;
    const auto start = std::chrono::steady_clock::now();
    try {
      std::lock_guard<std::mutex> weights_lock(weights_mutex_);
      r = trainer_->step();
    } catch (const std::bad_alloc&) {
      return fail_with("out of memory at step " + std::to_string(trainer_->steps() + 1) +
                       "; the snapshots up to step " + std::to_string(trainer_->steps()) + " are kept");
    } catch (const std::exception& e) {
      return fail_with(std::string(e.what()) + "; the snapshots up to step " + std::to_string(trainer_->steps()) +
                       " are kept");
    }
    if (epoch_of_timing != r.epoch) {
      epoch_of_timing = r.epoch;
      step_seconds = 0;
    }
    step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool epoch_end = false;
    EpochRecord e;
    if (trainer_->epoch_complete()) {
      try {
        e = trainer_->finish_epoch();  // reads the weights only: views may read them too
        epoch_end = true;
      } catch (const std::bad_alloc&) {
        return fail_with("out of memory validating epoch " + std::to_string(r.epoch));
      } catch (const std::exception& error) {
        return fail_with(std::string("validating epoch ") + std::to_string(r.epoch) + ": " + error.what());
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    status_.step = r.step;
    status_.epoch = r.epoch;
    status_.batch = r.batch;
    status_.batches = r.batches;
    status_.learning_rate = r.learning_rate;
    status_.device = trainer_->device();  // "" once a failing GPU handed the run to the CPU
    status_.tokens_per_second = r.tokens_per_second;
    const double per_step = step_seconds / r.batch;
    status_.seconds_left = per_step * ((r.batches - r.batch) + static_cast<double>(options_.epochs - r.epoch) * r.batches);
    losses_.push_back({r.step, r.loss});
    if (epoch_end) status_.history.push_back(e);
    // An epoch's end carries its validation score: BLEU, or a language model's perplexity.
    const bool language_model = options_.model.stacks != ModelStacks::EncoderDecoder;  // GPT or BERT: no BLEU
    if (snapshot_due(r.step, epoch_end))
      take_snapshot(epoch_end ? e.train_loss : r.epoch_loss, epoch_end && !language_model ? e.valid_bleu : -1,
                    epoch_end && language_model ? std::exp(e.valid_nll) : -1);
    if (epoch_end && !trainer_->done()) {  // the next epoch, none of its batches done yet
      status_.epoch = trainer_->epoch();
      status_.batch = 0;
    }
    changed_.notify_all();
  }
  try {
    trainer_->finish();
  } catch (const std::exception& e) {
    return fail_with(std::string("after the last epoch: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  publish_requested_weights();
  status_.state = State::Finished;
  status_.seconds_left = 0;
  changed_.notify_all();
}

}  // namespace sf
