#include "util/memory.h"

#include <unistd.h>

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sf {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 256 MB come from the heap; the heap's top is given back to the kernel only past 1 GB free.
  // mallopt returns 0 for a value it refuses: a glibc that takes no threshold over 32 MB gets that one.
  const bool threshold = mallopt(M_MMAP_THRESHOLD, 256 << 20) == 1 || mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return threshold && trim;
#else
  return false;
#endif
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<double>(pages) * static_cast<double>(page_size) : 8e9;
}

}  // namespace sf
