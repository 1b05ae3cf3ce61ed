// The few-row products of nn/small_gemm.h for one instruction set (nn/isa/isa_kernels.h): with AVX-512 the
// vector kernels; with WebAssembly's SIMD (a web page) 4-lane ones; without either, plain loops that give the
// packed kernel's floats (tests only: callers use Eigen there).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nn/isa/isa_kernels.h"
#include "nn/isa/lanes.h"  // <immintrin.h> and the lane masks, where the set has AVX-512
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#include "util/parallel.h"

namespace sf {
float f16_to_float(uint16_t bits);  // io/safetensors.h (not included: it declares Eigen-typed structs)
}  // namespace sf

namespace sf::STEPFORMER_ISA {

#if defined(__AVX512F__)

constexpr long kParallelMacs = 1L << 16;
constexpr long kChunkMacs = 1L << 12;

namespace {

// The four lane sums of a, b, c, d as one 4-float register [sum a, sum b, sum c, sum d]: interleave and add
// within 128-bit lanes until each lane holds [a, b, c, d] partials, then add the four lanes.
inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // [a b a b] per lane
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));  // [c d c d]
  const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));  // [a b c d]
  const __m512 u = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0x4E));  // + the other 256-bit half
  const __m512 v = _mm512_add_ps(u, _mm512_shuffle_f32x4(u, u, 0xB1));  // + the neighbouring 128-bit lane
  return _mm512_castps512_ps128(v);
}

// 16 consecutive weights as floats: loaded as they are, or converted from halves (vcvtph2ps, exact).
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// The first `tail` (< 16) of them, zeros after.
inline __m512 load16_tail(__mmask16 tail, const float* p) { return _mm512_maskz_loadu_ps(tail, p); }

// One block: MR rows of x against NR rows of W, accumulated over K in MR * NR registers of
// 16 lanes, then reduced across lanes. The tail of K (K % 16) is read with a masked load.
template <int MR, int NR, typename W>
void block(const float* x, long x_stride, const W* w, long w_stride, int K, float* y, int N) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) wv[j] = load16(w + j * w_stride + k);
    // The next block's rows of W, fetched while this one computes (W streams from L2/L3 or memory once).
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      _mm_prefetch(reinterpret_cast<const char*>(w + (NR + j) * w_stride + k), _MM_HINT_T0);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(x + i * x_stride + k);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < K) {
    const __mmask16 tail = first_lanes(K - k);
    __m512 wv[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) wv[j] = load16_tail(tail, w + j * w_stride + k);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(tail, x + i * x_stride + k);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    const __m128 sums = sum4(acc[i][0], NR > 1 ? acc[i][NR > 1 ? 1 : 0] : zero, NR > 2 ? acc[i][NR > 2 ? 2 : 0] : zero,
                             NR > 3 ? acc[i][NR > 3 ? 3 : 0] : zero);
    float* out = y + static_cast<long>(i) * N;
    if (NR == 4) {
      _mm_storeu_ps(out, sums);
    } else {
      alignas(16) float s4[4];
      _mm_store_ps(s4, sums);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) out[j] = s4[j];
    }
  }
}

template <int NR, typename W>
void rows_block(const float* x, int mr, long x_stride, const W* w, long w_stride, int K, float* y, int N) {
  switch (mr) {
    case 4: block<4, NR>(x, x_stride, w, w_stride, K, y, N); break;
    case 3: block<3, NR>(x, x_stride, w, w_stride, K, y, N); break;
    case 2: block<2, NR>(x, x_stride, w, w_stride, K, y, N); break;
    default: block<1, NR>(x, x_stride, w, w_stride, K, y, N); break;
  }
}

