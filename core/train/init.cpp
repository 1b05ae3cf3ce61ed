#include "train/init.h"

#include <cmath>
#include <random>

#include "model/name_tables.h"
#include "train/parameters.h"

namespace sf {

ModelWeights initialize_weights(const Config& config, uint64_t seed) {
  config.validate();
  ModelWeights w = allocate_weights(config);
  std::mt19937_64 rng(seed);
  // Matrices (embeddings, positions, linear weights) Xavier-uniform, biases 0, LayerNorm gamma 1 and beta 0, in
  // the walk's order (the random numbers fall to the same weights whatever else changes).
  for_each_weight(&config, w, [&](const WeightRef& r) {
    if (r.is_matrix()) {
      const float a = std::sqrt(6.0f / static_cast<float>(r.matrix->rows() + r.matrix->cols()));
      std::uniform_real_distribution<float> u(-a, a);
      for (Eigen::Index i = 0; i < r.matrix->size(); ++i) r.matrix->data()[i] = u(rng);
    } else {
      const bool gamma = !r.linear && r.param == WeightParam::Weight;
      r.vector->setConstant(gamma ? 1.0f : 0.0f);
    }
  });
  complete_shared_weights(config, w);
  return w;
}

void tie_gradients(const Config& config, ModelWeights& g) {
  if (config.tie_output_embedding) {  // the generator's weight is the last stack's input embedding
    Mat& embedding = config.has_decoder() ? g.tgt_embedding : g.src_embedding;
    embedding += g.generator.weight;
    g.generator.weight = embedding;
  }
  if (config.share_embeddings) {
    g.src_embedding += g.tgt_embedding;
    g.tgt_embedding = g.src_embedding;
    if (config.tie_output_embedding) g.generator.weight = g.src_embedding;
  }
}

}  // namespace sf
