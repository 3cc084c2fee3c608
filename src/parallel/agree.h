// Errors that every rank learns of together. A rank that fails alone and unwinds can reach a
// collective call (HDF5's close, a barrier) that the other ranks, still inside an earlier or later
// collective, never match: the job hangs until its allocation runs out. `agree` turns one rank's
// failure into the same CollectiveError on every rank, at the same point of every rank's sequence of
// collective calls, so that they unwind through the same collectives and exit together.
#pragma once

#include "parallel/comm.h"
#include "util/error.h"

#include <functional>

namespace headroom::parallel {

// Thrown on every rank of a communicator at once (by `agree`): the catcher may finish MPI normally,
// since no rank is left inside a collective.
struct CollectiveError : Error {
  using Error::Error;
};

// Runs `step` on this rank (a local action, or collective calls that return on every rank even when
// they fail, as HDF5's collective writes do), then agrees over `comm` on its outcome: when any rank's
// step threw, every rank throws CollectiveError with the message of the lowest failing rank.
// `comm` must carry host buffers (MpiComm).
void agree(Comm& comm, const std::function<void()>& step);

}  // namespace headroom::parallel
