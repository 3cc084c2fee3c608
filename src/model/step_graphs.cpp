#include "model/step_graphs.h"

#include "util/error.h"

#include <cstdio>
#include <exception>
#include <string>

namespace headroom::model {
namespace {

// The pass captured into a graph, or null with `why` when the capture failed.
template <class T>
void* capture(const kernels::BasicOps<T>& ops, const std::function<void()>& pass, std::string& why) {
  ops.capture_begin();
  try {
    pass();
  } catch (const std::exception& e) {
    ops.capture_end(false);
    why = e.what();
    return nullptr;
  }
  try {
    return ops.capture_end(true);
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace

template <class T>
void run_captured(const kernels::BasicOps<T>& ops, StepGraphs& g, CapturedPass& p, int key,
                  const std::function<void()>& pass) {
  if (p.graph && p.key == key) {
    if (ops.graph_launch(p.graph.get())) {
      ++g.replays;
      return;
    }
    p.graph.reset();  // stale: captured again below, the caches and the scratch are warm
  } else if (p.key != key) {
    p.graph.reset();
    p.key = key;
    pass();
    return;
  }
  std::string why;
  p.graph = Graph(capture(ops, pass, why), GraphFree{ops.graph_free});
  if (!p.graph) {
    g.failed = true;
    std::fprintf(stderr,
                 "headroom: CUDA graphs off: capturing a micro-batch's pass failed (%s); its ops are enqueued one by "
                 "one from now on\n",
                 why.c_str());
    pass();
    return;
  }
  if (++g.captures == 1)
    std::fprintf(stderr, "headroom: CUDA graphs on: a micro-batch's passes captured, replayed from now on\n");
  if (!ops.graph_launch(p.graph.get())) fail("a graph captured just now is stale: device memory was freed meanwhile");
  ++g.replays;
}

template void run_captured<float>(const kernels::BasicOps<float>&, StepGraphs&, CapturedPass&, int,
                                  const std::function<void()>&);
template void run_captured<double>(const kernels::BasicOps<double>&, StepGraphs&, CapturedPass&, int,
                                   const std::function<void()>&);

}  // namespace headroom::model
