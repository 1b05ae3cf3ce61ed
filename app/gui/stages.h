// The stages a user steps through, in the order of the paper's figure (Vaswani et al. 2017, figure 1, read
// bottom to top): the input side, one encoder layer, one decoder layer, the overview, the output; then the
// decoding step by step and the interventions.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/text/text.h"
#include "model/config.h"
#include "transformer/interventions.h"  // AttentionKind

namespace sf::gui {

// One enumerator per line of the stage table (gui/stages.inc), in its order.
enum class Stage {
#define STAGE(stage, id, title, layer_of, map, detail, shapes, panel) stage,
#include "gui/stages.inc"
#undef STAGE
  Count
};

// Which model shapes (config.stacks) have a stage: every one, those with an encoder, those with a decoder, or only
// the encoder-decoder (cross-attention).
enum class StageShapes { Every, WithEncoder, WithDecoder, EncoderDecoder };
// What presentation mode's header says beside the stage's title.
enum class StageDetail { None, LayerHead, KindLayer, Layer, KindAttention };

// Each stage described once (a line of gui/stages.inc): the app, the pipeline map, presentation mode, the option
// and script parsers read this table instead of testing stages one by one.
struct StageInfo {
  Stage stage;
  const char* id;     // what --stage and the script's `stage` take: tokens, embedding, positional, ...
  T title;            // a heading for the stage: tr(title)
  // The layer a stage inside one shows, by its attention: the encoder's, the decoder's (self-attention) or the
  // cross-attention's. Opening the stage points the attention selection there; the pipeline map draws it inside
  // that stack's layer.
  std::optional<AttentionKind> layer_of;
  bool attention_map = false;  // one head's attention map (the attention panel), titled by the interventions
  StageDetail detail = StageDetail::None;
  StageShapes shapes = StageShapes::Every;
};

const StageInfo& stage_info(Stage stage);
// The attention-map stage of a kind of attention (encoder-attention, decoder-attention, cross-attention).
Stage attention_stage(AttentionKind kind);
// Whether a model of this shape has the stage.
bool stage_in_shape(Stage stage, ModelStacks stacks);
// The stage a model of this shape shows in place of `stage` (itself where the shape has it): the decoder's
// self-attention for the encoder's or the cross-attention, the decoder's add & norm and feed-forward for the
// encoder's (and back for an encoder-only model), the output for decoding, the tokens for the rest.
Stage stage_for_shape(Stage stage, ModelStacks stacks);
// The stages a model of this shape has, in the table's order: what Left/Right step through and presentation
// mode counts.
std::vector<Stage> stages_of_shape(ModelStacks stacks);
inline const char* stage_name(Stage stage) { return stage_info(stage).id; }
// A model's shape in words: "decoder-only (GPT)", "encoder-decoder (translation)", "encoder-only (BERT)".
std::string shape_text(ModelStacks stacks);
// Why a model of this shape has no `stage`, and the stage it shows instead (stage_for_shape), in words.
std::string stage_missing_text(Stage stage, ModelStacks stacks);
// The stage named `id`; false for an unknown name.
bool stage_from_name(const std::string& id, Stage* stage);
// "tokens, embedding, ..." for messages that list what is accepted.
std::string stage_names();

}  // namespace sf::gui
