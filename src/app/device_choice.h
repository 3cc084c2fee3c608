// train.device = auto made concrete at a stage's start: cuda when every rank sees a GPU, else cpu.
// The device is a fact of the machine the stage runs on, so the choice is made again by every
// stage (a checkpoint's stored train.device is not inherited: app/stage_start.h).
#pragma once

#include "config/choices.h"

#include <mpi.h>

#include <string>

namespace headroom::app {

// What `auto` becomes when `gpus_min` is the fewest GPUs any rank sees (0 in a build without CUDA).
config::Device auto_device(int gpus_min);

// Sets `device` (auto on entry) to the same concrete choice on every rank of `world` and returns a
// line for the run's log saying what was chosen and why.
std::string resolve_auto_device(config::Device& device, MPI_Comm world);

}  // namespace headroom::app