template <typename W>
void gemm_xwt(const float* x, int M, int K, long x_stride, const W* w, long w_stride, int N, float* y) {
  // W outermost: a block of 4 rows of W (4 K floats) stays in L1 while every row block of x passes it, so W is
  // read from memory once; x (M K floats, 20 KB for 20 tokens of 256) stays in L1/L2 throughout.
  auto columns = [&](int first_block, int end_block) {
    for (int n = first_block * 4; n < std::min(N, end_block * 4); n += 4) {
      const int nr = N - n < 4 ? N - n : 4;
      const W* wn = w + n * w_stride;
      for (int m = 0; m < M; m += 4) {
        const int mr = M - m < 4 ? M - m : 4;
        const float* xm = x + m * x_stride;
        float* ym = y + static_cast<long>(m) * N + n;
        switch (nr) {
          case 4: rows_block<4>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
          case 3: rows_block<3>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
          case 2: rows_block<2>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
          default: rows_block<1>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
        }
      }
    }
  };
  // The blocks of W are shared out between threads (util/parallel.h), each writing its own columns of y: four
  // chunks per thread (a thread that starts late takes fewer), none below kChunkMacs; below kParallelMacs in
  // all the sharing would cost more than it saves.
  const long macs = static_cast<long>(M) * N * K;
  const int blocks = (N + 3) / 4;
  const int threads = parallel_threads();
  if (macs < kParallelMacs || threads == 1) return columns(0, blocks);
  const long block_macs = 4L * M * K;
  const long grain = std::max((blocks + 4L * threads - 1) / (4L * threads), (kChunkMacs + block_macs - 1) / block_macs);
  parallel_for(blocks, static_cast<int>(grain), columns);
}

// MR rows of y = x W, 32 columns from column n (masks m0, m1: which of them exist): each row of W is loaded once
// and multiplied by the MR rows' entries (broadcast), the sums kept in 2 * MR registers over all of K.
template <int MR>
void xw_block(const float* x, long x_stride, const float* w, long w_stride, int K, int n, __mmask16 m0, __mmask16 m1,
              float* y, long y_stride) {
  __m512 acc[MR][2];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const float* wk = w + k * w_stride + n;
    const __m512 w0 = _mm512_maskz_loadu_ps(m0, wk), w1 = _mm512_maskz_loadu_ps(m1, wk + 16);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m512 b = _mm512_set1_ps(x[i * x_stride + k]);
      acc[i][0] = _mm512_fmadd_ps(b, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(b, w1, acc[i][1]);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(y + i * y_stride + n, m0, acc[i][0]);
    _mm512_mask_storeu_ps(y + i * y_stride + n + 16, m1, acc[i][1]);
  }
}

// Line `i` of the 64-float rows that start at `rows` (`stride` floats apart, each 4 whole 64-byte lines), asked
// for in cache for writing (prefetchw).
inline void ask_for_line(const float* rows, long stride, int i) {
  _mm_prefetch(reinterpret_cast<const char*>(rows + (i >> 2) * stride + 16 * (i & 3)), _MM_HINT_ET0);
}

// MR rows of y, one panel's 64 columns (`columns` of them exist): 4 * MR sums in registers over all of K, each
// input k adding x[i][k] * W[n][k] to sum (i, n) with one fma, in the order of k. The next block's `ahead_lines`
// lines of y from `ahead` (rows y_stride apart, whole lines) are asked for one every 4 inputs, the rest (a short
// K) after the loop.
template <int MR, typename W>
void packed_block(const float* x, long x_stride, const W* panel, int K, const float* bias, float* y, long y_stride,
                  int columns, const float* ahead, int ahead_lines) {
  int asked = 0;
  constexpr int P = kPanel;
  __m512 acc[MR][4];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const W* wk = panel + static_cast<long>(k) * P;
    if ((k & 3) == 0 && asked < ahead_lines) ask_for_line(ahead, y_stride, asked++);
    __m512 wv[4];
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      wv[j] = load16(wk + 16 * j);
      // Held in a register: left to itself GCC 12 folds the load into each fma for blocks of 2 to 4 rows, loading
      // every weight 2 to 4 times (load-bound: 55 GFLOP/s against 100 for 5 and 6 rows, one thread, measured).
      asm("" : "+v"(wv[j]));
    }
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_set1_ps(x[i * x_stride + k]);
      #pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  while (asked < ahead_lines) ask_for_line(ahead, y_stride, asked++);
  __mmask16 mask[4];
  for (int j = 0; j < 4; ++j) mask[j] = first_lanes(std::clamp(columns - 16 * j, 0, 16));
  if (bias) {  // y = sum + b, the sum complete first: the floats of adding the bias afterwards
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m512 b = _mm512_maskz_loadu_ps(mask[j], bias + 16 * j);
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_add_ps(acc[i][j], b);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) _mm512_mask_storeu_ps(y + i * y_stride + 16 * j, mask[j], acc[i][j]);
}

