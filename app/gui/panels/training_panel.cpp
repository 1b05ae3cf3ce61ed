#include "gui/panels/training_panel.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "gui/widgets.h"

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

}  // namespace

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
  ImGui::BeginChild("training_run", ImVec2(left_width, 0), false);
  draw_run(training, data_dir);
  ImGui::Separator();
  draw_timeline(state, training);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("training_model_now", ImVec2(0, 0), false);
  draw_model_now(state, training, head);
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
  if (!training.session()) return;

  // Where the run stands.
  const char* state_name = training_state_name(st.state);
  if (st.state == TrainingSession::State::Failed) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(kRed, "Training failed: %s", st.message.c_str());
    ImGui::PopTextWrapPos();
  } else if (st.batches > 0) {
    ImGui::Text("%s: epoch %d of %d, batch %d of %d, step %lld", state_name, st.epoch, st.epochs, st.batch,
                st.batches, static_cast<long long>(st.step));
    ImGui::ProgressBar(static_cast<float>(st.batch) / static_cast<float>(st.batches), ImVec2(-1, 0));
    ImGui::Text("learning rate %.2e   %.0f tokens/s   %s left", st.learning_rate, st.tokens_per_second,
                minutes_seconds(st.seconds_left).c_str());
    if (st.device.empty()) ImGui::TextDisabled("computing on the CPU");
    else ImGui::TextDisabled("computing on the GPU: %s", st.device.c_str());
  } else {
    ImGui::Text("%s: reading the data and building the vocabularies...", state_name);
  }
  // The curves: the training loss of every step, and the validation loss of every epoch.
  const auto& losses = training.losses();
  const float width = ImGui::GetContentRegionAvail().x;
  const float height = ImGui::GetFontSize() * 4.5f;
  std::vector<float>& train_loss = loss_values_;  // what is new since the last frame is appended
  if (train_loss.size() > losses.size()) train_loss.clear();  // a new run
  for (size_t i = train_loss.size(); i < losses.size(); ++i) train_loss.push_back(static_cast<float>(losses[i].loss));
  char overlay[64];
  std::snprintf(overlay, sizeof(overlay), "training loss %.2f (step %lld)", train_loss.empty() ? 0.0f : train_loss.back(),
                static_cast<long long>(losses.empty() ? 0 : losses.back().step));
  curve("##train_loss", train_loss, ImVec2(width, height), overlay);
  std::vector<float> valid_loss;
  for (const EpochRecord& e : st.history) valid_loss.push_back(static_cast<float>(e.valid_nll));
  std::snprintf(overlay, sizeof(overlay), valid_loss.empty() ? "validation loss: after the first epoch"
                                                             : "validation loss %.2f (epoch %zu)",
                valid_loss.empty() ? 0.0f : valid_loss.back(), valid_loss.size());
  curve("##valid_loss", valid_loss, ImVec2(width, height * 0.7f), overlay);
  if (!st.history.empty() && ImGui::BeginTable("epochs", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
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
  ImGui::TextColored(kBlue, "Timeline");
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
  text_disabled_wrapped("%s: %d snapshots", slash == std::string::npos ? source.c_str() : source.c_str() + slash + 1,
                        count);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", source.c_str());
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
  if (ImGui::Button("<") && index > 0) training.show_snapshot(state, shown < 0 ? count - 1 : index - 1);
  ImGui::SameLine();
  if (ImGui::Button(">") && shown >= 0 && index + 1 < count) training.show_snapshot(state, index + 1);
  ImGui::SameLine();
  if (ImGui::Button("First")) training.show_snapshot(state, 0);
  ImGui::SameLine();
  if (ImGui::Button("Last")) training.show_snapshot(state, count - 1);
  if (training.running() || training.session()) {
    ImGui::SameLine();
    ImGui::BeginDisabled(training.following_live());
    if (ImGui::Button("Follow the run")) training.follow_live();
    ImGui::EndDisabled();
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(training.file_model_shown(state));
  if (ImGui::Button("Back to the model file")) training.show_file_model(state);
  ImGui::EndDisabled();
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

void TrainingPanel::draw_model_now(const AppState& state, const Training& training, AttentionSelection& head) {
  if (!presenting_) ImGui::TextColored(kBlue, "What the model does now");
  if (!state.ready()) {
    ImGui::TextDisabled(state.busy() ? "decoding..." : "no translation yet");
    return;
  }
  const std::string label = training.shown_label(state);
  if (!label.empty()) {
    if (training.following_live() && training.seconds_since_refresh() >= 0)
      ImGui::Text("%s (shown %.0f s ago; every %.0f s)", label.c_str(), training.seconds_since_refresh(),
                  Training::kRefreshSeconds);
    else
      ImGui::Text("%s", label.c_str());
  } else {
    ImGui::Text("the model file as opened");
  }
  if (!presenting_) {  // presenting, the header strip shows them
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%s", state.sentence.c_str());
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "-> %s", state.translation_text().c_str());
    ImGui::PopTextWrapPos();
  }

  const Config& c = state.model->config;
  head.kind = AttentionKind::Cross;
  head.layer = std::clamp(head.layer, 0, c.n_decoder_layers - 1);
  head.head = std::clamp(head.head, 0, c.n_heads - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  numbered_slider("layer##training", &head.layer, c.n_decoder_layers);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  numbered_slider("head##training", &head.head, c.n_heads);
  const int H = c.n_heads, L = c.n_decoder_layers;
  if (uploaded_version_ != state.version || uploaded_head_.layer != head.layer || uploaded_head_.head != head.head) {
    const AttentionTrace* a = selected_attention(state.trace, head);
    if (!a) return;
    const Mat p = probabilities_with_blocked_cells(*a, head.head);
    head_entropy_ = mean_row_entropy(p);  // blocked cells are NaN there: they count as zero
    head_map_.set_values(p.data(), static_cast<int>(p.rows()), static_cast<int>(p.cols()), 0.0f, 1.0f);
    head_map_.set_axis_labels(state.decoder_row_labels(), state.source_labels());
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
  {
    const double entropy = head_entropy_;
    ImGui::Text("cross-attention %d.%d: row entropy %.2f (even: %.2f)", head.layer, head.head, entropy,
                std::log(static_cast<double>(std::max(1, head_map_.cols()))));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The mean over the rows of -sum p ln p, in nats: ln(keys) when a row spreads evenly over the\n"
                        "source words, 0 when it looks at one word. It falls as the model learns where to look.");
  }
  const auto& rows = head_map_.row_labels();
  const auto& cols = head_map_.col_labels();
  float row_label_width = 0, col_label_width = 0;
  for (const auto& r : rows) row_label_width = std::max(row_label_width, ImGui::CalcTextSize(r.c_str()).x);
  for (const auto& r : cols) col_label_width = std::max(col_label_width, ImGui::CalcTextSize(r.c_str()).x);
  row_label_width += 6;
  col_label_width += 6;
  if (presenting_) {  // the labels are measured before knowing whether the cells will carry them
    const float fit_rows = (ImGui::GetContentRegionAvail().y - col_label_width) / std::max(1, head_map_.rows());
    if (fit_rows < ImGui::GetTextLineHeight() * 0.95f) row_label_width = col_label_width = 0;
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float small = ImGui::GetFontSize() * (L * H > 8 ? 2.2f : 3.0f);  // the grid's maps
  // Presenting, the one head takes the room (the grid of every head is the all-heads stage's).
  const float grid_height =
      presenting_ ? 0.0f : ImGui::GetTextLineHeightWithSpacing() + L * (small + ImGui::GetStyle().ItemSpacing.y);
  const float room_x = avail.x - row_label_width, room_y = avail.y - col_label_width - grid_height;
  // Cells as large as the room allows; the words beside them only where a cell is as tall as a line of text
  // (a 40-row map of an untrained model's "spout spout ..." shrinks to fit, unlabelled rows and all).
  const float fit = std::min(room_x / std::max(1, head_map_.cols()), room_y / std::max(1, head_map_.rows()));
  const bool labelled = fit >= ImGui::GetTextLineHeight() * 0.95f || !presenting_;
  const float cell = labelled ? std::max(ImGui::GetTextLineHeight(), fit) : std::max(3.0f, fit);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImVec2 map_at(origin.x + row_label_width, origin.y + col_label_width);
  for (size_t j = 0; labelled && j < cols.size(); ++j)  // source words, read bottom to top above their columns
    rotated_text(draw, ImVec2(map_at.x + (j + 0.5f) * cell + ImGui::GetFontSize() * 0.35f, map_at.y - 4), text,
                 cols[j].c_str(), 1.5707963f);
  for (size_t i = 0; labelled && i < rows.size(); ++i)
    draw->AddText(ImVec2(origin.x, map_at.y + (i + 0.5f) * cell - ImGui::GetFontSize() / 2), text, rows[i].c_str());
  ImGui::SetCursorScreenPos(map_at);
  int hr = -1, hc = -1;
  if (head_map_.draw("training_cross_head", ImVec2(cell * head_map_.cols(), cell * head_map_.rows()), {}, &hr, &hc) &&
      hr >= 0 && hc >= 0 && hr < static_cast<int>(rows.size()) && hc < static_cast<int>(cols.size()))
    ImGui::SetTooltip("%s looks at %s: %.3f", rows[static_cast<size_t>(hr)].c_str(), cols[static_cast<size_t>(hc)].c_str(),
                      head_map_.value(hr, hc));
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
