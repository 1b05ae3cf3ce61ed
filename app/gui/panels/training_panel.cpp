#include "gui/panels/training_panel.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "gui/render/item_placements.h"
#include "gui/widgets.h"
#include "util/paths.h"

namespace sf::gui {

namespace {

const ImVec4 kRed(1.0f, 0.45f, 0.4f, 1.0f), kGreen(0.5f, 0.9f, 0.5f, 1.0f), kBlue(0.55f, 0.8f, 1.0f, 1.0f);

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
  std::string folders;
  for (size_t i = 0; i < looked.size(); ++i)
    folders += (i == 0 ? "" : i + 1 == looked.size() ? " and " : ", ") + looked[i];
  return "Multi30k is not here: looked for train.lc.norm.tok.de and .en in " +
         (folders.empty() ? std::string("no folder") : folders) +
         ". It comes from github.com/multi30k/dataset (data/task1, the tokenized lowercase files *.lc.norm.tok.*); "
         "start the app with --data DIR to use them. The shipped timeline below plays without them.";
}

void TrainingPanel::draw(AppState& state, Training& training, const std::string& data_dir, AttentionSelection& head,
                         bool presenting) {
  presenting_ = presenting;
  if (!presenting) ImGui::Text("Training: watch a Transformer learn");
  explanation(
      "A model starts from random weights: its attention is spread evenly and its translation is a word repeated. "
      "Training shows it sentence pairs, measures how unlikely it found the right next word (the loss) and nudges "
      "every weight downhill. Train a small model here and watch the translation and the cross-attention sharpen, "
      "or drag the timeline to any saved step: every stage of the app then shows the model as it was.");
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

void TrainingPanel::draw_recipe_picker(bool running) {
  ImGui::BeginDisabled(running);
  for (const TrainingRecipe& r : training_recipes()) {
    if (ImGui::RadioButton(r.title.c_str(), recipe_ == r.id)) recipe_ = r.id;
    ImGui::Indent();
    text_disabled_wrapped("%s", r.about.c_str());
    ImGui::Unindent();
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads_ == 0) threads_ = std::max(1, cores - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderInt("threads", &threads_, 1, cores);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Cores the training uses; leave one for the app to stay smooth (%d here)", cores);
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - labelled_field_width(0, "save to (optional)"));
  ImGui::InputTextWithHint("save to (optional)", "nothing is written", &run_path_);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("A model file name: the model and MODEL.checkpoint are written after every epoch.\n"
                      "Train again with the same name to resume from the checkpoint. An existing file\n"
                      "without a checkpoint is never replaced.");
  ImGui::EndDisabled();
}

void TrainingPanel::draw_run(Training& training, const std::string& data_dir) {
  const TrainingSession::Status& st = training.status();
  const bool running = training.running();
  if (!presenting_) {  // presenting: the buttons alone
    ImGui::TextColored(kBlue, "Train a model here");
    draw_recipe_picker(running);
  }
  const std::string data_note = running ? std::string() : training_data_note(data_dir);
  if (!data_note.empty()) {  // said before anyone presses Train: which folders, where the data come from
    ImGui::PushTextWrapPos(0);
    if (presenting_) ImGui::TextColored(kRed, "No training data (Multi30k) here: the shipped timeline still plays.");
    else ImGui::TextColored(kRed, "%s", data_note.c_str());
    if (presenting_ && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", data_note.c_str());
    ImGui::PopTextWrapPos();
    record_item("training.no_data", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, data_note);
  }
  if (!running) {
    if (ImGui::Button("Train")) {
      std::string error;
      message_ok_ = training.start(recipe_, data_dir, threads_, &error, run_path_);
      message_ = !message_ok_ ? error : training.resumed() ? "resuming from " + run_path_ + ".checkpoint" : "";
    }
  } else {
    if (training.paused() ? ImGui::Button("Resume") : ImGui::Button("Pause"))
      training.paused() ? training.resume() : training.pause();
    ImGui::SameLine();
    if (ImGui::Button("Stop")) training.stop();
  }
  if (!message_.empty()) {
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(message_ok_ ? kGreen : kRed, "%s", message_.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!training.session()) {
    // No run yet: the curves of the run on the timeline (the shipped classroom run), at its snapshots.
    const TrainingTimeline* timeline = training.timeline();
    if (!timeline || timeline->snapshots.size() < 2) return;
    std::vector<double> steps, losses, bleu_steps, bleus;
    for (const TimelineSnapshot& snap : timeline->snapshots) {
      if (snap.step > 0 && snap.loss > 0) {
        steps.push_back(static_cast<double>(snap.step));
        losses.push_back(snap.loss);
      }
      if (snap.valid_bleu >= 0) {
        bleu_steps.push_back(static_cast<double>(snap.step));
        bleus.push_back(snap.valid_bleu);
      }
    }
    const float width = ImGui::GetContentRegionAvail().x, height = ImGui::GetFontSize() * (presenting_ ? 2.4f : 4.0f);
    char overlay[96];
    if (presenting_)
      std::snprintf(overlay, sizeof(overlay), "training loss %.2f", losses.empty() ? 0.0 : losses.back());
    else
      std::snprintf(overlay, sizeof(overlay), "the timeline's run: training loss, %.2f at step %lld",
                    losses.empty() ? 0.0 : losses.back(), static_cast<long long>(steps.empty() ? 0 : steps.back()));
    // (presenting: side by side, one line of the column's height for both)
    const float each = presenting_ ? 0.5f * (width - ImGui::GetStyle().ItemSpacing.x) : width;
    curve_over_steps(steps, losses, ImVec2(each, height), overlay, "training.loss_curve");
    if (presenting_) std::snprintf(overlay, sizeof(overlay), "BLEU %.1f", bleus.empty() ? 0.0 : bleus.back());
    else std::snprintf(overlay, sizeof(overlay), "validation BLEU at each epoch's end, %.1f at last", bleus.empty() ? 0.0 : bleus.back());
    if (presenting_) ImGui::SameLine();
    curve_over_steps(bleu_steps, bleus, ImVec2(each, presenting_ ? height : height * 0.8f), overlay, "training.valid_curve");
    return;
  }

  // Where the run stands.
  const char* state_name = training_state_name(st.state);
  if (st.state == TrainingSession::State::Failed) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(kRed, "Training failed: %s", st.message.c_str());
    ImGui::PopTextWrapPos();
  } else if (st.batches > 0) {
    // (presenting: what a class reads, the epoch and the step; the rest on hover)
    if (presenting_) ImGui::TextWrapped("epoch %d of %d, step %lld", st.epoch, st.epochs, static_cast<long long>(st.step));
    else
      ImGui::Text("%s: epoch %d of %d, batch %d of %d, step %lld", state_name, st.epoch, st.epochs, st.batch,
                  st.batches, static_cast<long long>(st.step));
    char details[160];
    std::snprintf(details, sizeof(details), "learning rate %.2e   %.0f tokens/s   %s left", st.learning_rate,
                  st.tokens_per_second, minutes_seconds(st.seconds_left).c_str());
    if (presenting_ && ImGui::IsItemHovered())
      ImGui::SetTooltip("%s: batch %d of %d\n%s\n%s", state_name, st.batch, st.batches, details,
                        st.device.empty() ? "computing on the CPU" : ("computing on the GPU: " + st.device).c_str());
    ImGui::ProgressBar(static_cast<float>(st.batch) / static_cast<float>(st.batches), ImVec2(-1, 0));
    if (!presenting_) {
      ImGui::TextUnformatted(details);
      if (st.device.empty()) ImGui::TextDisabled("computing on the CPU");
      else ImGui::TextDisabled("computing on the GPU: %s", st.device.c_str());
    }
  } else {
    ImGui::Text("%s: reading the data and building the vocabularies...", state_name);
  }
  // The curves: the training loss of every step, and the validation loss of every epoch.
  const auto& losses = training.losses();
  const float width = ImGui::GetContentRegionAvail().x;
  const float height = ImGui::GetFontSize() * (presenting_ ? 2.4f : 4.5f);
  std::vector<float>& train_loss = loss_values_;  // what is new since the last frame is appended
  if (train_loss.size() > losses.size()) train_loss.clear();  // a new run
  for (size_t i = train_loss.size(); i < losses.size(); ++i) train_loss.push_back(static_cast<float>(losses[i].loss));
  char overlay[64];
  std::snprintf(overlay, sizeof(overlay), presenting_ ? "training loss %.2f" : "training loss %.2f (step %lld)",
                train_loss.empty() ? 0.0f : train_loss.back(), static_cast<long long>(losses.empty() ? 0 : losses.back().step));
  const float each = presenting_ ? 0.5f * (width - ImGui::GetStyle().ItemSpacing.x) : width;
  curve("##train_loss", train_loss, ImVec2(each, height), overlay);
  record_item("training.loss_curve", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(train_loss.size()), overlay);
  std::vector<float> valid_loss;
  for (const EpochRecord& e : st.history) valid_loss.push_back(static_cast<float>(e.valid_nll));
  std::snprintf(overlay, sizeof(overlay), valid_loss.empty() ? (presenting_ ? "validation loss" : "validation loss: after the first epoch")
                                                             : "validation loss %.2f (epoch %zu)",
                valid_loss.empty() ? 0.0f : valid_loss.back(), valid_loss.size());
  if (presenting_) ImGui::SameLine();
  curve("##valid_loss", valid_loss, ImVec2(each, presenting_ ? height : height * 0.7f), overlay);
  record_item("training.valid_curve", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(valid_loss.size()), overlay);
  if (!presenting_ && !st.history.empty() && ImGui::BeginTable("epochs", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("epoch");
    ImGui::TableSetupColumn("training loss");
    ImGui::TableSetupColumn("validation loss");
    ImGui::TableSetupColumn("validation BLEU");
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
      ImGui::Text("%.2f", e.valid_bleu);
    }
    ImGui::EndTable();
  }
}

void TrainingPanel::draw_timeline(AppState& state, Training& training) {
  if (!presenting_) ImGui::TextColored(kBlue, "Timeline");
  if (training.timeline_loading()) {
    ImGui::TextDisabled("reading the timeline...");
    return;
  }
  const TrainingTimeline* timeline = training.timeline();
  if (!timeline || timeline->snapshots.empty()) {
    if (!training.timeline_error().empty()) {
      ImGui::PushTextWrapPos(0);
      ImGui::TextColored(kRed, "%s", training.timeline_error().c_str());
      ImGui::PopTextWrapPos();
    }
    text_disabled_wrapped("No snapshots yet: a run keeps the weights at step 0, every 50 steps to 300, every 100 to "
                          "1,000 and at each epoch's end.");
    return;
  }
  const int count = static_cast<int>(timeline->snapshots.size());
  const std::string source = training.timeline_source();
  const size_t slash = source.find_last_of('/');
  if (!presenting_) {  // (presenting: the slider's tooltip names the file)
    text_disabled_wrapped("%s: %d snapshots", slash == std::string::npos ? source.c_str() : source.c_str() + slash + 1,
                          count);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", source.c_str());
  }
  int index = training.shown_snapshot();
  const int shown = index;
  if (index < 0) index = count - 1;
  const TimelineSnapshot& s = timeline->snapshots[static_cast<size_t>(index)];
  char label[128];
  if (s.epoch == 0)
    std::snprintf(label, sizeof(label), "step %lld: before training", static_cast<long long>(s.step));
  else if (s.valid_bleu >= 0)
    std::snprintf(label, sizeof(label), "step %lld, end of epoch %d, BLEU %.1f", static_cast<long long>(s.step), s.epoch,
                  s.valid_bleu);
  else
    std::snprintf(label, sizeof(label), "step %lld, epoch %d, loss %.2f", static_cast<long long>(s.step), s.epoch, s.loss);
  ImGui::SetNextItemWidth(-1);
  int dragged = index;
  if (ImGui::SliderInt("##snapshot", &dragged, 0, count - 1, shown < 0 ? "(not shown: drag to look)" : label) &&
      dragged != shown)
    training.show_snapshot(state, dragged);
  // (each button on the line before while it fits: large type wraps them rather than cut the last off)
  if (ImGui::Button("<") && index > 0) training.show_snapshot(state, shown < 0 ? count - 1 : index - 1);
  same_line_if_fits(button_width(">"));
  if (ImGui::Button(">") && shown >= 0 && index + 1 < count) training.show_snapshot(state, index + 1);
  same_line_if_fits(button_width("First"));
  if (ImGui::Button("First")) training.show_snapshot(state, 0);
  same_line_if_fits(button_width("Last"));
  if (ImGui::Button("Last")) training.show_snapshot(state, count - 1);
  if (training.running() || training.session()) {
    same_line_if_fits(button_width("Follow the run"));
    ImGui::BeginDisabled(training.following_live());
    if (ImGui::Button("Follow the run")) training.follow_live();
    ImGui::EndDisabled();
  }
  const char* back = presenting_ ? "Model file" : "Back to the model file";
  same_line_if_fits(button_width(back));
  ImGui::BeginDisabled(training.file_model_shown(state));
  if (ImGui::Button(back)) training.show_file_model(state);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("back to the weights of the model file");
  ImGui::EndDisabled();
  record_item("training.back_to_file", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, back);
  if (presenting_) return;
  text_disabled_wrapped("Stored as %s", snapshot_storage_description(timeline->storage).c_str());
  // Save: never over the open model file; an existing file only when asked.
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - button_width("Save timeline") -
                          ImGui::GetStyle().ItemSpacing.x);
  ImGui::InputText("##save_timeline", &save_path_);
  ImGui::SameLine();
  if (ImGui::Button("Save timeline")) {
    const std::string problem = training.save_timeline_to(save_path_, false);
    message_ok_ = problem.empty();
    message_ = message_ok_ ? "saved " + save_path_ : problem;
  }
}

void TrainingPanel::draw_model_now(const AppState& state, const Training& training, AttentionSelection& head,
                                   Part part) {
  const bool header = part != Part::Map, map = part != Part::Header;
  if (!presenting_) ImGui::TextColored(kBlue, "What the model does now");
  if (!state.ready()) {
    if (header) ImGui::TextDisabled(state.busy() ? "decoding..." : "no translation yet");
    return;
  }
  const std::string label = training.shown_label(state);
  // (presenting, a snapshot of the timeline is named by the slider above: no second line for it)
  const bool snapshot_shown = presenting_ && training.shown_snapshot() >= 0 && !training.following_live();
  if (!header || snapshot_shown) {
  } else if (!label.empty()) {
    if (training.following_live() && training.seconds_since_refresh() >= 0 && !presenting_)
      ImGui::TextWrapped("%s (shown %.0f s ago; every %.0f s)", label.c_str(), training.seconds_since_refresh(),
                         Training::kRefreshSeconds);
    else
      ImGui::TextWrapped("%s", label.c_str());
  } else {
    ImGui::Text("the model file as opened");
  }
  if (!presenting_ && header) {  // presenting, the header strip shows them
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%s", state.sentence.c_str());
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "-> %s", state.translation_text().c_str());
    ImGui::PopTextWrapPos();
  }

  const Config& c = state.model->config;
  head.kind = AttentionKind::Cross;
  head.layer = std::clamp(head.layer, 0, c.n_decoder_layers - 1);
  head.head = std::clamp(head.head, 0, c.n_heads - 1);
  if (header && controls_toggle(&controls_open_)) {
    if (presenting_) ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    numbered_slider("layer##training", &head.layer, c.n_decoder_layers);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    numbered_slider("head##training", &head.head, c.n_heads);
  }
  const int H = c.n_heads, L = c.n_decoder_layers;
  const std::vector<std::string> rows = state.decoder_row_labels(), cols = state.source_labels();
  if (uploaded_version_ != state.version || uploaded_head_.layer != head.layer || uploaded_head_.head != head.head) {
    const AttentionTrace* a = selected_attention(state.trace, head);
    if (!a) return;
    const Mat p = probabilities_with_blocked_cells(*a, head.head);
    head_entropy_ = mean_row_entropy(p);  // blocked cells are NaN there: they count as zero
    head_view_.set_values(p, 0.0f, 1.0f);
    head_view_.heatmap().set_axis_labels(rows, cols);
    grid_.resize(static_cast<size_t>(L * H));
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        auto& m = grid_[static_cast<size_t>(l * H + h)];
        if (!m) m = std::make_unique<Heatmap>();
        const AttentionTrace* g = selected_attention(state.trace, {AttentionKind::Cross, l, h});
        if (!g) continue;
        const Mat q = probabilities_with_blocked_cells(*g, h);
        m->set_values(q.data(), static_cast<int>(q.rows()), static_cast<int>(q.cols()), 0.0f, 1.0f);
      }
    uploaded_version_ = state.version;
    uploaded_head_ = head;
  }
  // The head, large, with its words: rows are the translation's positions, columns the source words.
  if (header) {
    const double entropy = head_entropy_;
    if (presenting_)
      ImGui::TextWrapped("cross-attention %d.%d: entropy %.2f (even %.2f)", shown_number(head.layer),
                         shown_number(head.head), entropy, std::log(static_cast<double>(std::max(1, head_view_.heatmap().cols()))));
    else
      ImGui::TextWrapped("cross-attention, layer %d, head %d: row entropy %.2f (even: %.2f)", shown_number(head.layer),
                         shown_number(head.head), entropy, std::log(static_cast<double>(std::max(1, head_view_.heatmap().cols()))));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The mean over the rows of -sum p ln p, in nats: ln(keys) when a row spreads evenly over the\n"
                        "source words, 0 when it looks at one word. It falls as the model learns where to look.");
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
  row_axis.side = TokenSide::Target;
  row_axis.role = TokenRole::Query;
  col_axis.labels = &cols;
  col_axis.tokens = true;
  col_axis.side = TokenSide::Source;
  col_axis.role = TokenRole::Key;
  MapViewOptions options;
  options.style = {Colormap::Viridis, true};
  options.value_name = "probability";
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
  head_view_.draw("training_cross_head", size, row_axis, col_axis, options);
  record_item("main_map", map_origin, ImVec2(map_origin.x + avail.x, ImGui::GetItemRectMax().y), -1, "training");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // Every cross-attention head, small: click one to show it large.
  if (presenting_) return;
  ImGui::Text("every cross-attention head (rows: layers)");
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      Heatmap& m = *grid_[static_cast<size_t>(l * H + h)];
      const float scale = small / std::max(1, std::max(m.rows(), m.cols()));
      if (h > 0) ImGui::SameLine();
      const ImVec2 at = ImGui::GetCursorScreenPos();
      char name[40];
      std::snprintf(name, sizeof(name), "training_cross_%d_%d", shown_number(l), shown_number(h));
      m.draw(name, ImVec2(m.cols() * scale, m.rows() * scale), HeatmapStyle{Colormap::Viridis, false});
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d, head %d: click to show it large", shown_number(l), shown_number(h));
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
