// Backward passes of the nn/ layers, each the adjoint of the forward of the same name. Gradients of weights
// accumulate (+=) into a gradient struct of the same shape as the weights; gradients of inputs are written.
//   dL/dx = dL/dy * dy/dx   for a batch stacked as rows (N, ...)
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "nn/layer_norm.h"
#include "util/tensor.h"

namespace sf {

// y = x W^T + b:   dW += dy^T x,   db += sum_rows(dy),   dx = dy W        x (N, in), dy (N, out)
// dx may be nullptr when the input needs no gradient. A gradient tensor left empty (grad.weight, a norm's gamma,
// an embedding table) is not wanted and not computed: a backward for the inputs' gradients alone (attribution,
// explain/attribution.h; train/parameters.h empty_gradients) skips the weights' products.
void linear_backward(const ConstMatRef& x, const LinearWeights& w, const ConstMatRef& dy, LinearWeights& grad,
                     Mat* dx);

// y = xhat * gamma + beta, xhat = (x - mean) / std:
//   dgamma += sum_rows(dy * xhat),  dbeta += sum_rows(dy)
//   dx = (1/std) * (g - mean_c(g) - xhat * mean_c(g * xhat))   where g = dy * gamma      (row by row)
// Uses the mean and std recorded by the forward (t) and its input x.
void layer_norm_backward(const ConstMatRef& x, const LayerNormTrace& t, const LayerNormWeights& w,
                         const ConstMatRef& dy, LayerNormWeights& grad, Mat& dx);

// In place: d = d * act'(pre), where pre is the activation's input.
//   ReLU' = 1 where pre > 0;   GELU'(x) = Phi(x) + x * phi(x)   (exact erf form);
//   SiLU'(x) = s(x) (1 + x (1 - s(x))), s the logistic sigmoid
void activation_backward(Activation act, const ConstMatRef& pre, Mat& d);

// out[i] = table[ids[i]] * scale:   dtable[ids[i]] += scale * dout[i]
void embedding_backward(const std::vector<int>& ids, float scale, const ConstMatRef& dout, Mat& dtable);

}  // namespace sf
