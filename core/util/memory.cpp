#include "util/memory.h"

#include <malloc.h>

namespace sf {

void keep_freed_memory() {
  // Blocks up to 256 MB come from the heap; the heap's top is given back to the kernel only past 1 GB free.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace sf
