#include "gui/panels/training_panel.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "gui/render/item_placements.h"
#include "gui/text/text.h"
#include "gui/widgets.h"
#include "util/paths.h"

namespace sf::gui {

namespace {

const ImVec4 kRed(1.0f, 0.45f, 0.4f, 1.0f), kGreen(0.5f, 0.9f, 0.5f, 1.0f), kBlue(0.55f, 0.8f, 1.0f, 1.0f);

// A run's state as the panel names it (core/train/session.h's states).
const char* state_text(TrainingSession::State state) {
  switch (state) {
    case TrainingSession::State::Preparing: return tr(T::training_state_preparing);
    case TrainingSession::State::Running: return tr(T::training_state_running);
    case TrainingSession::State::Paused: return tr(T::training_state_paused);
    case TrainingSession::State::Finished: return tr(T::training_state_finished);
    case TrainingSession::State::Stopped: return tr(T::training_state_stopped);
    case TrainingSession::State::Failed: return tr(T::training_state_failed);
  }
  return "?";
}

std::string minutes_seconds(double seconds) {
  if (seconds < 0) return "?";
  const int s = static_cast<int>(std::lround(seconds));
  char text[32];
  std::snprintf(text, sizeof(text), "%dm%02ds", s / 60, s % 60);
  return text;
}

// A curve of `values` (at most `width` points kept: every n-th, so a long run still draws in a frame).
void curve(const char* label, const std::vector<float>& values, ImVec2 size, const char* overlay) {
  std::vector<float> shown;
  const size_t stride = std::max<size_t>(1, values.size() / 600 + (values.size() % 600 != 0));
  for (size_t i = 0; i < values.size(); i += stride) shown.push_back(values[i]);
  if (!values.empty() && (values.size() - 1) % stride != 0) shown.push_back(values.back());
  float lo = 0, hi = 1;
  if (!shown.empty()) {
    lo = *std::min_element(shown.begin(), shown.end());
    hi = *std::max_element(shown.begin(), shown.end());
    if (hi - lo < 1e-3f) hi = lo + 1e-3f;
  }
  ImGui::PlotLines(label, shown.data(), static_cast<int>(shown.size()), 0, overlay, lo, hi, size);
}

// A curve of ys over xs (steps), in a box `size` with `overlay` in its corner: the timeline's snapshots are not
// evenly spaced (dense early, sparse late), so the x axis is the step, not the index.
void curve_over_steps(const std::vector<double>& xs, const std::vector<double>& ys, ImVec2 size, const char* overlay,
                      const char* item) {
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), p1(p0.x + size.x, p0.y + size.y);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p0, p1, ImGui::GetColorU32(ImGuiCol_FrameBg));
  if (xs.size() >= 2) {
    const double x_lo = xs.front(), x_hi = std::max(xs.back(), x_lo + 1);
    const double y_lo = *std::min_element(ys.begin(), ys.end()), y_hi = std::max(*std::max_element(ys.begin(), ys.end()), y_lo + 1e-3);
    const auto at = [&](size_t i) {
      return ImVec2(p0.x + 4 + static_cast<float>((xs[i] - x_lo) / (x_hi - x_lo)) * (size.x - 8),
                    p1.y - 4 - static_cast<float>((ys[i] - y_lo) / (y_hi - y_lo)) * (size.y - 8));
    };
    for (size_t i = 1; i < xs.size(); ++i)
      draw->AddLine(at(i - 1), at(i), ImGui::GetColorU32(ImGuiCol_PlotLines), 2.5f);
    for (size_t i = 0; i < xs.size(); ++i) draw->AddCircleFilled(at(i), 3.5f, ImGui::GetColorU32(ImGuiCol_PlotLines));
  }
  draw->AddText(ImVec2(p0.x + 4, p0.y + 2), ImGui::GetColorU32(ImGuiCol_Text), overlay);
  ImGui::Dummy(size);
  record_item(item, p0, p1, static_cast<int>(xs.size()), overlay);
}

}  // namespace

