// The emulated device has no cuDNN: attention_*_auto choose the own kernels there, and say so once.
#include "cuda/cudnn_attention.h"

#include "headroom_error.h"

namespace headroom::kernels::cuda_emu {

cuda::CudnnSupport cudnn_support() { return {90, 0}; }

bool cudnn_attention_fwd(const cuda::AttentionCall&, float, const float*, const float*, const float*, float*, float*,
                         std::string*) {
  fail("cudnn_attention_fwd called on the emulated device, which has no cuDNN");
}

bool cudnn_attention_fwd(const cuda::AttentionCall&, float, const uint16_t*, const uint16_t*, const uint16_t*,
                         uint16_t*, float*, std::string*) {
  fail("cudnn_attention_fwd called on the emulated device, which has no cuDNN");
}

bool cudnn_attention_bwd(const cuda::AttentionCall&, float, const float*, const float*, const float*, const float*,
                         const float*, const float*, float*, float*, float*, std::string*) {
  fail("cudnn_attention_bwd called on the emulated device, which has no cuDNN");
}
bool cudnn_attention_bwd(const cuda::AttentionCall&, float, const uint16_t*, const uint16_t*, const uint16_t*,
                         const uint16_t*, const float*, const uint16_t*, float*, float*, float*, std::string*) {
  fail("cudnn_attention_bwd called on the emulated device, which has no cuDNN");
}

}  // namespace headroom::kernels::cuda_emu
