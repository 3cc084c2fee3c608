#include "train/callback.h"

#include "util/error.h"

namespace headroom::train {

std::vector<io::CheckpointPart> callback_states(const Callbacks& callbacks) {
  std::vector<io::CheckpointPart> parts;
  for (const auto& cb : callbacks)
    if (auto part = cb->state()) {
      part->name = cb->name();
      parts.push_back(std::move(*part));
    }
  return parts;
}

namespace {

// A callback's messages name the array and the value; this adds the file they came from.
void load_part(Callback& cb, const io::CheckpointPart& part, const std::string& file) {
  try {
    cb.load_state(part);
  } catch (const Error& e) {
    fail("checkpoint ", file, ": ", e.what());
  }
}

}  // namespace

void restore_callbacks(Callbacks& callbacks, const io::CheckpointInfo& info) {
  for (auto& cb : callbacks) {
    if (const io::CheckpointPart* part = info.part(cb->name()))
      load_part(*cb, *part, info.path);
    else if (cb->state())  // it keeps state, and this checkpoint has none for it
      fail("checkpoint ", info.path, " has no part '", cb->name(), "' for the training callback of that name");
  }
}

}  // namespace headroom::train
