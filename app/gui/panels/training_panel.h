// Panel: the Training stage. Left, the run: a recipe, Train / Pause / Resume / Stop and threads, the loss
// curves, learning rate, speed, time left and validation BLEU per epoch; under it the timeline slider, which
// shows any snapshot in every stage. Right, what the model does now with the sentence on screen: its
// translation, one cross-attention head (chosen here) large, and every cross-attention head small, each marked
// with the step of the weights it comes from.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/app_state.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/panel.h"
#include "gui/render/heatmap.h"
#include "gui/render/map_view.h"
#include "gui/training.h"

namespace sf::gui {

// What the Training stage says where Multi30k is missing ("" where `data_dir` holds it): the folders it looked in
// (--data's, or the ones beside the source tree and the current folder) and where the data come from.
std::string training_data_note(const std::string& data_dir);

// Asks for a run to start, pause, resume or stop, a snapshot or the model file to be shown, the timeline saved
// (PanelAsk::training); Training's message() says how a start or a save went.
class TrainingPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  // `data_dir`: where live training reads Multi30k (the app's --data). `head`: the cross-attention head shown
  // large (its kind is ignored; the panel shows cross-attention).
  // `presenting`: presentation mode, where the header strip shows the sentence and the translation and the
  // maps need the room: the recipe picker, threads and saving are left out.
  void draw_stage(const AppState& state, const Training& training, const std::string& data_dir,
                  AttentionSelection& head, bool presenting);
  void draw_run(const Training& training, const std::string& data_dir);
  void show_snapshot(int index);  // asks for it
  // Recipes, threads, where to save (disabled while a run goes, the running recipe marked: a script may have
  // started another than the one picked).
  void draw_recipe_picker(bool running, const std::string& running_recipe);
  void draw_timeline(const AppState& state, const Training& training);
  // The model now: its weights' label, the head's controls and row entropy (Header), the head's map (Map), or both
  // with every head small under it (All: the desk's layout).
  enum class Part { All, Header, Map };
  void draw_model_now(const AppState& state, const Training& training, AttentionSelection& head, Part part);
  bool presenting_ = false;
  std::string recipe_ = "classroom";
  int threads_ = 0;  // 0: all but one core
  std::optional<TrainingAsk> ask_;  // what the user did this frame
  AttentionSelection head_{AttentionKind::Cross, 99, 0};  // the head shown large (the last layer, clamped)
  std::string save_path_ = "my-run.timeline.safetensors";
  std::string run_path_;  // where the run saves its model and checkpoint ("" : nothing written)
  std::vector<float> loss_values_;  // the training loss of every step, as the curve takes it
  MapView head_view_;              // the head shown large
  double head_entropy_ = 0;        // its mean row entropy
  double head_even_ = 0;           // what that entropy is spread evenly over the keys a row may see
  bool controls_open_ = false;     // presentation mode: the layer and head sliders opened under their toggle
  std::vector<std::unique_ptr<Heatmap>> grid_;  // layer * H + head
  int uploaded_version_ = -1;
  AttentionSelection uploaded_head_;
};

}  // namespace sf::gui
