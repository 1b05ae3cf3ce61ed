// The one pool of worker threads of the core, for inference and training alike: the short loops of a decoding
// step (the rows of W in its linear layers), the blocks of the large products of a batch, attention per
// sentence, dropout masks, the optimiser. Idle workers spin briefly between loops (a decoding pass issues one
// every few microseconds) and then sleep, so an idle pool takes no core from the app's renderer (Mesa's
// llvmpipe draws on the CPU where there is no GPU); the README's Speed section has the figures.
//
//   parallel_for(n, grain, [&](int begin, int end) { ... });   // [0, n) in chunks of `grain`
//
// Chunks are taken from a shared counter by the calling thread and the workers alike, so a worker that is slow
// to wake (or descheduled) only takes fewer chunks; the caller never waits for one that has not started. The
// loop returns when every chunk is done; an exception thrown by a body is rethrown then (the first one). A call
// made while another is running (from another thread, or from inside a body) runs serially on its own thread.
#pragma once
#include <functional>

namespace sf {

// Whether this build can start threads at all. Not in a web page built without SharedArrayBuffer (emscripten
// without -pthread, app/web/): there the pool is the caller alone, and the app's background work (its
// decodings, model loading) runs in the frame that asks for it (app/gui/background_task.h).
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
inline constexpr bool kHaveThreads = false;
#else
inline constexpr bool kHaveThreads = true;
#endif

// Threads taking part in parallel_for, the caller included: OMP_NUM_THREADS where set (the benchmarks compare
// with PyTorch at equal threads), else the machine's cores, at most 8 (1 where kHaveThreads is false). 1: every loop runs on the caller.
int parallel_threads();
void set_parallel_threads(int threads);  // from 1; workers are started or stopped to match

void parallel_for(int n, int grain, const std::function<void(int begin, int end)>& body);

// Background work below the threads that draw (the app: Mesa's renderer shares the cores where there is no GPU).
// set_worker_niceness(n): the pool's workers run n steps of Linux's nice below the calling thread (0: as it), at
// once and any started later. worker_niceness() is the nice value they run at (-1: none set). The threads that
// run work in the background (the app's decodings and model loading, a training session) call
// lower_this_thread() as they start, since their own share of each loop's chunks runs on them: it gives the
// calling thread the workers' nice value (nothing where none is set). A nice value only goes up without
// privileges: the app sets it once, before its background work starts. Elsewhere than Linux these do nothing.
void set_worker_niceness(int steps_below);
int worker_niceness();
void lower_this_thread();

}  // namespace sf
