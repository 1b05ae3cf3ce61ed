// The stage panels, one of each class, made on first use: the panel column of the stage table
// (gui/stages.inc) says which draws a stage. Stages drawn by the same class share one panel (its zoom, its
// opened cell): the three attention stages are one AttentionPanel.
#pragma once
#include <map>
#include <memory>
#include <typeindex>

#include "gui/panels/panel.h"
#include "gui/stages.h"

namespace sf::gui {

class StagePanels {
 public:
  StagePanel& for_stage(Stage stage);
  // The panel of class P (the app reaches the attention panel's view switch and cell expansion this way).
  template <class P>
  P& get() {
    std::unique_ptr<StagePanel>& slot = panels_[std::type_index(typeid(P))];
    if (!slot) slot = std::make_unique<P>();
    return static_cast<P&>(*slot);
  }

 private:
  std::map<std::type_index, std::unique_ptr<StagePanel>> panels_;
};

}  // namespace sf::gui
