#pragma once
// What a worker of an open-loop run (pattern=rate, core/run/openloop.hpp) keeps in its slot beside
// its histogram: plain data the session holds for every worker, the rate record folds.
#include <cstdint>

#include "core/load/arrivals.hpp"
#include "core/stats/histogram.hpp"

namespace ipclab {

/// What one worker of an open-loop run keeps beside its histogram (which holds the corrected
/// latency): plain data, in the worker's shared slot.
struct RateTrace {
  static constexpr int kSlices = 16;  // of the window, for the backlog rule
  Histogram raw;                      // receiver: from the actual send time
  Histogram lateness;                 // sender: actual − intended send time
  uint64_t sent = 0;                  // sender: messages sent inside the measured window
  uint64_t overdue = 0;               // sender: due inside the window but not sent by its end
  uint64_t first_intended = 0;        // receiver: intended time of its first measured message
  uint64_t slice_ns = 0;              // receiver: the window's 1/kSlices (set with first_intended)
  uint64_t slice_sum[kSlices] = {}, slice_n[kSlices] = {};

  /// Sender, per message sent in the measured window.
  void sent_one(uint64_t intended, uint64_t actual) {
    lateness.record(actual > intended ? actual - intended : 0);
    ++sent;
  }
  /// Sender, once it has seen the stop: counts what its schedule made due inside the window (up
  /// to `stop_ns`, the window's end: Worker::window_end) but it had not sent (a sender that kept
  /// up has none; one held back by its transport many).
  void stopped(Arrivals& arrivals, uint64_t stop_ns) {
    if (sent)
      while (arrivals.next() <= stop_ns) ++overdue;
  }
  /// Receiver, per measured message received at `now`, after recording the corrected latency
  /// (now − intended) in the worker's histogram. `window_ns`: the run's --duration.
  void received(uint64_t intended, uint64_t actual, uint64_t now, uint64_t window_ns) {
    raw.record(now > actual ? now - actual : 0);
    if (!first_intended) {
      first_intended = intended;
      slice_ns = window_ns / kSlices ? window_ns / kSlices : 1;
    }
    uint64_t k = intended > first_intended ? (intended - first_intended) / slice_ns : 0;
    if (k >= uint64_t(kSlices)) k = kSlices - 1;
    slice_sum[k] += now > intended ? now - intended : 0;
    slice_n[k]++;
  }
  /// Adds another worker's trace (the open-loop record folds its workers' so; a remote side its
  /// receivers' before it sends them).
  void merge(const RateTrace& o) {
    raw.merge(o.raw);
    lateness.merge(o.lateness);
    sent += o.sent;
    overdue += o.overdue;
    for (int k = 0; k < kSlices; ++k) slice_sum[k] += o.slice_sum[k], slice_n[k] += o.slice_n[k];
  }
};

}  // namespace ipclab
