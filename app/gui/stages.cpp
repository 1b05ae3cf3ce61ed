#include "gui/stages.h"

namespace sf::gui {

namespace {

// In Stage order (the enum).
const StageInfo kStages[] = {
    {Stage::Tokens, "tokens", "Tokens"},
    {Stage::Embedding, "embedding", "Input embedding"},
    {Stage::Positional, "positional", "+ Positional encoding"},
    {Stage::EncoderQkv, "encoder-qkv", "Q, K, V and heads"},
    {Stage::EncoderAttention, "encoder-attention", "Multi-head self-attention"},
    {Stage::EncoderConcat, "concat-heads", "Concat heads + W\u1d3c"},
    {Stage::EncoderAddNorm, "encoder-add-norm", "Add & norm (encoder)"},
    {Stage::EncoderFeedForward, "encoder-feed-forward", "Feed-forward (encoder)"},
    {Stage::DecoderAttention, "decoder-attention", "Masked multi-head self-attention"},
    {Stage::CrossAttention, "cross-attention", "Cross-attention"},
    {Stage::DecoderAddNorm, "decoder-add-norm", "Add & norm (decoder)"},
    {Stage::DecoderFeedForward, "decoder-feed-forward", "Feed-forward (decoder)"},
    {Stage::AllHeads, "all-heads", "All heads, all layers"},
    {Stage::Output, "output", "Linear + softmax"},
    {Stage::Decoding, "decoding", "Decoding, token by token"},
    {Stage::Interventions, "interventions", "Interventions"},
    {Stage::Training, "training", "Training: watch it learn"},
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