std::string training_data_note(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> looked;
  if (!data_dir.empty()) {
    if (fs::is_regular_file(fs::path(data_dir) / "train.lc.norm.tok.de", ec) &&
        fs::is_regular_file(fs::path(data_dir) / "train.lc.norm.tok.en", ec))
      return "";
    looked.push_back(data_dir);
  } else {
    looked = multi30k_search_folders();
  }
  std::string folders;  // "a, b and c": the list's words and punctuation from the table
  for (size_t i = 0; i < looked.size(); ++i)
    folders += (i == 0                   ? ""
                : i + 1 == looked.size() ? tr(T::training_list_and)
                                         : tr(T::training_list_comma)) +
               looked[i];
  return tr(T::training_no_data, {{"folders", folders.empty() ? std::string(tr(T::training_no_folder)) : folders}});
}

void TrainingPanel::show_snapshot(int index) {
  TrainingAsk show{TrainingAsk::Do::ShowSnapshot};
  show.snapshot = index;
  ask_ = show;
}

PanelAsk TrainingPanel::draw(const PanelContext& context) {
  ask_.reset();
  draw_stage(context.state, context.training, context.training_data_dir, head_, context.presenting);
  PanelAsk ask;
  ask.training = std::exchange(ask_, std::nullopt);
  return ask;
}

void TrainingPanel::draw_stage(const AppState& state, const Training& training, const std::string& data_dir,
                               AttentionSelection& head, bool presenting) {
  presenting_ = presenting;
  if (!presenting) ImGui::TextUnformatted(tr(T::training_heading));
  // (a GPT on show: what it learns and what to watch, in place of the translator's)
  explanation(tr(state.decoder_only()   ? T::training_gpt_explanation
                 : state.encoder_only() ? T::training_bert_explanation
                                        : T::training_model_starts_from_random));
  const float left_width = presenting ? ImGui::GetContentRegionAvail().x * 0.4f
                                      : std::max(ImGui::GetFontSize() * 24, ImGui::GetContentRegionAvail().x * 0.46f);
  // Presenting, the map takes its column's whole height: what names it (the snapshot, the head's controls, its
  // row entropy) stands under the timeline in the left column.
  ImGui::BeginChild("training_run", ImVec2(left_width, 0), false);
  draw_run(training, data_dir);
  ImGui::Separator();
  draw_timeline(state, training);
  if (presenting) draw_model_now(state, training, head, Part::Header);
  record_scroll_region("training_run");
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("training_model_now", ImVec2(0, 0), false);
  draw_model_now(state, training, head, presenting ? Part::Map : Part::All);
  record_scroll_region("training_model_now");
  ImGui::EndChild();
}

void TrainingPanel::draw_recipe_picker(bool running, const std::string& running_recipe) {
  if (running && !running_recipe.empty()) recipe_ = running_recipe;
  ImGui::BeginDisabled(running);
  for (const TrainingRecipe& r : training_recipes()) {
    if (ImGui::RadioButton(tr(r.title), recipe_ == r.id)) recipe_ = r.id;
    ImGui::Indent();
    text_disabled_wrapped("%s", tr(r.about));
    ImGui::Unindent();
  }
  // Whatever model is open, any recipe starts: its weights then take the stages (a GPT's stages for a GPT run).
  text_disabled_wrapped("%s", tr(T::training_recipes_replace_model));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads_ == 0) threads_ = std::max(1, cores - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderInt(tr(T::training_threads), &threads_, 1, cores);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", tr(T::training_threads_tip, {{"cores", cores}}).c_str());
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - labelled_field_width(0, tr(T::training_save_optional)));
  ImGui::InputTextWithHint(tr(T::training_save_optional), tr(T::training_nothing_written), &run_path_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::training_model_file_name_model));
  ImGui::EndDisabled();
}

