// The one interface every stage's panel shares. A panel draws from a read-only view of the app (PanelContext)
// and returns what the user asked for (PanelAsk); the app applies the asks after the panel has drawn, at one
// place (App::apply), so no panel writes the state, and the same ask from a key, a script or a click does the
// same thing. Which panel draws which stage is the stage table's panel column (gui/stages.inc).
#pragma once
#include <optional>
#include <string>

#include "gui/app_state.h"
#include "gui/stages.h"
#include "gui/training.h"

namespace sf::gui {

// The kind, layer and head on show (0-based): the attention stages, Q/K/V, concat, add & norm and the grid read it.
struct AttentionSelection {
  AttentionKind kind = AttentionKind::Encoder;
  int layer = 0;
  int head = 0;
  bool operator==(const AttentionSelection&) const = default;
};

// What a panel reads. Everything is const: a panel changes nothing but its own look (zoom, an opened cell).
struct PanelContext {
  const AppState& state;
  Stage stage;                          // the stage being drawn (one panel draws several: add & norm, attention)
  const AttentionSelection& selection;  // clamped to the model on show
  bool presenting = false;              // presentation mode: the stage alone, large
  int output_position = 0;              // the decoder position the output stage shows
  const Training& training;             // the live run and the timeline (the Training stage)
  const std::string& training_data_dir; // where live training reads Multi30k (--data)
};

// What the user asked for in one frame, each at most once; empty: nothing.
struct PanelAsk {
  std::optional<Stage> open_stage;               // a thumbnail, a grid cell
  std::optional<AttentionSelection> select;      // another kind, layer or head
  std::optional<Interventions> interventions;    // a head switched, a mask painted, a switch flipped
  std::optional<int> source_padding;             // <pad> tokens after the sentence
  std::optional<int> output_position;            // the output stage's slider
  std::optional<int> toggle_mask;                // a sentence position: [MASK] in place of its word, or the word back
  std::optional<std::pair<int, int>> force_token;  // (position, token id): the decoder takes that token there
  std::optional<DecodeOptions> decode_options;   // greedy / beam / sampling and their parameters
  std::optional<std::string> reference;          // teacher forcing ("": free running again)
  enum class Step { None, Restart, Back, Forward, ToEnd } step = Step::None;
  std::optional<TrainingAsk> training;          // the Training stage (gui/training.h)
};

// A selection the panel's widgets edited (or clamped), as an ask: empty when it is the one it was given.
inline PanelAsk ask_select(const PanelContext& context, const AttentionSelection& edited) {
  PanelAsk ask;
  if (!(edited == context.selection)) ask.select = edited;
  return ask;
}

class StagePanel {
 public:
  virtual ~StagePanel() = default;
  virtual PanelAsk draw(const PanelContext& context) = 0;
};

}  // namespace sf::gui
