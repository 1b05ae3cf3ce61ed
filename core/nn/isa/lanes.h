// The 16 lanes of an AVX-512 register, for the kernels that work a row at a time (softmax, layer norm): a mask of
// the first few (a row's tail), and the lanes reduced to one float in registers by four halvings (256-bit halves,
// 128-bit lanes, pairs within a lane, neighbours). GCC 12's _mm512_reduce_* do the same but warn of an
// uninitialised variable.
#pragma once
// (Included by nn/isa/ only: its functions live in each instruction set's namespace.)
#if defined(__AVX512F__)
// GCC 12's AVX-512 shuffle intrinsics start from _mm512_undefined_ps() and then trip its -Wuninitialized (GCC bug
// 105593); the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

namespace sf::STEPFORMER_ISA {

// The first `count` lanes (0 to 16) of a mask: a row's tail that does not fill a register.
inline __mmask16 first_lanes(int count) { return static_cast<__mmask16>((1u << count) - 1u); }

inline float max_of_lanes(__m512 v) {
  v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));  // 256-bit halves
  v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // 128-bit lanes
  v = _mm512_max_ps(v, _mm512_permute_ps(v, 0x4E));         // pairs within a lane
  v = _mm512_max_ps(v, _mm512_permute_ps(v, 0xB1));         // neighbours
  return _mm512_cvtss_f32(v);
}

inline float sum_of_lanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  return _mm512_cvtss_f32(v);
}

}  // namespace sf::STEPFORMER_ISA
#endif