void TrainingPanel::draw_run(const Training& training, const std::string& data_dir) {
  if (!kHaveThreads) {
    // A web page: no recipes, threads or Train button to press in vain; what it cannot do, and what still plays
    // (the timeline below).
    ImGui::TextColored(kBlue, "%s", tr(T::training_train_model_here));
    text_wrapped(tr(T::training_not_in_page));
    record_item("training.no_data", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1,
                tr(T::training_not_in_page));
    return;
  }
  const TrainingSession::Status& st = training.status();
  const bool running = training.running();
  if (!presenting_) {  // presenting: the buttons alone
    ImGui::TextColored(kBlue, "%s", tr(T::training_train_model_here));
    draw_recipe_picker(running, training.recipe_id());
  }
  const std::string data_note = running ? std::string() : training_data_note(data_dir);
  if (!data_note.empty()) {  // said before anyone presses Train: which folders, where the data come from
    ImGui::PushTextWrapPos(0);
    const ImVec4 red = kRed;
    text_wrapped_at_pos(presenting_ ? std::string(tr(T::training_no_data_short)) : data_note, &red);
    if (presenting_ && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", data_note.c_str());
    ImGui::PopTextWrapPos();
    record_item("training.no_data", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, data_note);
  }
  if (!running) {
    if (ImGui::Button(tr(T::training_train))) {
      TrainingAsk start{TrainingAsk::Do::Start};
      start.recipe = recipe_;
      start.threads = threads_;
      start.path = run_path_;
      ask_ = start;
    }
  } else {
    if (training.paused() ? ImGui::Button(tr(T::training_resume)) : ImGui::Button(tr(T::training_pause)))
      ask_ = TrainingAsk{training.paused() ? TrainingAsk::Do::Resume : TrainingAsk::Do::Pause};
    ImGui::SameLine();
    if (ImGui::Button(tr(T::training_stop))) ask_ = TrainingAsk{TrainingAsk::Do::Stop};
  }
  if (const Training::Message& message = training.message(); !message.text.empty()) {
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0);
    {
      const ImVec4 colour = message.ok ? kGreen : kRed;
      text_wrapped_at_pos(message.text, &colour);
    }
    ImGui::PopTextWrapPos();
  }
  if (!training.session()) {
    // No run yet: the curves of the run on the timeline (the shipped classroom run), at its snapshots.
    const TrainingTimeline* timeline = training.timeline();
    if (!timeline || timeline->snapshots.size() < 2) return;
    // (a language model's timeline has a validation perplexity where a translator's has BLEU)
    std::vector<double> steps, losses, bleu_steps, bleus, perplexity_steps, perplexities;
    for (const TimelineSnapshot& snap : timeline->snapshots) {
      if (snap.step > 0 && snap.loss > 0) {
        steps.push_back(static_cast<double>(snap.step));
        losses.push_back(snap.loss);
      }
      if (snap.valid_bleu >= 0) {
        bleu_steps.push_back(static_cast<double>(snap.step));
        bleus.push_back(snap.valid_bleu);
      }
      if (snap.valid_perplexity >= 0) {
        perplexity_steps.push_back(static_cast<double>(snap.step));
        perplexities.push_back(snap.valid_perplexity);
      }
    }
    const float width = ImGui::GetContentRegionAvail().x, height = ImGui::GetFontSize() * (presenting_ ? 2.4f : 4.0f);
    const std::string loss = number_text("%.2f", losses.empty() ? 0.0 : losses.back());
    std::string overlay =
        presenting_ ? tr(T::training_curve_loss_short, {{"loss", loss}})
                    : tr(T::training_curve_timeline_loss,
                         {{"loss", loss}, {"step", static_cast<long long>(steps.empty() ? 0 : steps.back())}});
    // (presenting: side by side, one line of the column's height for both)
    const float each = presenting_ ? 0.5f * (width - ImGui::GetStyle().ItemSpacing.x) : width;
    curve_over_steps(steps, losses, ImVec2(each, height), overlay.c_str(), "training.loss_curve");
    const bool perplexity = bleus.empty() && !perplexities.empty();
    if (perplexity) {
      overlay = tr(presenting_ ? T::training_curve_perplexity_at_last_short : T::training_curve_perplexity_at_last,
                   {{"perplexity", number_text("%.1f", perplexities.back())}});
    } else {
      const std::string bleu = number_text("%.1f", bleus.empty() ? 0.0 : bleus.back());
      overlay = tr(presenting_ ? T::training_curve_bleu_short : T::training_curve_bleu, {{"bleu", bleu}});
    }
    if (presenting_) ImGui::SameLine();
    curve_over_steps(perplexity ? perplexity_steps : bleu_steps, perplexity ? perplexities : bleus,
                     ImVec2(each, presenting_ ? height : height * 0.8f), overlay.c_str(), "training.valid_curve");
    return;
  }

  // Where the run stands.
  const char* state_name = state_text(st.state);
  if (st.state == TrainingSession::State::Failed) {
    ImGui::PushTextWrapPos(0);
    {
      const ImVec4 colour = kRed;
      text_wrapped_at_pos(tr(T::training_failed, {{"message", st.message}}), &colour);
    }
    ImGui::PopTextWrapPos();
  } else if (st.batches > 0) {
    // (presenting: what a class reads, the epoch and the step; the rest on hover)
    if (presenting_)
      text_wrapped(
                         tr(T::training_epoch_step,
                            {{"epoch", st.epoch}, {"epochs", st.epochs}, {"step", static_cast<long long>(st.step)}})
                             .c_str());
    else
      ImGui::TextUnformatted(tr(T::training_epoch_batch_step, {{"state", state_name},
                                                               {"epoch", st.epoch},
                                                               {"epochs", st.epochs},
                                                               {"batch", st.batch},
                                                               {"batches", st.batches},
                                                               {"step", static_cast<long long>(st.step)}})
                                 .c_str());
    const std::string details = tr(T::training_details, {{"rate", number_text("%.2e", st.learning_rate)},
                                                         {"speed", number_text("%.0f", st.tokens_per_second)},
                                                         {"left", minutes_seconds(st.seconds_left)}});
    if (presenting_ && ImGui::IsItemHovered())
      ImGui::SetTooltip("%s",
                        tr(T::training_batch,
                           {{"state", state_name},
                            {"batch", st.batch},
                            {"batches", st.batches},
                            {"details", details},
                            {"device", st.device.empty() ? std::string(tr(T::training_computing_cpu))
                                                         : tr(T::training_computing_gpu, {{"device", st.device}})}})
                            .c_str());
    ImGui::ProgressBar(static_cast<float>(st.batch) / static_cast<float>(st.batches), ImVec2(-1, 0));
    if (!presenting_) {
      ImGui::TextUnformatted(details.c_str());
      if (st.device.empty())
        ImGui::TextDisabled("%s", tr(T::training_computing_cpu));
      else
        ImGui::TextDisabled("%s", tr(T::training_computing_gpu, {{"device", st.device}}).c_str());
    }
  } else {
    ImGui::TextUnformatted(tr(T::training_preparing, {{"state", state_name}}).c_str());
  }
  // The curves: the training loss of every step, and the validation loss of every epoch.
  const auto& losses = training.losses();
  const float width = ImGui::GetContentRegionAvail().x;
  const float height = ImGui::GetFontSize() * (presenting_ ? 2.4f : 4.5f);
  std::vector<float>& train_loss = loss_values_;  // what is new since the last frame is appended
  if (train_loss.size() > losses.size()) train_loss.clear();  // a new run
  for (size_t i = train_loss.size(); i < losses.size(); ++i) train_loss.push_back(static_cast<float>(losses[i].loss));
  const std::string loss = number_text("%.2f", train_loss.empty() ? 0.0f : train_loss.back());
  std::string overlay =
      presenting_ ? tr(T::training_curve_loss_short, {{"loss", loss}})
                  : tr(T::training_curve_loss,
                       {{"loss", loss}, {"step", static_cast<long long>(losses.empty() ? 0 : losses.back().step)}});
  const float each = presenting_ ? 0.5f * (width - ImGui::GetStyle().ItemSpacing.x) : width;
  curve("##train_loss", train_loss, ImVec2(each, height), overlay.c_str());
  record_item("training.loss_curve", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(train_loss.size()), overlay);
  // A translator's validation loss per epoch; a language model's perplexity, exp(mean -ln p per token): the
  // number of words it hesitates between (BLEU is 0 there: it translates nothing).
  const TrainingRecipe* recipe = find_training_recipe(training.recipe_id());
  // (a masked language model's perplexity is over its masked words: exp(mean -ln p of the hidden word))
  const bool language_model = recipe && recipe->options.model.stacks != ModelStacks::EncoderDecoder;
  std::vector<float> valid_loss;
  for (const EpochRecord& e : st.history)
    valid_loss.push_back(static_cast<float>(language_model ? std::exp(e.valid_nll) : e.valid_nll));
  if (language_model)
    overlay = valid_loss.empty()
                  ? std::string(tr(presenting_ ? T::training_curve_perplexity_short : T::training_curve_perplexity_none))
                  : presenting_ ? tr(T::training_curve_perplexity_at_last_short,
                                     {{"perplexity", number_text("%.1f", valid_loss.back())}})
                                : tr(T::training_curve_perplexity, {{"perplexity", number_text("%.1f", valid_loss.back())},
                                                                    {"epoch", valid_loss.size()}});
  else
    overlay = valid_loss.empty()
                  ? std::string(tr(presenting_ ? T::training_curve_valid_short : T::training_curve_valid_none))
                  : tr(T::training_curve_valid,
                       {{"loss", number_text("%.2f", valid_loss.back())}, {"epoch", valid_loss.size()}});
  if (presenting_) ImGui::SameLine();
  curve("##valid_loss", valid_loss, ImVec2(each, presenting_ ? height : height * 0.7f), overlay.c_str());
  record_item("training.valid_curve", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(valid_loss.size()), overlay);
  if (!presenting_ && !st.history.empty() && ImGui::BeginTable("epochs", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn(tr(T::training_epoch));
    ImGui::TableSetupColumn(tr(T::training_column_loss));
    ImGui::TableSetupColumn(tr(T::training_validation_loss));
    ImGui::TableSetupColumn(tr(language_model ? T::training_validation_perplexity : T::training_validation_bleu));
    ImGui::TableHeadersRow();
    for (const EpochRecord& e : st.history) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", e.epoch);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", e.train_loss);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", e.valid_nll);
      ImGui::TableNextColumn();
      if (language_model)
        ImGui::Text("%.1f", std::exp(e.valid_nll));
      else
        ImGui::Text("%.2f", e.valid_bleu);
    }
    ImGui::EndTable();
  }
}