// y's `columns` floats in each of `rows` rows (`y_stride` apart), asked for in cache for writing (prefetchw) all at
// once, one ask a 64-byte line and one for the row's last float (a row that starts mid-line ends in one more line).
inline void prefetch_for_write(const float* y, int rows, long y_stride, int columns) {
  for (int i = 0; i < rows; ++i) {
    const char* row = reinterpret_cast<const char*>(y + i * y_stride);
    for (int c = 0; c < columns; c += 16) _mm_prefetch(row + 4 * c, _MM_HINT_ET0);
    _mm_prefetch(row + 4 * (columns - 1), _MM_HINT_ET0);
  }
}

template <typename W>
void gemm_packed(const float* x, int M, int K, long x_stride, const W* packed, int N, const float* bias, float* y,
                 long y_stride) {
  constexpr int P = kPanel;
  // Work in pieces of one panel times up to kRowChunk rows (a sentence is one piece a panel; a long one several,
  // so that a layer with few panels still gives every thread work): the panel (64 K weights) stays in L1/L2
  // while the piece's rows pass it.
  constexpr int kRowChunk = 96;
  const int row_chunks = (M + kRowChunk - 1) / kRowChunk;
  // Every row of y starts a 64-byte line: a panel's 64 floats there are 4 whole lines.
  const bool whole_lines = reinterpret_cast<uintptr_t>(y) % 64 == 0 && y_stride % 16 == 0;
  auto pieces = [&](int first, int end) {
    for (int piece = first; piece < end; ++piece) {
      const int p = piece / row_chunks, rows_begin = piece % row_chunks * kRowChunk;
      const int rows_end = std::min(M, rows_begin + kRowChunk);
      const W* panel = packed + static_cast<long>(p) * K * P;
      const int columns = std::min(P, N - p * P);
      const float* panel_bias = bias ? bias + p * P : nullptr;
      // Blocks of 6 rows, the last ones 4 and 4 where 6 and 2 would be left (a block of 2 loads each weight for
      // two rows only; 128 rows are 96 + 32 = 20 x 6 + 2 x 4). A row's outputs do not depend on its block.
      auto block_rows = [rows_end](int m) { return rows_end - m == 8 ? 4 : std::min(rows_end - m, 6); };
      for (int m = rows_begin; m < rows_end; m += block_rows(m)) {
        const int rows = block_rows(m);
        const float* xm = x + m * x_stride;
        float* ym = y + static_cast<long>(m) * y_stride + p * P;
        // The lines of y a block writes, asked for while the block before computes (the first block's itself):
        // a layer's output buffer was last written a pass ago and is out of L2, and the block's 24 stores, one
        // per 16 floats of 6 rows far apart, waited for each line to be read in (3% of a 128-token forward, one
        // thread, measured). The asks are spread over the block's k loop where the rows are whole lines: 24 at
        // once hold up the block's own loads of W (about 1% of that forward more, measured); else all at once.
        if (m == rows_begin) prefetch_for_write(ym, rows, y_stride, columns);
        const float* ahead = nullptr;  // the next block's rows, asked for through this block's loop
        int ahead_lines = 0;
        if (m + rows < rows_end) {
          float* next = ym + rows * y_stride;
          if (whole_lines && columns == P) {
            ahead = next;
            ahead_lines = 4 * block_rows(m + rows);
          } else {
            prefetch_for_write(next, block_rows(m + rows), y_stride, columns);
          }
        }
        switch (rows) {
          case 6: packed_block<6>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines); break;
          case 5: packed_block<5>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines); break;
          case 4: packed_block<4>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines); break;
          case 3: packed_block<3>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines); break;
          case 2: packed_block<2>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines); break;
          default: packed_block<1>(xm, x_stride, panel, K, panel_bias, ym, y_stride, columns, ahead, ahead_lines);
        }
      }
    }
  };
  // As gemm_xwt: the pieces shared out between threads, each writing its own block of y; below kParallelMacs in
  // all the sharing would cost more than it saves.
  const long macs = static_cast<long>(M) * N * K;
  const int count = (N + P - 1) / P * row_chunks;
  const int threads = parallel_threads();
  if (macs < kParallelMacs || threads == 1 || count == 1) return pieces(0, count);
  const long piece_macs = static_cast<long>(P) * std::min(M, kRowChunk) * K;
  const long grain = std::max((count + 2L * threads - 1) / (2L * threads), (kChunkMacs + piece_macs - 1) / piece_macs);
  parallel_for(count, static_cast<int>(grain), pieces);
}

}  // namespace

