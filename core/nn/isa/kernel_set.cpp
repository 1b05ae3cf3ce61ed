// One instruction set's table of kernels (nn/kernels.h), compiled once per set.
#include "nn/isa/isa_kernels.h"

namespace sf::STEPFORMER_ISA {

namespace {
constexpr KernelSet kSet{KernelIsa::STEPFORMER_ISA_KIND, STEPFORMER_ISA_NAME, softmax_row, layer_norm_rows,
                         small_gemm_vectorised, small_gemm_xwt, small_gemm_xw, small_gemm_packed, add_x_wt,
                         linear_few_rows, x_wt, x_w};
}  // namespace

const KernelSet& kernel_set() { return kSet; }

}  // namespace sf::STEPFORMER_ISA