void TrainingPanel::draw_timeline(const AppState& state, const Training& training) {
  if (!presenting_) ImGui::TextColored(kBlue, "%s", tr(T::training_timeline));
  if (training.timeline_loading()) {
    ImGui::TextDisabled("%s", tr(T::training_reading_timeline));
    return;
  }
  const TrainingTimeline* timeline = training.timeline();
  if (!timeline || timeline->snapshots.empty()) {
    if (!training.timeline_error().empty()) {
      ImGui::PushTextWrapPos(0);
      {
        const ImVec4 colour = kRed;
        text_wrapped_at_pos(training.timeline_error(), &colour);
      }
      ImGui::PopTextWrapPos();
    }
    text_disabled_wrapped("%s", tr(T::training_no_snapshots_yet_run));
    return;
  }
  const int count = static_cast<int>(timeline->snapshots.size());
  const std::string source = training.timeline_source();
  const size_t slash = source.find_last_of('/');
  if (!presenting_) {  // (presenting: the slider's tooltip names the file)
    text_disabled_wrapped(
        "%s", tr(T::training_snapshots,
                 {{"file", slash == std::string::npos ? source.c_str() : source.c_str() + slash + 1}, {"count", count}})
                  .c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", source.c_str());
  }
  int index = training.shown_snapshot();
  const int shown = index;
  if (index < 0) index = count - 1;
  const TimelineSnapshot& s = timeline->snapshots[static_cast<size_t>(index)];
  std::string label;
  const long long step = s.step;
  if (s.epoch == 0)
    label = tr(T::training_snapshot_before, {{"step", step}});
  else if (s.valid_perplexity >= 0)
    label = tr(T::training_snapshot_epoch_end_perplexity,
               {{"step", step}, {"epoch", s.epoch}, {"perplexity", number_text("%.1f", s.valid_perplexity)}});
  else if (s.valid_bleu >= 0)
    label = tr(T::training_snapshot_epoch_end,
               {{"step", step}, {"epoch", s.epoch}, {"bleu", number_text("%.1f", s.valid_bleu)}});
  else
    label = tr(T::training_snapshot, {{"step", step}, {"epoch", s.epoch}, {"loss", number_text("%.2f", s.loss)}});
  // (a slider's text is a printf format: a literal percent sign doubled)
  std::string slider_format;
  for (const char ch : label) slider_format.append(ch == '%' ? 2 : 1, ch);
  label = slider_format;
  ImGui::SetNextItemWidth(-1);
  int dragged = index;
  if (ImGui::SliderInt("##snapshot", &dragged, 0, count - 1,
                       shown < 0 ? tr(T::training_snapshot_not_shown) : label.c_str()) &&
      dragged != shown)
    show_snapshot(dragged);
  // (each button on the line before while it fits: large type wraps them rather than cut the last off)
  if (ImGui::Button("<") && index > 0) show_snapshot(shown < 0 ? count - 1 : index - 1);
  same_line_if_fits(button_width(">"));
  if (ImGui::Button(">") && shown >= 0 && index + 1 < count) show_snapshot(index + 1);
  same_line_if_fits(button_width(tr(T::training_first)));
  if (ImGui::Button(tr(T::training_first))) show_snapshot(0);
  same_line_if_fits(button_width(tr(T::training_last)));
  if (ImGui::Button(tr(T::training_last))) show_snapshot(count - 1);
  if (training.running() || training.session()) {
    same_line_if_fits(button_width(tr(T::training_follow_run)));
    ImGui::BeginDisabled(training.following_live());
    if (ImGui::Button(tr(T::training_follow_run))) ask_ = TrainingAsk{TrainingAsk::Do::FollowLive};
    ImGui::EndDisabled();
  }
  const char* back = tr(presenting_ ? T::training_back_short : T::training_back);
  same_line_if_fits(button_width(back));
  ImGui::BeginDisabled(training.file_model_shown(state));
  if (ImGui::Button(back)) ask_ = TrainingAsk{TrainingAsk::Do::ShowFileModel};
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", tr(T::training_back_weights_model_file));
  ImGui::EndDisabled();
  record_item("training.back_to_file", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, back);
  if (presenting_) return;
  text_disabled_wrapped("%s",
                        tr(T::training_stored, {{"storage", snapshot_storage_description(timeline->storage)}}).c_str());
  // Save: never over the open model file; an existing file only when asked.
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - button_width(tr(T::training_save_timeline)) -
                          ImGui::GetStyle().ItemSpacing.x);
  ImGui::InputText("##save_timeline", &save_path_);
  ImGui::SameLine();
  if (ImGui::Button(tr(T::training_save_timeline))) {
    TrainingAsk save{TrainingAsk::Do::SaveTimeline};
    save.path = save_path_;
    ask_ = save;
  }
}

