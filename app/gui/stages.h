// The stages a user steps through, in the order of the paper's figure (Vaswani et al. 2017, figure 1, read
// bottom to top): the input side, one encoder layer, one decoder layer, the overview, the output; then the
// decoding step by step and the interventions.
#pragma once
#include <string>

#include "gui/text/text.h"

namespace sf::gui {

enum class Stage {
  Tokens, Embedding, Positional,
  EncoderQkv, EncoderAttention, EncoderConcat, EncoderAddNorm, EncoderFeedForward,
  DecoderAttention, CrossAttention, DecoderAddNorm, DecoderFeedForward,
  AllHeads, Output, Decoding, Interventions, Training, Count
};

struct StageInfo {
  Stage stage;
  const char* id;     // what --stage and the script's `stage` take: tokens, embedding, positional, ...
  T title;            // a heading for the stage: tr(title)
};

const StageInfo& stage_info(Stage stage);
inline const char* stage_name(Stage stage) { return stage_info(stage).id; }
// The stage named `id`; false for an unknown name.
bool stage_from_name(const std::string& id, Stage* stage);
// "tokens, embedding, ..." for messages that list what is accepted.
std::string stage_names();

}  // namespace sf::gui
