// What presentation mode and lessons draw over the stage: a one-line header (the stage's title and
// "layer L, head H"), the lesson's caption in large type over the bottom of the stage area, and the prompt
// of a lesson waiting at a pause.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

namespace sf::gui {

// [SECTION] the sentence strip: what the class talks about, at the top of presentation mode
// One word of a translation in the strip, and whether the other translation lacks it.
struct StripWord {
  std::string text;
  bool changed = false;
};
// Marks the words of `now` and of `before` that are not part of their longest common subsequence: the words an
// intervention brought in, and the ones it took away.
void mark_changed_words(std::vector<StripWord>& now, std::vector<StripWord>& before);

struct SentenceStrip {
  std::string source_language = "Source", target_language = "Target";  // the labels: the model's languages
  std::string source;               // the sentence as typed
  std::vector<StripWord> now;       // the current translation's words (no <eos>)
  std::vector<StripWord> before;    // the model's as trained, when something is changed
  std::string badge;                // what is changed ("causal mask off", "2 heads off: ..."); "" when nothing
  bool decoding = false;            // the translation is not finished yet
};
// Under the header: the source sentence, the translation, and while something is changed a red badge naming
// it with the translation as trained beside (changed words marked: the new ones yellow, the lost ones red and
// struck through).
void draw_sentence_strip(const SentenceStrip& strip);

// Where a lesson (--lesson) stands; inactive for --script and without one.
struct LessonStatus {
  bool active = false;
  bool waiting = false;  // at a pause: Space / Right / PageDown continue, Left / PageUp go back
  bool finished = false;
  int pause = 0, pauses = 0;  // the pause it waits at (1-based) and how many the lesson has
};

// The header line: the title in the large font, the detail ("layer 0, head 3"), and at the right the lesson's
// prompt (when a lesson runs) and "stage N / M". `problem` (an error to show) goes on a second line in red.
// Returns +1 when the prompt's Next was clicked, -1 for Back, else 0.
int draw_presentation_header(const char* title, const std::string& detail, int stage_number, int stage_count,
                             const std::string& problem, const LessonStatus& lesson);

// The height the caption box and the lesson prompt take at the bottom of an area `width` wide (0: nothing to
// show): the app keeps this strip free, so a caption never hides the panel's numbers. In presentation mode
// the app passes an inactive lesson here: the prompt sits in the header, and the caption gets the full width.
float caption_overlay_height(const std::string& caption, const LessonStatus& lesson, float width);
// The caption box and the lesson prompt, over the bottom of the rectangle [min, max] (screen coordinates).
// Returns +1 when Next was clicked, -1 for Back, else 0.
int draw_caption_overlay(const std::string& caption, const LessonStatus& lesson, ImVec2 min, ImVec2 max);

}  // namespace sf::gui