void TrainingPanel::draw_model_now(const AppState& state, const Training& training, AttentionSelection& head,
                                   Part part) {
  const bool header = part != Part::Map, map = part != Part::Header;
  if (!presenting_) ImGui::TextColored(kBlue, "%s", tr(T::training_what_model_does_now));
  if (!state.ready()) {
    if (header)
      ImGui::TextDisabled("%s", tr(state.busy()            ? T::training_decoding
                                   : state.decoder_only() ? T::training_no_continuation_yet
                                   : state.encoder_only() ? T::training_no_fill_yet
                                                          : T::training_no_translation_yet));
    return;
  }
  const std::string label = training.shown_label(state);
  // (presenting, a snapshot of the timeline is named by the slider above: no second line for it)
  const bool snapshot_shown = presenting_ && training.shown_snapshot() >= 0 && !training.following_live();
  if (!header || snapshot_shown) {
  } else if (!label.empty()) {
    if (training.following_live() && training.seconds_since_refresh() >= 0 && !presenting_)
      text_wrapped(
                         tr(T::training_shown_ago, {{"label", label},
                                                    {"seconds", number_text("%.0f", training.seconds_since_refresh())},
                                                    {"every", number_text("%.0f", Training::kRefreshSeconds)}})
                             .c_str());
    else
      text_wrapped(label.c_str());
  } else {
    ImGui::TextUnformatted(tr(T::training_model_file_opened));
  }
  // A GPT shows its own self-attention, the causal triangle, where a translator shows cross-attention; and its
  // continuation of the prompt (AppState decodes the model on show) where a translator shows its translation. A
  // BERT shows its encoder's self-attention, both sides, and the sentence with each blank filled in.
  const bool gpt = state.decoder_only(), bert = state.encoder_only();
  if (!presenting_ && header) {  // presenting, the header strip shows them
    ImGui::PushTextWrapPos(0);
    const ImVec4 gold(1.0f, 0.85f, 0.45f, 1.0f);
    if (gpt) {
      text_wrapped_at_pos(tr(T::training_prompt, {{"prompt", state.sentence()}}),
                          &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      const std::string continuation = tr(T::training_continuation, {{"continuation", state.translation_text()}});
      text_wrapped_at_pos(continuation, &gold);
      record_item("training.continuation", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, continuation);
    } else if (bert) {
      text_wrapped_at_pos(tr(T::training_blank_sentence, {{"sentence", state.sentence()}}),
                          &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      const std::string filled = "-> " + state.filled_in_text();
      text_wrapped_at_pos(filled, &gold);
      record_item("training.filled", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, filled);
    } else {
      text_wrapped_at_pos(state.sentence(), &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      text_wrapped_at_pos("-> " + state.translation_text(), &gold);
    }
    ImGui::PopTextWrapPos();
  }

  const Config& c = state.model()->config;
  const AttentionKind kind = gpt ? AttentionKind::Decoder : bert ? AttentionKind::Encoder : AttentionKind::Cross;
  const int L = bert ? c.n_encoder_layers : c.n_decoder_layers, H = c.n_heads;
  head.kind = kind;
  head.layer = std::clamp(head.layer, 0, L - 1);
  head.head = std::clamp(head.head, 0, c.n_heads - 1);
  if (header && controls_toggle(&controls_open_)) {
    if (presenting_) ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    numbered_slider(tr_label(T::training_layer, "training").c_str(), &head.layer, L);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    numbered_slider(tr_label(T::training_head, "training").c_str(), &head.head, c.n_heads);
  }
  const std::vector<std::string> rows = bert ? state.source_labels() : state.decoder_row_labels(),
                                 cols = gpt ? state.decoder_input_labels() : state.source_labels();
  if (uploaded_version_ != state.version() || uploaded_head_.layer != head.layer || uploaded_head_.head != head.head ||
      uploaded_head_.kind != head.kind) {
    const AttentionTrace* a = selected_attention(state.trace(), head);
    if (!a) return;
    const Mat p = probabilities_with_blocked_cells(*a, head.head);
    head_entropy_ = mean_row_entropy(p);  // blocked cells are NaN there: they count as zero
    // Spread evenly, a row over n keys has entropy ln n: a causal row r may look at its r + 1 keys only.
    head_even_ = 0;
    for (Eigen::Index i = 0; i < p.rows(); ++i) {
      int open = 0;
      for (Eigen::Index j = 0; j < p.cols(); ++j) open += std::isfinite(p(i, j)) ? 1 : 0;
      head_even_ += std::log(static_cast<double>(std::max(1, open)));
    }
    head_even_ /= static_cast<double>(std::max<Eigen::Index>(1, p.rows()));
    head_view_.set_values(p, 0.0f, 1.0f);
    head_view_.heatmap().set_axis_labels(rows, cols);
    grid_.resize(static_cast<size_t>(L * H));
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        auto& m = grid_[static_cast<size_t>(l * H + h)];
        if (!m) m = std::make_unique<Heatmap>();
        const AttentionTrace* g = selected_attention(state.trace(), {kind, l, h});
        if (!g) continue;
        const Mat q = probabilities_with_blocked_cells(*g, h);
        m->set_values(q.data(), static_cast<int>(q.rows()), static_cast<int>(q.cols()), 0.0f, 1.0f);
      }
    uploaded_version_ = state.version();
    uploaded_head_ = head;
  }
  // The head, large, with its words: rows are the translation's positions, columns the source words.
  if (header) {
    // (an even row over n keys has entropy ln n)
    const double even = gpt ? head_even_ : std::log(static_cast<double>(std::max(1, head_view_.heatmap().cols())));
    text_wrapped(tr(gpt    ? (presenting_ ? T::training_self_attention_entropy_even : T::training_self_attention_layer_head)
                    : bert ? (presenting_ ? T::training_self_attention_entropy_even : T::training_bert_attention_layer_head)
                    : presenting_ ? T::training_cross_attention_entropy_even
                                  : T::training_cross_attention_layer_head,
                                {{"layer", shown_number(head.layer)},
                                 {"head", shown_number(head.head)},
                                 {"entropy", number_text("%.2f", head_entropy_)},
                                 {"even", number_text("%.2f", even)}})
                                 .c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", tr(gpt    ? T::training_mean_over_rows_sum_causal
                                 : bert ? T::training_mean_over_rows_sum_both_sides
                                        : T::training_mean_over_rows_sum));
  }
  if (!map) return;
  // As the attention stages draw a map: labels, colour bar, zoom where rows would be too low for their words (an
  // untrained model's 43 repeated words) and saying so; presenting, the column's height.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float small = ImGui::GetFontSize() * (L * H > 8 ? 2.2f : 3.0f);  // the grid's maps
  const float grid_height =
      presenting_ ? 0.0f : ImGui::GetTextLineHeightWithSpacing() + L * (small + ImGui::GetStyle().ItemSpacing.y);
  MapAxis row_axis, col_axis;
  row_axis.labels = &rows;
  row_axis.tokens = true;
  row_axis.side = bert ? TokenSide::Source : TokenSide::Target;
  row_axis.role = TokenRole::Query;
  col_axis.labels = &cols;
  col_axis.tokens = true;
  col_axis.side = gpt ? TokenSide::Target : TokenSide::Source;
  col_axis.role = TokenRole::Key;
  MapViewOptions options;
  options.style = {Colormap::Viridis, true};
  options.value_name = tr(T::map_value_probability);
  options.square_cells = true;
  options.always_label = presenting_;
  ImVec2 size(avail.x, std::max(4 * ImGui::GetFontSize(), avail.y - grid_height - 4));
  if (presenting_) {  // as the attention stages fit a map to a projector (map_view.h)
    const MapView::PresentedFit fit = MapView::fit_presented(
        head_view_.heatmap().rows(), head_view_.heatmap().cols(), MapView::widest_label(rows), MapView::widest_label(cols),
        size, colour_bar_width(0.0f, 1.0f) + ImGui::GetStyle().ItemSpacing.x);
    options.label_width = fit.label_width;
    options.top_room = fit.top_room;
    options.label_size = fit.label_size;
    size = fit.size;
  }
  const ImVec2 map_origin = ImGui::GetCursorScreenPos();
  head_view_.draw(gpt ? "training_self_head" : bert ? "training_encoder_head" : "training_cross_head", size, row_axis,
                  col_axis, options);
  record_item("main_map", map_origin, ImVec2(map_origin.x + avail.x, ImGui::GetItemRectMax().y), -1, "training");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // Every cross-attention head, small: click one to show it large.
  if (presenting_) return;
  ImGui::TextUnformatted(tr(gpt    ? T::training_every_self_attention_head
                            : bert ? T::training_every_bert_attention_head
                                   : T::training_every_cross_attention_head));
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      Heatmap& m = *grid_[static_cast<size_t>(l * H + h)];
      const float scale = small / std::max(1, std::max(m.rows(), m.cols()));
      if (h > 0) ImGui::SameLine();
      const ImVec2 at = ImGui::GetCursorScreenPos();
      char name[40];
      std::snprintf(name, sizeof(name), gpt ? "training_self_%d_%d" : bert ? "training_encoder_%d_%d" : "training_cross_%d_%d",
                    shown_number(l), shown_number(h));
      m.draw(name, ImVec2(m.cols() * scale, m.rows() * scale), HeatmapStyle{Colormap::Viridis, false});
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "%s",
            tr(T::training_layer_head_click_show, {{"layer", shown_number(l)}, {"head", shown_number(h)}}).c_str());
      if (ImGui::IsItemClicked()) {
        head.layer = l;
        head.head = h;
      }
      if (l == head.layer && h == head.head)
        draw->AddRect(ImVec2(at.x - 2, at.y - 2), ImVec2(at.x + m.cols() * scale + 2, at.y + m.rows() * scale + 2),
                      IM_COL32(240, 190, 40, 255), 0, 0, 2.0f);
    }
  }
}

}  // namespace sf::gui
