// How the process's allocator treats the large buffers of a pass. A traced pass on a long sentence allocates
// matrices of hundreds of kilobytes to megabytes (each head's scores and probabilities, the logits); glibc gives
// every block over its mmap threshold fresh pages from the kernel and returns them when freed (and trims the heap's
// free top), so a recompute paid a page fault per 4 kB touched: on a 240-token sentence, without these settings,
// 13,500 faults in putting the trace together. keep_freed_memory() fixes the thresholds so that such blocks stay
// in the heap and are reused. Called once at the start of the app, the CLI and the benchmarks.
#pragma once

namespace sf {

// Blocks up to 256 MB (32 MB where glibc takes no more) from the heap, and the heap's free top kept up to 1 GB.
// Returns whether the allocator took both settings (false without glibc).
bool keep_freed_memory();

// This machine's physical memory in bytes (8 GB where the system does not say): the figure a model too large to
// load or train is refused against, before anything is allocated.
double physical_memory_bytes();

// The memory this process may still take, in bytes: the least of the kernel's MemAvailable, what the address-space
// and data limits (ulimit -v, -d) leave above what the process uses, and what its cgroup's limit leaves (v2
// memory.max, v1 memory.limit_in_bytes, less the usage); physical_memory_bytes() where none of them says. The
// figure a pass's working memory is checked against (transformer/pass_memory.h).
double available_memory_bytes();

}  // namespace sf