void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride) {
  gemm_xwt(x, M, K, x_stride, w, w_stride > 0 ? w_stride : K, N, y);
}

void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride) {
  for (int n = 0; n < N; n += 32) {
    const __mmask16 m0 = first_lanes(std::clamp(N - n, 0, 16)), m1 = first_lanes(std::clamp(N - n - 16, 0, 16));
    for (int m = 0; m < M; m += 4) {
      const float* xm = x + m * x_stride;
      float* ym = y + m * y_stride;
      switch (std::min(M - m, 4)) {
        case 4: xw_block<4>(xm, x_stride, w, w_stride, K, n, m0, m1, ym, y_stride); break;
        case 3: xw_block<3>(xm, x_stride, w, w_stride, K, n, m0, m1, ym, y_stride); break;
        case 2: xw_block<2>(xm, x_stride, w, w_stride, K, n, m0, m1, ym, y_stride); break;
        default: xw_block<1>(xm, x_stride, w, w_stride, K, n, m0, m1, ym, y_stride); break;
      }
    }
  }
}

void small_gemm_packed(const float* x, int M, int K, long x_stride, const float* w_floats, const uint16_t* w_halves,
                       int N, float* y, const float* bias, long y_stride) {
  if (w_halves) gemm_packed(x, M, K, x_stride, w_halves, N, bias, y, y_stride);
  else gemm_packed(x, M, K, x_stride, w_floats, N, bias, y, y_stride);
}

#elif defined(__wasm_simd128__)

// WebAssembly's 128-bit SIMD (the web build, -msimd128): 4 lanes, no fused multiply-add (relaxed SIMD's is not
// deterministic), so each input adds its product with a multiply and an add, in the order of k. The floats differ
// from the desktop's fused ones in the last bits (the web test compares within 1e-4: tests/web/run_web_app.py).
// Weights are packed as floats for this set (nn/small_gemm.cpp: this SIMD has no half-to-float conversion).
// The blocks are sized for the 16 vector registers of the machine the browser runs on (V8 and SpiderMonkey
// give a function's v128 locals to SSE/NEON registers): at most 12 sums and 4 weights live at once.

namespace {

inline v128_t splat(float v) { return wasm_f32x4_splat(v); }

// MR rows of y = x W^T, 4 rows of W (dot products over K, 4 inputs at a time, the lanes summed at the end; the
// tail of K one input at a time).
template <int MR, int NR>
void xwt_block(const float* x, long x_stride, const float* w, long w_stride, int K, float* y, int N) {
  v128_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = wasm_f32x4_splat(0.0f);
  int k = 0;
  for (; k + 4 <= K; k += 4) {
    v128_t wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = wasm_v128_load(w + j * w_stride + k);
    for (int i = 0; i < MR; ++i) {
      const v128_t xv = wasm_v128_load(x + i * x_stride + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = wasm_f32x4_add(acc[i][j], wasm_f32x4_mul(xv, wv[j]));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float lanes[4];
      wasm_v128_store(lanes, acc[i][j]);
      float s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
      for (int kk = k; kk < K; ++kk) s += x[i * x_stride + kk] * w[j * w_stride + kk];
      y[static_cast<long>(i) * N + j] = s;
    }
}

template <int NR>
void xwt_rows(const float* x, int mr, long x_stride, const float* w, long w_stride, int K, float* y, int N) {
  switch (mr) {
    case 3: xwt_block<3, NR>(x, x_stride, w, w_stride, K, y, N); break;
    case 2: xwt_block<2, NR>(x, x_stride, w, w_stride, K, y, N); break;
    default: xwt_block<1, NR>(x, x_stride, w, w_stride, K, y, N); break;
  }
}

// MR rows of y = x W, 16 columns (w and y point at the first; all 16 exist): each row of W read once for the MR
// rows, 4 MR sums over all of K. A packed panel is such a W too (64 columns, rows kPanel apart).
template <int MR>
void xw_block16(const float* x, long x_stride, const float* w, long w_stride, int K, float* y, long y_stride) {
  v128_t acc[MR][4];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = wasm_f32x4_splat(0.0f);
  for (int k = 0; k < K; ++k) {
    const float* wk = w + k * w_stride;
    v128_t wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = wasm_v128_load(wk + 4 * j);
    for (int i = 0; i < MR; ++i) {
      const v128_t b = splat(x[i * x_stride + k]);
      for (int j = 0; j < 4; ++j) acc[i][j] = wasm_f32x4_add(acc[i][j], wasm_f32x4_mul(b, wv[j]));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < 4; ++j) wasm_v128_store(y + i * y_stride + 4 * j, acc[i][j]);
}

void xw_rows(const float* x, int mr, long x_stride, const float* w, long w_stride, int K, float* y, long y_stride) {
  switch (mr) {
    case 3: xw_block16<3>(x, x_stride, w, w_stride, K, y, y_stride); break;
    case 2: xw_block16<2>(x, x_stride, w, w_stride, K, y, y_stride); break;
    default: xw_block16<1>(x, x_stride, w, w_stride, K, y, y_stride); break;
  }
}

}  // namespace

void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride) {
  if (w_stride <= 0) w_stride = K;
  for (int n = 0; n < N; n += 4) {
    const int nr = std::min(N - n, 4);
    for (int m = 0; m < M; m += 3) {
      const int mr = std::min(M - m, 3);
      const float* xm = x + m * x_stride;
      const float* wn = w + n * w_stride;
      float* ym = y + static_cast<long>(m) * N + n;
      switch (nr) {
        case 4: xwt_rows<4>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
        case 3: xwt_rows<3>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
        case 2: xwt_rows<2>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
        default: xwt_rows<1>(xm, mr, x_stride, wn, w_stride, K, ym, N); break;
      }
    }
  }
}

void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride) {
  const int whole = N / 16 * 16;
  for (int m = 0; m < M; m += 3) {
    const int mr = std::min(M - m, 3);
    const float* xm = x + m * x_stride;
    float* ym = y + m * y_stride;
    for (int n = 0; n < whole; n += 16) xw_rows(xm, mr, x_stride, w + n, w_stride, K, ym + n, y_stride);
    for (int i = 0; i < mr; ++i)  // the last N % 16 columns
      for (int n = whole; n < N; ++n) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += xm[i * x_stride + k] * w[k * w_stride + n];
        ym[i * y_stride + n] = s;
      }
  }
}

