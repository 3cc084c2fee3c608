#include "train/signals.h"

#include <csignal>

namespace headroom::train {
namespace {
volatile std::sig_atomic_t g_signal = 0;  // the one piece of process state a handler may touch
extern "C" void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

bool stop_requested() { return g_signal != 0; }
int stop_signal() { return g_signal; }

}  // namespace headroom::train
