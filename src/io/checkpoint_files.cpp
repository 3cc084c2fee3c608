#include "io/checkpoint_files.h"

#include "io/atomic_file.h"
#include "util/error.h"

#include <algorithm>
#include <cstdio>

namespace headroom::io {
namespace fs = std::filesystem;

fs::path checkpoint_path(const fs::path& run_dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld.h5", static_cast<long long>(step));
  return run_dir / "checkpoints" / name;
}

void write_latest(const fs::path& run_dir, const fs::path& checkpoint) {
  write_file_atomic(run_dir / "checkpoints" / "latest", checkpoint.filename().string() + "\n");
}

std::vector<fs::path> list_checkpoints(const fs::path& run_dir) {
  std::vector<fs::path> out;
  const fs::path dir = run_dir / "checkpoints";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 && e.path().extension() == ".h5") out.push_back(e.path());
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

void prune_checkpoints(const fs::path& run_dir, long keep) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints", ec))
    if (e.path().extension() == ".tmp") fs::remove(e.path(), ec);
  if (keep <= 0) return;
  const auto all = list_checkpoints(run_dir);
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) fs::remove(all[i], ec);
}

fs::path resolve_checkpoint(const fs::path& file_or_run_dir) {
  std::error_code ec;
  if (!fs::is_directory(file_or_run_dir, ec)) {
    if (!fs::exists(file_or_run_dir, ec)) fail("checkpoint ", file_or_run_dir.string(), ": does not exist");
    return file_or_run_dir;
  }
  const fs::path latest = file_or_run_dir / "checkpoints" / "latest";
  if (!fs::exists(latest, ec))
    fail("run directory ", file_or_run_dir.string(), " has no checkpoints/latest (no finished checkpoint)");
  std::string name = read_file(latest);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return file_or_run_dir / "checkpoints" / name;
}

}  // namespace headroom::io
