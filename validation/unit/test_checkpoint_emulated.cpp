// evaluate's model on a GPU loads a checkpoint without an fp32 copy of the weights its GEMMs read
// (model::ModelUse::master_weights = false). On the emulated GPU, what it holds after the load is
// what a master model loading the same file holds: the norms and the embedding table in fp32 and the
// GEMMs' weights as the master model's bf16 copy, byte for byte, with tied and untied embeddings. One
// rank under mpirun (label mpi): the checkpoint is written through parallel HDF5.
#include "cuda/table.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "model_fixtures.h"
#include "parallel/grid.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <unistd.h>
#include <vector>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> bytes(const model::Model<float>& m, const void* p, int64_t n) {
  std::vector<std::byte> b(static_cast<size_t>(n));
  m.ops->copy_to_host(b.data(), p, b.size());
  return b;
}

// The tensors a model holds in fp32, each as its elements' bytes, in parameter order.
std::vector<std::vector<std::byte>> held_in_fp32(const model::Model<float>& m) {
  std::vector<std::vector<std::byte>> t;
  for (size_t i = 0; i < m.specs.size(); ++i)
    if (m.param_offsets[i] >= 0 &&
        (!m.master || !model::read_by_gemms(m.specs[i], m.cfg) || m.specs[i].name == "embed.weight"))
      t.push_back(bytes(m, m.params.get() + m.param_offsets[i], 4 * m.shards[i].numel()));
  return t;
}

}  // namespace

TEST(CheckpointEmulated, WithoutMasterWeightsTheLoadHoldsTheMasterModelsBytes) {
  const parallel::Grid grid = parallel::make_grid(1, 1);
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  const fs::path dir = fs::temp_directory_path() / ("headroom_ckpt_emulated_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* tied : {"false", "true"}) {
    const auto cfg = fixtures::tiny_model({{"qk_norm", "head"}, {"tie_embeddings", tied}});
    const fs::path path = dir / (std::string("tied_") + tied + ".h5");
    io::CheckpointInfo info;
    info.stage = "pretrain";
    info.lineage = std::string("[]");
    info.tokenizer_id = "byte";
    io::save_checkpoint(path, grid, model::make_model(cfg, kernels::cpu_ops()), nullptr, info);

    auto master = model::make_model(cfg, table, {}, {.random_weights = false, .gradients = false});
    io::load_checkpoint_tensors(path, master, nullptr);
    model::refresh_stored_weights(master);
    auto lean =
        model::make_model(cfg, table, {}, {.random_weights = false, .gradients = false, .master_weights = false});
    io::load_checkpoint_tensors(path, lean, nullptr);
    model::refresh_stored_weights(lean);

    ASSERT_FALSE(lean.master);
    const auto want = bytes(master, master.stored.get(), master.stored.size());
    EXPECT_NE(want, std::vector<std::byte>(want.size())) << "the checkpoint's weights are zero";
    EXPECT_EQ(bytes(lean, lean.stored.get(), lean.stored.size()), want) << "tie_embeddings " << tied;
    EXPECT_EQ(held_in_fp32(lean), held_in_fp32(master)) << "tie_embeddings " << tied;
  }
  fs::remove_all(dir);
}

int main(int argc, char** argv) {
  parallel::init_mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  parallel::finalize_mpi();
  return rc;
}
