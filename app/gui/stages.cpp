#include "gui/stages.h"

namespace sf::gui {

namespace {

// In Stage order (the enum).
const StageInfo kStages[] = {
    {Stage::Tokens, "tokens", T::stage_title_tokens},
    {Stage::Embedding, "embedding", T::stage_title_embedding},
    {Stage::Positional, "positional", T::stage_title_positional},
    {Stage::EncoderQkv, "encoder-qkv", T::stage_title_encoder_qkv},
    {Stage::EncoderAttention, "encoder-attention", T::stage_title_encoder_attention},
    {Stage::EncoderConcat, "concat-heads", T::stage_title_concat_heads},
    {Stage::EncoderAddNorm, "encoder-add-norm", T::stage_title_encoder_add_norm},
    {Stage::EncoderFeedForward, "encoder-feed-forward", T::stage_title_encoder_feed_forward},
    {Stage::DecoderAttention, "decoder-attention", T::stage_title_decoder_attention},
    {Stage::CrossAttention, "cross-attention", T::stage_title_cross_attention},
    {Stage::DecoderAddNorm, "decoder-add-norm", T::stage_title_decoder_add_norm},
    {Stage::DecoderFeedForward, "decoder-feed-forward", T::stage_title_decoder_feed_forward},
    {Stage::AllHeads, "all-heads", T::stage_title_all_heads},
    {Stage::Output, "output", T::stage_title_output},
    {Stage::Decoding, "decoding", T::stage_title_decoding},
    {Stage::Interventions, "interventions", T::stage_title_interventions},
    {Stage::Training, "training", T::stage_title_training},
};
static_assert(sizeof(kStages) / sizeof(kStages[0]) == static_cast<size_t>(Stage::Count));

}  // namespace

const StageInfo& stage_info(Stage stage) { return kStages[static_cast<int>(stage)]; }

bool stage_from_name(const std::string& id, Stage* stage) {
  for (const StageInfo& info : kStages)
    if (id == info.id) {
      *stage = info.stage;
      return true;
    }
  return false;
}

std::string stage_names() {
  std::string out;
  for (const StageInfo& info : kStages) out += (out.empty() ? "" : ", ") + std::string(info.id);
  return out;
}

}  // namespace sf::gui
