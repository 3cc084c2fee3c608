// Where a run directory keeps its checkpoints: checkpoints/step_00000100.h5 (complete files only:
// each is written under a .tmp name and renamed), checkpoints/latest naming the newest, and how
// many are kept. The file format itself is checkpoint.h's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace headroom::io {

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step);
void write_latest(const std::filesystem::path& run_dir, const std::filesystem::path& checkpoint);
// Complete checkpoints in the run directory, newest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& run_dir);
// Deletes all but the newest `keep` checkpoints (keep = 0: none deleted) and stale .tmp files.
void prune_checkpoints(const std::filesystem::path& run_dir, long keep);

// A checkpoint file, or a run directory meaning the checkpoint its `latest` names.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& file_or_run_dir);

}  // namespace headroom::io
