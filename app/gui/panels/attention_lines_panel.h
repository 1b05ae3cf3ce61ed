// Panel: attention as lines, as bertviz's head view draws it. The queries' tokens stand in a column on the left,
// the keys' on the right (cross-attention: the English words being written on the left, the German source on
// the right; self-attention: the same words twice), and a line joins every query to every key, as opaque as
// the probability, one colour per head. Clicking a head's colour adds or removes that head; hovering a token
// keeps only its lines. Many tokens: the columns scroll rather than print labels over each other.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "gui/widgets.h"
#include "nn/attention.h"

namespace sf::gui {

struct AttentionLine {
  int head = 0, query = 0, key = 0;
  float weight = 0;  // probs[head](query, key)
};

// The lines of the shown heads, every (query, key) pair whose probability is at least `min_weight` (fainter
// lines are invisible on screen anyway), heads in order, then queries, then keys.
std::vector<AttentionLine> attention_lines(const AttentionTrace& a, const std::vector<bool>& heads_shown,
                                           float min_weight = 0.01f);

// The colour of head h (of H): hues spread around the wheel, bright enough for a black background.
ImU32 head_colour(int head, int heads, float alpha = 1.0f);

class AttentionLinesPanel {
 public:
  // Draws in `size` at the cursor. `selected_head` is shown when the panel is first drawn for a selection.
  void draw(const AttentionTrace& a, const std::vector<std::string>& queries, const std::vector<std::string>& keys,
            TokenSide query_side, TokenSide key_side, int selected_head, ImVec2 size);
  const std::vector<bool>& heads_shown() const { return shown_; }
  void show_only(int head, int heads);

 private:
  std::vector<bool> shown_;
  int shown_for_head_ = -1;  // the selected head the set was last reset to
};

}  // namespace sf::gui
