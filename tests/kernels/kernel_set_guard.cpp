// stepformer_kernel_tests_<set> (tests/CMakeLists.txt) run the kernels' unit tests with STEPFORMER_KERNELS=<set>:
// where this build or this CPU has no such set, every test skips, saying so, instead of testing another set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nn/kernels.h"

namespace {

class KernelSetGuard : public testing::Environment {
 public:
  void SetUp() override {
    const char* asked = std::getenv("STEPFORMER_KERNELS");
    if (!asked || !*asked) return;
    for (sf::KernelIsa isa : {sf::KernelIsa::baseline, sf::KernelIsa::avx2, sf::KernelIsa::avx512}) {
      if (std::string(asked) != sf::kernel_isa_name(isa)) continue;
      if (!sf::kernel_set(isa)) GTEST_SKIP() << "kernel set " << asked << ": not in this build or not run by this CPU";
      ASSERT_EQ(sf::kernels().isa, isa) << "STEPFORMER_KERNELS=" << asked << " did not choose that set";
      return;
    }
    FAIL() << "STEPFORMER_KERNELS=" << asked << ": no such kernel set";
  }
};

const testing::Environment* const guard = testing::AddGlobalTestEnvironment(new KernelSetGuard);

}  // namespace
