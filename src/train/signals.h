// Preemption: Slurm sends SIGUSR1 (with `#SBATCH --signal=USR1@N`) or SIGTERM before it kills a
// job. The handler only sets a flag; the trainer checks it after each step, agrees on it across
// ranks, writes a checkpoint and exits with kExitRequeue so the job script can requeue.
#pragma once

namespace headroom::train {

// Exit status of a stage that stopped on a signal after saving a checkpoint (EX_TEMPFAIL).
inline constexpr int kExitRequeue = 75;

void install_stop_signals();
bool stop_requested();
// The signal number received, 0 if none.
int stop_signal();

}  // namespace headroom::train
