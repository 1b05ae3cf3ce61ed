// Prints the kernel cases of tests/unit/kernel_cases.h as lines "name count hash" (hash in hex): how
// tests/fixtures/kernels/*.txt were written, from the library as built before run-time dispatch:
//   avx512.txt  the whole library with -march=native on an AVX-512 machine (STEPFORMER_NATIVE=ON)
//   avx2.txt    the whole library with -march=x86-64-v3
// Usage: stepformer_kernel_hashes > FILE
#include <cinttypes>
#include <cstdio>

#include "../unit/kernel_cases.h"

int main() {
  for (const sf::kernel_cases::Case& c : sf::kernel_cases::compute())
    std::printf("%s %zu %016" PRIx64 "\n", c.name.c_str(), c.count, c.hash);
  return 0;
}
