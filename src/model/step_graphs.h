// CUDA graphs of a micro-batch's forward and backward passes (forward.h's train_staged). On a GPU
// a step enqueues thousands of kernels, most of them short: launched one by one, the host's launch
// rate, not the device, can set the pace. Each pass is captured once into a graph and replayed as
// one launch per micro-batch.
//
// What a pass enqueues must then depend on nothing that changes between micro-batches but what its
// key names: the shape is fixed by the activations these graphs belong to, the data are read from
// device buffers the staging rewrites, and whether documents are masked is the key. Collectives
// (tensor and context parallelism) are captured with the kernels: every rank replays the same
// sequence. The LM head
// (its chunk count follows each micro-batch's targets) and the loss's scale run between the two
// graphs, op by op. Where the backward pass starts the gradient reductions as it goes (a
// data-parallel micro-batch's last, with buckets), each piece between two starts is a graph of its
// own. Each graph runs once op by op for a new key first (the backend's plan caches, the scratch's
// size), is captured the next time, and is captured again when the backend reports it stale
// (device memory freed since).
#pragma once

#include "ops.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace headroom::model {

struct GraphFree {
  kernels::sig::GraphFree* free = nullptr;
  void operator()(void* graph) const {
    if (free) free(graph);
  }
};
using Graph = std::unique_ptr<void, GraphFree>;

struct CapturedPass {
  Graph graph;
  int key = -1;  // what the pass ran or was captured with last: documents masked (1) or not (0)
};

struct StepGraphs {
  bool enabled = false;  // train.cuda_graphs, set by the trainer
  bool failed = false;   // a capture failed (logged): the passes are enqueued op by op from then on
  CapturedPass forward, backward;
  // The backward pass's pieces (the final norm, each layer, the embedding), each a graph, where the
  // gradient reductions start between them (forward.h's grads_final).
  std::vector<CapturedPass> backward_parts;
  int64_t captures = 0, replays = 0;
};

// Runs `pass` as p's graph where it can (above): op by op the first time with a key, captured and
// launched the second, launched after. A capture that fails is logged on stderr, marks g failed and
// runs the pass op by op.
template <class T>
void run_captured(const kernels::BasicOps<T>& ops, StepGraphs& g, CapturedPass& p, int key,
                  const std::function<void()>& pass);

}  // namespace headroom::model
