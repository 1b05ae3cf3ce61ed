// Panel: "Why this word?" (core/explain/attribution.h), the output stage's third view. For the position on show:
// a bar per input word of how much it moved f = ln p(the chosen token) (gradient x input, integrated gradients or
// attention rollout; signed, diverging colours: orange up, blue down), and under the same words the last layer's
// attention at that row, averaged over its heads (a translator's cross-attention; the other shapes' self-
// attention): attention beside attribution in one glance. Under them the whole sentence: a map of every
// prediction (rows) from every source word (columns; every word read, for the other shapes) in the same diverging
// colours, next to the last layer's attention map. Computed off the frame thread, the position on show first and
// then the whole map, again whenever the trace changes (a new sentence, an intervention, a step) or the method.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "explain/attribution.h"
#include "gui/app_state.h"
#include "gui/background_task.h"

namespace sf::gui {

// What the view shows: the word on show (its bars, and the maps under them where they fit), or the whole
// sentence's maps alone (a projector's large type leaves no room for both).
enum class WhyPart { Word, Sentence };

class AttributionPanel {
 public:
  // `position`: the output row on show; a click on a row of the maps asks for it (returned).
  std::optional<int> draw(const AppState& state, int position);
  void set_method(AttributionMethod method) { method_ = method; }  // (also the script's why-method)
  AttributionMethod method() const { return method_; }
  void set_part(WhyPart part) { part_ = part; }  // (the script's why-part)
  static constexpr int kSteps = 32;  // integrated gradients' steps (the default)

  // What one computation gives: the attributions of the rows asked for, and the last layer's mean attention.
  struct Result {
    AttributionMap map;
    Mat attention;       // (rows, K): cross-attention over the S source words, or self-attention over the words read
    bool cross = false;  // the attention is cross-attention (a translator)
    std::string error;   // a model whose parts have no backward: what the core said
  };

 private:
  struct Key {
    int version = -1;
    AttributionMethod method = AttributionMethod::GradientXInput;
    int row = -1;  // the one row asked for; -1: every row
    bool operator==(const Key&) const = default;
  };
  void start_if_stale(const AppState& state, int position);
  void poll();
  // The result that holds row `position` of the trace on show by the method on show, or null.
  const Result* result_for(const AppState& state, int position) const;
  // `scale`: the type's size for the bars, of the font's
  void draw_bars(const AppState& state, const Result& r, int position, float scale);
  std::optional<int> draw_maps(const AppState& state, const Result& r, int position);
  void draw_method_switch();
  std::string method_name() const;  // as the switch names it
  // Integrated gradients' completeness line for the row: the bars' sum against f(x) - f(0); "" for the others.
  std::string completeness_text(const Result& r, int position) const;

  AttributionMethod method_ = AttributionMethod::GradientXInput;
  WhyPart part_ = WhyPart::Word;
  bool controls_open_ = false;  // presenting: the method and the part shown (widgets.h controls_toggle)
  BackgroundTask<Result> row_task_, map_task_;
  Key row_asked_, map_asked_;
  std::optional<Key> row_done_, map_done_;
  std::optional<Result> row_, map_;
};

}  // namespace sf::gui
