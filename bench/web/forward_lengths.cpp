// The shipped model's traced forward pass (every intermediate kept, as the app recomputes it on an edit) at 8 to
// 128 tokens on each side, timed with a steady clock: the same source built natively (bench/CMakeLists.txt:
// bench_forward_lengths, run with OMP_NUM_THREADS=1) and for a web page (bench/web/CMakeLists.txt, in the web
// build), so bench/bench_web.py can put the browser's figures beside the native build's on one thread.
//
//   bench_forward_lengths MODEL      prints one JSON line per length: {"tokens": N, "ms": median, "runs": R}
//
// Each length: two untimed passes (buffers grow to size), then passes until 0.5 s or 9 runs, whichever is
// later; the median run. Token ids 4 + (7 i) mod (vocabulary - 4), the same in both builds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "model/hf_marian.h"
#include "model/model.h"
#include "transformer/forward.h"
#include "util/error.h"
#include "util/parallel.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bench_forward_lengths MODEL\n");
    return 2;
  }
  try {
    const sf::Model model = sf::open_model(argv[1]);
    const sf::Config& c = model.config;
    sf::Trace trace;  // reused, as the app does
    for (const int n : {8, 16, 32, 64, 128}) {
      std::vector<int> src, tgt;
      for (int i = 0; i < n; ++i) {
        src.push_back(4 + (7 * i) % (c.src_vocab_size - 4));
        tgt.push_back(4 + (7 * i) % (c.tgt_vocab_size - 4));
      }
      tgt[0] = c.bos_id;
      for (int warm = 0; warm < 2; ++warm) sf::forward(c, model.weights, src, tgt, {}, trace);
      std::vector<double> ms;
      double total = 0;
      while (ms.size() < 9 || total < 500.0) {
        const auto t0 = std::chrono::steady_clock::now();
        sf::forward(c, model.weights, src, tgt, {}, trace);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        total += ms.back();
      }
      std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
      std::printf("{\"tokens\": %d, \"ms\": %.3f, \"runs\": %zu, \"threads\": %d}\n", n, ms[ms.size() / 2], ms.size(),
                  sf::parallel_threads());
      std::fflush(stdout);
    }
    std::printf("done\n");
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_forward_lengths: %s\n", e.what());
    return 1;
  }
  return 0;
}
