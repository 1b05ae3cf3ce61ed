// Panel: the pipeline map, the paper's architecture figure (Vaswani et al. 2017, figure 1) drawn as a
// clickable diagram of the model's own shape: for an encoder-decoder the encoder column on the left, the
// decoder column on the right, both read bottom to top, the encoder's output arrow into every decoder layer's
// cross-attention; one column for a decoder-only or an encoder-only model. The current stage is lit.
#pragma once
#include <vector>

#include "gui/stages.h"
#include "model/config.h"

namespace sf::gui {

// One box of the figure: its column (0 left), its row counted from the bottom (0: the tokens), its label, the
// stage a click opens.
struct PipelineBox {
  int column = 0;
  float row = 0;
  T label;
  Stage stage;
};
// A residual connection: from the input of box `from` around it into the add & norm `into`, on the left or the
// right of the column.
struct PipelineResidual {
  int from = 0, into = 0;
  bool left = true;
};
struct PipelineLayout {
  int columns = 0;
  std::vector<PipelineBox> boxes;           // in each column bottom to top; arrows join neighbours of a column
  std::vector<PipelineResidual> residuals;
  int encoder_column = -1, decoder_column = -1;  // -1: the shape has no such stack
  int encoder_output = -1;                  // the encoder's last add & norm (its K, V go to the cross-attention)
  int cross_attention = -1;                 // the decoder's cross-attention box; -1 without an encoder
  float top_row = 0;                        // above the highest box
};
// The figure for a model shape.
PipelineLayout pipeline_layout(ModelStacks stacks);

struct PipelineMapView {
  Stage current = Stage::Tokens;
  int layer = 0;                   // the layer the layer stages show (0-based)
  const Config* config = nullptr;  // for "x N"; nullptr while no model is loaded
};

// Draws the map into the current window's remaining width. Returns true with *clicked set when the user
// clicked a stage.
bool draw_pipeline_map(const PipelineMapView& view, Stage* clicked);

}  // namespace sf::gui
