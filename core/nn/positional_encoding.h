// Sinusoidal positional encoding of "Attention Is All You Need" (section 3.5):
//   PE(pos, 2i)   = sin(pos / 10000^(2i / C))
//   PE(pos, 2i+1) = cos(pos / 10000^(2i / C))
// Each pair of dimensions is a rotation at its own frequency, so PE(pos + k) is a linear function of PE(pos):
// the model can attend by relative position.
// Marian (SinusoidLayout::Halves) keeps the same numbers in another column order: column i < C/2 holds
// sin(pos / 10000^(2i/C)) and column C/2 + i holds cos of the same angle (C even; for odd C the sines take
// the first (C+1)/2 columns, as Hugging Face's MarianSinusoidalPositionalEmbedding does).
#pragma once
#include "model/config.h"
#include "util/tensor.h"

namespace sf {

// (positions, C): row p is the encoding of position p. Matches the PyTorch tutorials' PositionalEncoding
// (computed in float64 and rounded, so values agree with torch to the last float bit or two).
Mat sinusoidal_positional_encoding(int positions, int d_model, SinusoidLayout layout = SinusoidLayout::Interleaved);

}  // namespace sf
