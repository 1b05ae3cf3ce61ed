#include "gui/stage_panels.h"

#include "gui/panels/add_norm_panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/concat_panel.h"
#include "gui/panels/decoding_panel.h"
#include "gui/panels/embedding_panel.h"
#include "gui/panels/feed_forward_panel.h"
#include "gui/panels/heads_grid_panel.h"
#include "gui/panels/interventions_panel.h"
#include "gui/panels/output_panel.h"
#include "gui/panels/positional_encoding_panel.h"
#include "gui/panels/qkv_panel.h"
#include "gui/panels/tokens_panel.h"
#include "gui/panels/training_panel.h"

namespace sf::gui {

StagePanel& StagePanels::for_stage(Stage stage) {
  switch (stage) {
#define STAGE(stage, id, title, layer_of, map, detail, shapes, panel) \
  case Stage::stage: return get<panel>();
#include "gui/stages.inc"
#undef STAGE
    case Stage::Count: break;
  }
  return get<TokensPanel>();  // (no stage is Count)
}

}  // namespace sf::gui
