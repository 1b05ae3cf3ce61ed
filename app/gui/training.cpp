#include "gui/training.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

#include "gui/background_task.h"
#include "io/user_files.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/paths.h"

namespace sf::gui {

namespace fs = std::filesystem;

namespace {

// The runs the app offers. The classroom run reads readably after about 3 epochs (2.5 minutes on 2 cores;
// the shipped timeline is one such run: README "Watch it learn"); the de-en recipe is the shipped model's; the
// gpt-classroom run is a language model of the English captions alone (decoder-only, the options of
// `stepformer-cli train --shape decoder-only` with the classroom's size), whose validation is a perplexity; the
// bert-classroom run is a masked language model of the same captions (encoder-only, the options of
// `stepformer-cli train --shape encoder-only` as the shipped bert-en was trained, at the classroom's size).
std::vector<TrainingRecipe> make_recipes() {
  TrainOptions common;
  common.source_language = "de";
  common.target_language = "en";
  common.batch_tokens = 3000;
  common.dropout = 0.1f;
  common.label_smoothing = 0.1f;
  common.clip_norm = 1.0f;
  common.seed = 1;
  common.model.tie_output_embedding = true;
  common.resume = false;   // a live run starts from step 0 (nothing is written, so there is nothing to resume)
  common.test_name = "";  // no test score at the end: the run is watched, not published

  TrainOptions classroom = common;
  classroom.model.d_model = 128;
  classroom.model.n_heads = 4;
  classroom.model.n_encoder_layers = classroom.model.n_decoder_layers = 2;
  classroom.model.d_ff = 512;
  classroom.epochs = 6;
  classroom.schedule.peak = 2e-3f;
  classroom.schedule.warmup_steps = 300;
  classroom.command_line = "the app's classroom recipe";

  TrainOptions shipped = common;  // the defaults: d_model 256, 8 heads, 3+3 layers, d_ff 512
  shipped.epochs = 18;
  shipped.schedule.peak = 1e-3f;
  shipped.schedule.warmup_steps = 500;
  shipped.command_line = "the app's de-en recipe";

  // The language models: one stack of 2 layers at the classroom's size over the English captions alone (the one
  // language is TrainOptions' target_language), learned positions, GELU, the output tied to the embedding.
  auto language_model = [&](ModelStacks stacks) {
    TrainOptions o = common;
    o.model.stacks = stacks;
    o.source_language.clear();
    o.target_language = "en";
    o.model.d_model = 128;
    o.model.n_heads = 4;
    o.model.n_encoder_layers = stacks == ModelStacks::EncoderOnly ? 2 : 0;
    o.model.n_decoder_layers = stacks == ModelStacks::DecoderOnly ? 2 : 0;
    o.model.d_ff = 512;
    o.model.positional_encoding = PositionalEncoding::Learned;
    o.model.activation = Activation::GELU;
    o.model.max_positions = std::max(o.model.max_positions, o.max_length);
    return o;
  };
  // A GPT: <bos> w1 .. wn -> w1 .. wn <eos>; pre-norm with a final norm (GPT-2's choices, as the CLI's
  // decoder-only shape makes them).
  TrainOptions gpt = language_model(ModelStacks::DecoderOnly);
  gpt.model.norm_placement = NormPlacement::Pre;
  gpt.model.encoder_final_norm = false;
  gpt.model.decoder_final_norm = true;
  gpt.epochs = 6;
  gpt.schedule.peak = 2e-3f;
  gpt.schedule.warmup_steps = 300;
  gpt.command_line = "the app's gpt-classroom recipe";
  // A BERT: [MASK]ed words (15% chosen, 80/10/10, core/train/masking.h) read whole, both sides at once; post-norm
  // (the shipped bert-en's choices). Masked words are 15% of the tokens, so a batch teaches less than a GPT's:
  // more epochs.
  TrainOptions bert = language_model(ModelStacks::EncoderOnly);
  bert.model.norm_placement = NormPlacement::Post;
  bert.model.encoder_final_norm = bert.model.decoder_final_norm = false;
  bert.label_smoothing = 0.0f;  // (as bert-en: the masked word itself is the target)
  bert.epochs = 8;
  bert.schedule.peak = 1e-3f;
  bert.schedule.warmup_steps = 150;
  bert.command_line = "the app's bert-classroom recipe";
  return {
      {"classroom", T::training_recipe_classroom, T::training_recipe_classroom_about, classroom},
      {"de-en", T::training_recipe_shipped, T::training_recipe_shipped_about, shipped},
      {"gpt-classroom", T::training_recipe_gpt, T::training_recipe_gpt_about, gpt},
      {"bert-classroom", T::training_recipe_bert, T::training_recipe_bert_about, bert},
  };
}

}  // namespace

const std::vector<TrainingRecipe>& training_recipes() {
  static const std::vector<TrainingRecipe> recipes = make_recipes();
  return recipes;
}

const TrainingRecipe* find_training_recipe(const std::string& id) {
  for (const TrainingRecipe& r : training_recipes())
    if (r.id == id) return &r;
  return nullptr;
}

std::string training_recipe_ids() {
  std::string out;
  for (const TrainingRecipe& r : training_recipes()) out += (out.empty() ? "" : ", ") + r.id;
  return out;
}

double mean_row_entropy(const Mat& p) {
  if (p.rows() == 0) return 0;
  double sum = 0;
  for (Eigen::Index i = 0; i < p.rows(); ++i)
    for (Eigen::Index j = 0; j < p.cols(); ++j) {
      const double v = p(i, j);
      if (v > 0 && std::isfinite(v)) sum -= v * std::log(v);  // -sum p ln p; a blocked cell (NaN, 0) adds 0
    }
  return sum / static_cast<double>(p.rows());
}

Training::~Training() {
  if (session_) session_->stop();  // the destructor waits for its worker
}

// [SECTION] the model file and the timeline

void Training::set_file_model(std::shared_ptr<const Model> model, const std::string& path) {
  file_model_ = std::move(model);
  file_model_path_ = path;
  shown_snapshot_ = -1;
  follow_live_ = false;  // the user chose a file: a live run goes on, but no longer takes the views
  if (!running()) timeline_live_ = false;  // an ended run's timeline gives way to the file's
  const std::string beside = timeline_path_for(path);
  std::error_code ec;
  if (!timeline_live_ && beside != path && fs::is_regular_file(beside, ec)) open_timeline(beside);
}

void Training::want_shipped_timeline() {
  if (timeline_ || loading_.valid() || shipped_wanted_) return;
  shipped_wanted_ = true;
  open_timeline(shipped_model_path("classroom-de-en.timeline"));
}

void Training::open_timeline(const std::string& path) {
  if (loading_.valid()) loading_.wait();  // one read at a time; the newest wins
  loading_ = start_in_background([path] {
    Loaded out;
    out.path = path;
    try {
      out.timeline = std::make_shared<TrainingTimeline>(load_timeline(path));
      if (out.timeline->snapshots.empty()) {
        out.timeline.reset();
        out.error = tr(T::training_timeline_empty, {{"path", path}});
      }
    } catch (const Error& e) {
      out.error = error_text(e);
    } catch (const std::exception& e) {
      out.error = tr(T::training_timeline_unreadable, {{"path", path}, {"reason", e.what()}});
    }
    return out;
  });
}

void Training::finish_loading() {
  if (loading_.valid()) loading_.wait();
}

void Training::apply(const TrainingAsk& ask, AppState& state, const std::string& data_dir) {
  switch (ask.what) {
    case TrainingAsk::Do::Start: {
      std::string error;
      message_.ok = start(ask.recipe, data_dir, ask.threads, &error, ask.path);
      message_.text = !message_.ok ? error
                      : resumed()  ? tr(T::training_resuming, {{"path", ask.path + ".checkpoint"}})
                                   : std::string();
      break;
    }
    case TrainingAsk::Do::Pause: pause(); break;
    case TrainingAsk::Do::Resume: resume(); break;
    case TrainingAsk::Do::Stop: stop(); break;
    case TrainingAsk::Do::ShowSnapshot: show_snapshot(state, ask.snapshot); break;
    case TrainingAsk::Do::FollowLive: follow_live(); break;
    case TrainingAsk::Do::ShowFileModel: show_file_model(state); break;
    case TrainingAsk::Do::SaveTimeline: {
      const std::string problem = save_timeline_to(ask.path, false);
      message_.ok = problem.empty();
      message_.text = message_.ok ? tr(T::training_saved, {{"path", ask.path}}) : problem;
      break;
    }
  }
}

bool Training::show_snapshot(AppState& state, int index) {
  if (!timeline_) {
    state.set_error(tr(T::training_no_timeline));
    return false;
  }
  const int count = static_cast<int>(timeline_->snapshots.size());
  if (index < 0 || index >= count) {
    state.set_error(tr(T::training_no_such_snapshot, {{"index", index}, {"count", count}, {"last", count - 1}}));
    return false;
  }
  std::shared_ptr<const Model> model;
  try {
    model = std::make_shared<const Model>(snapshot_model(*timeline_, static_cast<size_t>(index)));
  } catch (const std::bad_alloc&) {
    state.set_error(tr(T::training_snapshot_no_memory, {{"index", index}}));
    return false;
  }
  if (!use_weights_fitting_sentence(state, std::move(model), timeline_source_)) return false;
  shown_snapshot_ = index;
  follow_live_ = false;
  return true;
}

bool Training::use_weights_fitting_sentence(AppState& state, std::shared_ptr<const Model> model,
                                            const std::string& source) {
  // A German sentence (or nothing) read by a language model would be words it never saw: a GPT shown where
  // another shape (or no model) was continues kTrainingPrompt, a BERT fills in kTrainingBlankSentence, and a
  // translator shown where a GPT or BERT read its training sentence reads the default sentence again. A sentence
  // of the user's is kept otherwise (AppState::use_model swaps the default sentence and prompt likewise).
  const std::string before = state.sentence();
  const ModelStacks to = model->config.stacks;
  const bool changes_shape = !state.model() || state.model()->config.stacks != to;
  const char* fitting = nullptr;
  if (changes_shape && to == ModelStacks::DecoderOnly) fitting = kTrainingPrompt;
  if (changes_shape && to == ModelStacks::EncoderOnly) fitting = kTrainingBlankSentence;
  if (changes_shape && to == ModelStacks::EncoderDecoder && (before == kTrainingPrompt || before == kTrainingBlankSentence))
    fitting = kDefaultSentence;
  if (fitting) state.keep_sentence(fitting);
  if (state.use_weights(std::move(model), source)) return true;
  if (fitting) state.keep_sentence(before);
  return false;
}

bool Training::show_latest_snapshot(AppState& state) {
  if (!timeline_) return show_snapshot(state, 0);  // says why
  return show_snapshot(state, static_cast<int>(timeline_->snapshots.size()) - 1);
}

bool Training::show_file_model(AppState& state) {
  if (!file_model_ || state.model() == file_model_) return false;
  if (!use_weights_fitting_sentence(state, file_model_, file_model_path_)) return false;
  shown_snapshot_ = -1;
  follow_live_ = false;
  return true;
}

std::string Training::shown_label(const AppState& state) const {
  if (!state.model()) return "";
  if (shown_snapshot_ >= 0 && timeline_ && shown_snapshot_ < static_cast<int>(timeline_->snapshots.size())) {
    const TimelineSnapshot& s = timeline_->snapshots[static_cast<size_t>(shown_snapshot_)];
    const TextArg args[] = {{"snapshot", shown_snapshot_ + 1},
                            {"snapshots", timeline_->snapshots.size()},
                            {"step", static_cast<long long>(s.step)},
                            {"last_step", static_cast<long long>(timeline_->snapshots.back().step)},
                            {"epoch", s.epoch}};
    return s.epoch > 0 ? tr(T::training_shown_snapshot_epoch, args)
                       : tr(T::training_shown_snapshot_before, std::span<const TextArg>(args, 4));
  }
  if (live_model_ && state.model() == live_model_)
    return tr(T::training_shown_live, {{"step", static_cast<long long>(live_step_shown_)}});
  return "";
}

std::string Training::weights_note(const AppState& state) const {
  const std::string label = shown_label(state);
  if (label.empty()) return "";
  if (shown_snapshot_ >= 0 && timeline_)
    return tr(T::training_weights_note_timeline, {{"label", label},
                                                  {"timeline", timeline_source_},
                                                  {"storage", snapshot_storage_description(timeline_->storage)}});
  return tr(T::training_weights_note_live, {{"label", label}});
}

std::string Training::save_timeline_to(const std::string& path, bool replace, const std::string& allowed_folder) const {
  if (!timeline_) return tr(T::training_save_no_timeline);
  if (path.empty()) return tr(T::training_save_no_name);
  std::vector<std::string> inputs = {file_model_path_};
  if (!timeline_live_) inputs.push_back(timeline_source_);
  try {
    sf::save_timeline(*timeline_, path, timeline_live_ ? SnapshotStorage::Int8Rows : timeline_->storage,
                      WriteRules{replace, inputs, allowed_folder});
  } catch (const Error& e) {
    return error_text(e);
  } catch (const std::bad_alloc&) {
    return tr(T::training_save_no_memory);
  }
  return "";
}

// [SECTION] live training

bool Training::start(const std::string& recipe_id, const std::string& data_dir, int threads, std::string* error,
                     const std::string& save_to, const std::string& allowed_folder) {
  const TrainingRecipe* recipe = find_training_recipe(recipe_id);
  if (!recipe) {
    *error = tr(T::training_no_recipe, {{"recipe", recipe_id}, {"recipes", training_recipe_ids()}});
    return false;
  }
  if (running()) {
    *error = tr(T::training_run_going);
    return false;
  }
  if (!kHaveThreads) {  // a web page: no Multi30k, and no threads to train beside the frames (util/parallel.h)
    *error = tr(T::training_not_in_page);
    return false;
  }
  std::error_code ec;
  // (a translator reads both languages' files, a language model its one language's)
  const std::string& language = recipe->options.source_language.empty() ? recipe->options.target_language
                                                                         : recipe->options.source_language;
  if (data_dir.empty() || !fs::is_regular_file(fs::path(data_dir) / ("train.lc.norm.tok." + language), ec)) {
    *error = data_dir.empty()                          ? std::string(tr(T::training_no_data_option))
             : recipe->options.source_language.empty() ? tr(T::training_no_data_in_one, {{"folder", data_dir}, {"language", language}})
                                                       : tr(T::training_no_data_in, {{"folder", data_dir}});
    return false;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (threads < 0 || threads > static_cast<int>(cores)) {
    *error = tr(T::training_bad_threads, {{"cores", cores}, {"threads", threads}});
    return false;
  }
  TrainOptions options = recipe->options;
  options.data_dir = data_dir;
  options.device = device_;
  bool resuming = false;
  if (!save_to.empty()) {
    const std::string checkpoint = save_to + ".checkpoint";
    resuming = fs::is_regular_file(checkpoint, ec);
    if (!resuming && fs::exists(save_to, ec)) {
      *error = tr(T::training_not_a_run, {{"path", save_to}});
      return false;
    }
    WriteRules rules{true, {}, allowed_folder};
    if (!file_model_path_.empty()) rules.inputs.push_back(file_model_path_);  // never over the open model
    for (const std::string& path : {save_to, checkpoint})
      if (const std::string problem = check_output_path(path, rules); !problem.empty()) {
        *error = problem;
        return false;
      }
    options.out_path = save_to;
    options.resume = true;  // from the checkpoint when there is one
    options.command_line = "the app's " + recipe_id + " recipe, saved to " + save_to;
  }
  options.threads = threads == 0 ? static_cast<int>(std::max(1u, cores - 1)) : threads;
  session_.reset();  // an ended run's worker is joined
  threads_before_ = parallel_threads();  // the run sets the core's one pool to its threads (util/parallel.h)
  session_ = std::make_unique<TrainingSession>(options);
  recipe_id_ = recipe_id;
  resumed_ = resuming;
  status_ = {};
  losses_.clear();
  live_model_.reset();
  live_step_shown_ = -1;
  timeline_ = std::make_shared<TrainingTimeline>();
  timeline_->storage = SnapshotStorage::F32;
  timeline_source_ = tr(T::training_live_run, {{"recipe", recipe_id}});
  timeline_live_ = true;
  timeline_error_.clear();
  shown_snapshot_ = -1;
  follow_live_ = true;
  last_refresh_ = {};
  return true;
}

bool Training::running() const { return session_ && !session_->ended(); }
bool Training::paused() const { return session_ && status_.state == TrainingSession::State::Paused; }
void Training::pause() { if (session_) session_->pause(); }
void Training::resume() { if (session_) session_->resume(); }
void Training::stop() { if (session_) session_->stop(); }

double Training::seconds_since_refresh() const {
  if (live_step_shown_ < 0) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_refresh_).count();
}

void Training::refresh_now() {
  if (!session_) return;
  follow_live_ = true;
  force_refresh_ = true;
}

void Training::poll(AppState& state) {
  if (loading_.valid() && loading_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Loaded loaded = loading_.get();
    if (!loaded.timeline) {
      timeline_error_ = loaded.error;
    } else if (!timeline_live_) {  // a live run's timeline is not replaced by a file
      timeline_ = std::move(loaded.timeline);
      timeline_source_ = loaded.path;
      timeline_error_.clear();
      shown_snapshot_ = -1;
    }
  }
  if (!session_) return;
  TrainingSession::Status now = session_->status(losses_.size());
  losses_.insert(losses_.end(), now.losses.begin(), now.losses.end());
  now.losses.clear();
  status_ = std::move(now);
  if (threads_before_ > 0 && session_->ended()) {  // the app's decoding gets its cores back
    set_parallel_threads(threads_before_);
    threads_before_ = 0;
  }
  if (timeline_live_ && timeline_) {
    if (timeline_->model.src_vocab.empty()) session_->model_description(timeline_->model);
    for (TimelineSnapshot& s : session_->snapshots_since(timeline_->snapshots.size()))
      timeline_->snapshots.push_back(std::move(s));
  }
  // The live weights, every few seconds while following the run: asked for (the worker copies them after its
  // step), then shown when they come and the app is not decoding.
  if (!follow_live_) {
    force_refresh_ = weights_requested_ = false;
    return;
  }
  const auto now_time = std::chrono::steady_clock::now();
  if (state.busy()) last_busy_ = now_time;  // recorded every frame: a decoding may end between requests
  if (!weights_requested_) {
    const bool due = force_refresh_ || live_step_shown_ < 0 || seconds_since_refresh() >= kRefreshSeconds;
    const bool news = force_refresh_ || live_step_shown_ < 0 || status_.step != live_step_shown_;
    if (!due || !news) return;
    if (!session_->request_weights()) {  // preparing (ask again next frame), or failed: nothing will come
      if (status_.state == TrainingSession::State::Failed) force_refresh_ = false;
      return;
    }
    weights_requested_ = true;
  }
  if (state.busy()) return;
  // The result on show stays kRefreshSeconds once settled (wait-train's refresh_now() does not wait).
  if (!force_refresh_ && live_step_shown_ >= 0 &&
      std::chrono::duration<double>(now_time - last_busy_).count() < kRefreshSeconds)
    return;
  std::shared_ptr<const Model> model;
  int64_t step = 0;
  if (!session_->take_requested_weights(model, step)) return;
  weights_requested_ = force_refresh_ = false;
  if (!use_weights_fitting_sentence(state, model, timeline_source_)) return;
  shown_snapshot_ = -1;
  live_model_ = std::move(model);
  live_step_shown_ = step;
  last_refresh_ = now_time;
}

}  // namespace sf::gui
