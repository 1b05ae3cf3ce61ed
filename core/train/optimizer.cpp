#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "train/parameters.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

Adam::Adam(const ModelWeights& shape_like, AdamSettings settings)
    : settings_(settings), m_(zeros_like(shape_like)), v_(zeros_like(shape_like)) {}

void Adam::step(ModelWeights& weights, ModelWeights& grads, float lr) {
  ++step_;
  const auto w = parameter_views(weights), g = parameter_views(grads), m = parameter_views(m_), v = parameter_views(v_);
  if (w.size() != g.size() || w.size() != m.size())
    fail(ErrorKind::Shape, "Adam::step", "weights and gradients have different parameter lists");
  const float b1 = settings_.beta1, b2 = settings_.beta2;
  const float bias1 = 1.0f - static_cast<float>(std::pow(b1, static_cast<double>(step_)));
  const float bias2 = 1.0f - static_cast<float>(std::pow(b2, static_cast<double>(step_)));
  const float step_size = lr / bias1, inv_sqrt_bias2 = 1.0f / std::sqrt(bias2), eps = settings_.eps;
  for (size_t p = 0; p < w.size(); ++p) {
    float* wp = w[p].data;
    const float* gp = g[p].data;
    float* mp = m[p].data;
    float* vp = v[p].data;
    const int n = static_cast<int>(w[p].size);
    // Element by element: any split gives the same numbers. Captured by value, so that the constants stay in
    // registers (through references they are reloaded after every store).
    parallel_for(n, 65536, [=](int begin, int end) {
      for (int i = begin; i < end; ++i) {
        mp[i] = b1 * mp[i] + (1.0f - b1) * gp[i];
        vp[i] = b2 * vp[i] + (1.0f - b2) * gp[i] * gp[i];
        wp[i] -= step_size * mp[i] / (std::sqrt(vp[i]) * inv_sqrt_bias2 + eps);
      }
    });
  }
}

float LearningRateSchedule::at(int64_t step) const {
  if (kind == Kind::Constant || warmup_steps <= 0) return peak;
  const double s = static_cast<double>(std::max<int64_t>(step, 1)), w = warmup_steps;
  return static_cast<float>(peak * std::min(s / w, std::sqrt(w / s)));
}

LearningRateSchedule::Kind schedule_kind_from_string(const std::string& name) {
  if (name == "constant") return LearningRateSchedule::Kind::Constant;
  if (name == "inverse_sqrt") return LearningRateSchedule::Kind::InverseSqrt;
  fail(ErrorKind::Input, "schedule", "unknown learning-rate schedule '" + name + "' (constant or inverse_sqrt)");
}

double clip_gradients(ModelWeights& grads, float max_norm) {
  double sum = 0.0;
  const auto views = parameter_views(grads);
  for (const auto& p : views)
    sum += Eigen::Map<const Eigen::VectorXf>(p.data, p.size).cast<double>().squaredNorm();
  const double norm = std::sqrt(sum);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / (norm + 1e-6));
    for (const auto& p : views) Eigen::Map<Eigen::VectorXf>(p.data, p.size) *= scale;
  }
  return norm;
}

}  // namespace sf
