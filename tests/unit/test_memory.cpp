// util/memory.h: the allocator takes the settings, and a large block freed by one pass is reused by the next
// without the kernel faulting its pages in again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "util/memory.h"

namespace {

#if defined(__GLIBC__) && defined(__linux__)
long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A 24 MB block (a long sentence's logits are 6 MB, the base model's 32) written, freed, allocated and written
// again: the second time almost none of its 6,144 pages fault (glibc's own thresholds would have unmapped it).
TEST(Memory, FreedBlocksStayMappedForTheNextPass) {
  ASSERT_TRUE(sf::keep_freed_memory());
  constexpr size_t kBytes = 24u << 20;
  char* first = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, kBytes);
  asm volatile("" : : "r"(first) : "memory");  // the writes happen (not dropped as dead before the free)
  std::free(first);
  const long before = minor_faults();
  char* again = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(again, nullptr);
  std::memset(again, 2, kBytes);
  const long faults = minor_faults() - before;
  EXPECT_EQ(again[kBytes - 1], 2);
  std::free(again);
  EXPECT_LT(faults, 200) << "pages faulted in again";
}
#endif

}  // namespace
