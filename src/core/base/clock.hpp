#pragma once
// The one clock of the harness: CLOCK_MONOTONIC, comparable across threads and processes.
#include <cstdint>
#include <ctime>

namespace ipclab {

/// Nanoseconds on CLOCK_MONOTONIC (vDSO, no system call).
inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

/// Sleeps for `ns` nanoseconds, resuming after signals.
void sleep_ns(uint64_t ns);

/// What one now_ns() costs on this machine, in ns: measured once per process (the fastest of a few
/// batches of back-to-back reads; the vDSO's cost varies with the clock source, ~20-30 ns under KVM,
/// a few ns on bare metal with the TSC).
double clock_read_ns();

}  // namespace ipclab
