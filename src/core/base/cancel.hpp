#pragma once
// Cancellation, at the bottom of core: whether the run in progress must abort, and the exception a
// waiting side throws then. Anything that blocks (fd reads and writes, fault stalls, spinning
// sides) polls abort_requested() with this header alone; the session (core/measure/session.hpp) points it
// at its control block's abort flag while its workers run, and wakes blocked calls with a signal
// so that they return EINTR and poll it.
#include <atomic>
#include <stdexcept>

namespace ipclab {

/// True once the run in progress must abort (false when none is in progress).
bool abort_requested();

/// Thrown inside a worker when the run aborts while it waits.
struct Aborted : std::runtime_error {
  Aborted() : std::runtime_error("aborted") {}
};

/// Throws Aborted when the run must abort: for busy-poll loops, now and then (inline, so that a
/// ring's header needs nothing else).
inline void poll_abort() {
  if (abort_requested()) throw Aborted();
}

/// The flag abort_requested() reads from now on, non-zero once the run must abort (nullptr: none). The
/// session sets it for the time its workers run.
void set_abort_flag(const std::atomic<int>* flag);

}  // namespace ipclab
