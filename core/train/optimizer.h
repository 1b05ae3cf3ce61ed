// Adam (Kingma & Ba 2015) with the paper's settings (beta1 0.9, beta2 0.98, eps 1e-9), learning-rate
// schedules, and gradient clipping by global norm.
//   m = b1 m + (1 - b1) g      v = b2 v + (1 - b2) g^2
//   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)              (torch.optim.Adam)
#pragma once
#include <cstdint>
#include <string>

#include "model/weights.h"

namespace sf {

struct AdamSettings {
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float eps = 1e-9f;
};

class Adam {
 public:
  Adam(const ModelWeights& shape_like, AdamSettings settings = {});
  // One update of `weights` from `grads` at learning rate lr; increments step().
  void step(ModelWeights& weights, ModelWeights& grads, float lr);
  int64_t step_count() const { return step_; }
  void set_step_count(int64_t s) { step_ = s; }
  ModelWeights& first_moment() { return m_; }
  ModelWeights& second_moment() { return v_; }

 private:
  AdamSettings settings_;
  ModelWeights m_, v_;
  int64_t step_ = 0;
};

// Learning rate at step (1-based).
//   constant:            lr = peak
//   inverse_sqrt:        lr = peak * min(step / warmup, sqrt(warmup / step))
//                        (the paper's d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), peaking at `peak`)
struct LearningRateSchedule {
  enum class Kind { Constant, InverseSqrt } kind = Kind::InverseSqrt;
  float peak = 1e-3f;
  int warmup_steps = 4000;
  float at(int64_t step) const;
};
LearningRateSchedule::Kind schedule_kind_from_string(const std::string& name);  // "constant" | "inverse_sqrt"

// Scales all gradients so their global L2 norm is at most max_norm (no-op when max_norm <= 0). Returns the
// norm before clipping.
double clip_gradients(ModelWeights& grads, float max_norm);

}  // namespace sf
