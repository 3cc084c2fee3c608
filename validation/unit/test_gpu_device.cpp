// GPU smoke test: a visible GPU is described and its properties are sane. Exits 77 (CTest: skipped)
// when the machine has no GPU, as CI's does.
#include "cuda/device.h"
#include "headroom_error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

using namespace headroom::kernels::cuda;

TEST(GpuDevice, DescribesEveryVisibleDevice) {
  const int n = device_count();
  ASSERT_GT(n, 0);
  for (int d = 0; d < n; ++d) {
    const std::string s = describe_device(d);
    std::cout << "device " << d << ": " << s << "\n";
    EXPECT_NE(s.find("sm_"), std::string::npos);
  }
  EXPECT_THROW(describe_device(n), headroom::Error);
}

int main(int argc, char** argv) {
  if (device_count() == 0) {
    std::cout << "no GPU visible: skipping\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
