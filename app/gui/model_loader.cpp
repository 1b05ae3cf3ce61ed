#include "gui/model_loader.h"

#include <optional>

#include "gui/background_task.h"
#include "gui/text/text.h"
#include "model/hf_marian.h"
#include "util/cancel.h"
#include "util/parallel.h"

namespace sf::gui {

LoadedModel read_model_file(const std::string& path, const std::atomic<bool>* cancel) {
  LoadedModel r;
  r.path = path;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    std::optional<CancelScope> scope;
    if (cancel) scope.emplace(*cancel);
    auto model = std::make_shared<const Model>(sf::open_model(path, &r.warnings));
    r.model = std::move(model);
  } catch (const Cancelled&) {
    r.model.reset();
    r.error = "cancelled";
  } catch (const Error& e) {
    r.error = e.what();  // the English text, for stderr; the dialog words core_error (gui/app_state.h error_text)
    r.error_kind = e.kind();
    r.core_error = e;
  } catch (const std::bad_alloc&) {
    r.error = tr(T::open_out_of_memory, {{"path", path}});
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

ModelLoader::~ModelLoader() {
  if (cancel_) *cancel_ = true;  // quitting while a large file loads: it stops at its next piece
  if (future_.valid()) future_.wait();
}

void ModelLoader::start(const std::string& path) {
  if (busy()) {
    queued_ = path;
    if (cancel_) *cancel_ = true;  // the running load's result would be dropped: stop it now
    return;
  }
  path_ = path;
  started_ = Clock::now();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  future_ = start_in_background([path, cancel = cancel_] {
    lower_this_thread();  // below the frame thread (util/parallel.h, main.cpp)
    return read_model_file(path, cancel.get());
  });
}

double ModelLoader::elapsed_seconds(Clock::time_point now) const {
  return busy() ? std::chrono::duration<double>(now - started_).count() : 0.0;
}

std::optional<LoadedModel> ModelLoader::finish() {
  LoadedModel result = future_.get();
  path_.clear();
  if (queued_) {
    // A newer request came while this one ran: it wins, this result is dropped.
    const std::string next = *queued_;
    queued_.reset();
    start(next);
    return std::nullopt;
  }
  return result;
}

std::optional<LoadedModel> ModelLoader::poll() {
  if (!busy() || future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  return finish();
}

std::optional<LoadedModel> ModelLoader::wait() {
  while (busy()) {
    future_.wait();
    if (auto r = finish()) return r;
  }
  return std::nullopt;
}

}  // namespace sf::gui
