// nn/kernels.h: each kernel set computes, bit for bit, what the library computed when compiled for that
// instruction set alone (tests/fixtures/kernels/<set>.txt, written by tests/kernels/write_kernel_hashes.cpp from
// the builds before run-time dispatch: -march=native on an AVX-512 machine, -march=x86-64-v3), and a portable
// build chooses the best set the CPU has.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "kernel_cases.h"
#include "nn/kernels.h"

namespace sf {
namespace {

std::map<std::string, kernel_cases::Case> read_fixture(const std::string& set) {
  std::map<std::string, kernel_cases::Case> cases;
  std::ifstream in(std::string(STEPFORMER_FIXTURE_DIR) + "/kernels/" + set + ".txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    kernel_cases::Case c;
    std::string hash;
    if (fields >> c.name >> c.count >> hash) {
      c.hash = std::stoull(hash, nullptr, 16);
      cases[c.name] = c;
    }
  }
  return cases;
}

// The cases as `isa`'s set computes them (the set in use restored afterwards).
std::vector<kernel_cases::Case> computed_with(KernelIsa isa) {
  const KernelSet& before = kernels();
  EXPECT_TRUE(use_kernels(isa));
  std::vector<kernel_cases::Case> cases = kernel_cases::compute();
  use_kernels(before.isa);
  return cases;
}

// The names of the cases whose floats differ from the fixture's.
std::vector<std::string> differing(const std::vector<kernel_cases::Case>& computed,
                                   const std::map<std::string, kernel_cases::Case>& expected) {
  std::vector<std::string> names;
  for (const kernel_cases::Case& c : computed) {
    const auto it = expected.find(c.name);
    if (it == expected.end() || it->second.count != c.count || it->second.hash != c.hash) names.push_back(c.name);
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += "\n  " + n;
  return s;
}

void expect_set_matches_its_build(KernelIsa isa) {
  if (!kernel_set(isa)) GTEST_SKIP() << "kernel set " << kernel_isa_name(isa) << ": not in this build or this CPU";
  const auto expected = read_fixture(kernel_isa_name(isa));
  ASSERT_FALSE(expected.empty()) << "no fixture tests/fixtures/kernels/" << kernel_isa_name(isa) << ".txt";
  const std::vector<kernel_cases::Case> computed = computed_with(isa);
  EXPECT_EQ(computed.size(), expected.size());
  EXPECT_TRUE(differing(computed, expected).empty())
      << "set " << kernel_isa_name(isa) << " differs from its single-ISA build in:" << joined(differing(computed, expected));
}

TEST(KernelDispatch, Avx512SetGivesTheFloatsOfTheNativeAvx512Build) { expect_set_matches_its_build(KernelIsa::avx512); }

TEST(KernelDispatch, Avx2SetGivesTheFloatsOfTheX86_64_v3Build) { expect_set_matches_its_build(KernelIsa::avx2); }

// The comparison can tell the sets apart: AVX2's floats are not AVX-512's (softmax's exponential, layer norm's
// sums and the products' order differ), so a set that ran another set's code would fail the tests above.
TEST(KernelDispatch, TheSetsComputeDifferentFloats) {
  if (!kernel_set(KernelIsa::avx2) || !kernel_set(KernelIsa::avx512)) GTEST_SKIP() << "needs the avx2 and avx512 sets";
  const std::vector<std::string> avx2_vs_avx512 = differing(computed_with(KernelIsa::avx2), read_fixture("avx512"));
  EXPECT_GE(avx2_vs_avx512.size(), 10u) << "the avx2 set differs from the AVX-512 build in:" << joined(avx2_vs_avx512);
  const std::vector<std::string> baseline_vs_avx2 = differing(computed_with(KernelIsa::baseline), read_fixture("avx2"));
  if (std::string(kernel_set(KernelIsa::baseline)->name) == "baseline") {  // x86-64-v2: no FMA
    EXPECT_GE(baseline_vs_avx2.size(), 10u) << "the baseline set differs from the AVX2 build in:" << joined(baseline_vs_avx2);
  }
}

// Without STEPFORMER_KERNELS, a portable build uses the best set the CPU has (a -march=native build its own).
TEST(KernelDispatch, ChoosesTheBestSetTheCpuHas) {
  if (const char* asked = std::getenv("STEPFORMER_KERNELS"); asked && *asked) GTEST_SKIP() << "STEPFORMER_KERNELS is set";
  ASSERT_NE(kernel_set(KernelIsa::baseline), nullptr);
  const KernelSet& set = kernels();
  if (std::string(set.name) == "native") {
    EXPECT_EQ(set.isa, KernelIsa::baseline);
    return;
  }
  const KernelIsa best = kernel_set(KernelIsa::avx512) ? KernelIsa::avx512
                         : kernel_set(KernelIsa::avx2) ? KernelIsa::avx2
                                                       : KernelIsa::baseline;
  EXPECT_EQ(set.isa, best) << "in use: " << set.name;
#if defined(__x86_64__) && !defined(__EMSCRIPTEN__) && defined(STEPFORMER_EXPECT_DISPATCH)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(set.isa, KernelIsa::avx512);
  }
#endif
  for (KernelIsa isa : {KernelIsa::baseline, KernelIsa::avx2, KernelIsa::avx512}) {
    if (const KernelSet* s = kernel_set(isa)) {
      EXPECT_EQ(s->isa, isa);
    }
  }
}

}  // namespace
}  // namespace sf
