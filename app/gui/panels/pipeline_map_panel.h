// Panel: the pipeline map, the paper's architecture figure (Vaswani et al. 2017, figure 1) drawn as a
// clickable diagram: the encoder column on the left, the decoder column on the right, both read bottom to top,
// the encoder's output arrow into every decoder layer's cross-attention, the current stage lit.
#pragma once
#include "gui/stages.h"
#include "model/config.h"

namespace sf::gui {

struct PipelineMapView {
  Stage current = Stage::Tokens;
  int layer = 0;                   // the layer the layer stages show (0-based)
  const Config* config = nullptr;  // for "x N"; nullptr while no model is loaded
};

// Draws the map into the current window's remaining width. Returns true with *clicked set when the user
// clicked a stage.
bool draw_pipeline_map(const PipelineMapView& view, Stage* clicked);

}  // namespace sf::gui
