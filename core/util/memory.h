// How the process's allocator treats the large buffers of a pass. A traced pass on a long sentence allocates
// matrices of hundreds of kilobytes (each head's scores, probabilities and mask); glibc gives every block over its
// mmap threshold fresh pages from the kernel and returns them when freed, so every recompute paid a page fault
// per 4 kB touched, a third of its time on a 240-token sentence. keep_freed_memory() raises the thresholds so
// such blocks stay in the heap and are reused. Called once at the start of the app, the CLI and the benchmarks.
#pragma once

namespace sf {

void keep_freed_memory();

}  // namespace sf