// W's panels as floats: pack_weights packs no halves for this set (nn/small_gemm.cpp), so w_halves is null here.
void small_gemm_packed(const float* x, int M, int K, long x_stride, const float* w_floats, const uint16_t*, int N,
                       float* y, const float* bias, long y_stride) {
  constexpr int P = kPanel;
  alignas(16) float sums[3 * 16];
  for (int p = 0; p * P < N; ++p) {
    const float* panel = w_floats + static_cast<long>(p) * K * P;
    const int columns = std::min(P, N - p * P);
    for (int n0 = 0; n0 < columns; n0 += 16) {
      const int cols = std::min(16, columns - n0);
      for (int m = 0; m < M; m += 3) {
        const int mr = std::min(M - m, 3);
        xw_rows(x + m * x_stride, mr, x_stride, panel + n0, P, K, sums, 16);
        for (int i = 0; i < mr; ++i) {  // y = sum + b, the sum complete first
          float* out = y + static_cast<long>(m + i) * y_stride + p * P + n0;
          const float* b = bias ? bias + p * P + n0 : nullptr;
          for (int c = 0; c < cols; ++c) out[c] = b ? sums[i * 16 + c] + b[c] : sums[i * 16 + c];
        }
      }
    }
  }
}

#else

void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += x[m * x_stride + k] * w[k * w_stride + n];
      y[m * y_stride + n] = s;
    }
}

void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride) {
  if (w_stride <= 0) w_stride = K;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += x[m * x_stride + k] * w[n * w_stride + k];
      y[static_cast<long>(m) * N + n] = s;
    }
}

void small_gemm_packed(const float* x, int M, int K, long x_stride, const float* w_floats, const uint16_t* w_halves,
                       int N, float* y, const float* bias, long y_stride) {
  constexpr int P = kPanel;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const long at = static_cast<long>(n / P) * K * P + n % P;
      float s = 0.0f;  // as the vector kernel: one fma per input, in the order of k
      for (int k = 0; k < K; ++k)
        s = std::fma(x[m * x_stride + k], w_halves ? f16_to_float(w_halves[at + k * P]) : w_floats[at + k * P], s);
      y[static_cast<long>(m) * y_stride + n] = bias ? s + bias[n] : s;
    }
}

#endif

}  // namespace sf::STEPFORMER_ISA
