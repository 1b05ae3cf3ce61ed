#include "nn/kernels.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
#include <cpuid.h>
#endif

// The sets this build has (core/CMakeLists.txt): isa_baseline always, compiled with the library's own flags;
// isa_avx2 and isa_avx512 where STEPFORMER_KERNELS_AVX2 / _AVX512 say so (x86-64 builds that are not WebAssembly).
namespace sf::isa_baseline {
const KernelSet& kernel_set();
}
#if defined(STEPFORMER_KERNELS_AVX2)
namespace sf::isa_avx2 {
const KernelSet& kernel_set();
}
#endif
#if defined(STEPFORMER_KERNELS_AVX512)
namespace sf::isa_avx512 {
const KernelSet& kernel_set();
}
#endif

namespace sf {

namespace {

// Whether this CPU runs code compiled for `isa` (cpuid, through GCC's __builtin_cpu_supports, which also checks
// that the OS saves the wider registers). x86-64-v3 adds to v2 AVX, AVX2, BMI1/2, F16C, FMA, LZCNT, MOVBE, XSAVE;
// v4 adds AVX-512 F, BW, CD, DQ and VL.
bool cpu_runs([[maybe_unused]] KernelIsa isa) {
#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
  __builtin_cpu_init();
  // F16C, MOVBE and LZCNT from cpuid itself: Clang 14's __builtin_cpu_supports does not know them.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool leaf1 = __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  const bool f16c = leaf1 && (ecx & (1u << 29)), movbe = leaf1 && (ecx & (1u << 22));
  const bool lzcnt = __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 5));
  const bool v3 = __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma") &&
                  f16c && movbe && lzcnt;
  switch (isa) {
    case KernelIsa::baseline: return true;
    case KernelIsa::avx2: return v3;
    case KernelIsa::avx512:
      return v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == KernelIsa::baseline;
#endif
}

const KernelSet* built_set(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::baseline: return &isa_baseline::kernel_set();
#if defined(STEPFORMER_KERNELS_AVX2)
    case KernelIsa::avx2: return &isa_avx2::kernel_set();
#endif
#if defined(STEPFORMER_KERNELS_AVX512)
    case KernelIsa::avx512: return &isa_avx512::kernel_set();
#endif
    default: return nullptr;
  }
}

// The set chosen at first use: STEPFORMER_KERNELS's where it names one that runs here; else the best that runs,
// except that a -march=native build (STEPFORMER_KERNELS_NATIVE) keeps its own flags' set, as it always has.
const KernelSet* first_choice() {
  if (const char* asked = std::getenv("STEPFORMER_KERNELS"); asked && *asked && std::strcmp(asked, "auto") != 0) {
    bool known = false;
    for (KernelIsa isa : {KernelIsa::baseline, KernelIsa::avx2, KernelIsa::avx512}) {
      if (std::strcmp(asked, kernel_isa_name(isa)) != 0) continue;
      known = true;
      if (const KernelSet* set = kernel_set(isa)) return set;
    }
    std::fprintf(stderr, known ? "[kernels] STEPFORMER_KERNELS=%s: not in this build or not run by this CPU\n"
                               : "[kernels] STEPFORMER_KERNELS=%s: expected auto, baseline, avx2 or avx512\n",
                 asked);
  }
#if defined(STEPFORMER_KERNELS_NATIVE)
  return built_set(KernelIsa::baseline);
#else
  for (KernelIsa isa : {KernelIsa::avx512, KernelIsa::avx2})
    if (const KernelSet* set = kernel_set(isa)) return set;
  return built_set(KernelIsa::baseline);
#endif
}

std::atomic<const KernelSet*> in_use{nullptr};

}  // namespace

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::avx2: return "avx2";
    case KernelIsa::avx512: return "avx512";
    default: return "baseline";
  }
}

const KernelSet* kernel_set(KernelIsa isa) { return cpu_runs(isa) ? built_set(isa) : nullptr; }

const KernelSet& kernels() {
  const KernelSet* set = in_use.load(std::memory_order_acquire);
  if (!set) {  // two threads may both choose: they choose the same
    set = first_choice();
    in_use.store(set, std::memory_order_release);
  }
  return *set;
}

bool use_kernels(KernelIsa isa) {
  const KernelSet* set = kernel_set(isa);
  if (set) in_use.store(set, std::memory_order_release);
  return set != nullptr;
}

}  // namespace sf
