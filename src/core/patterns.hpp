#pragma once
// The standard patterns, written once for every mechanism.
#include "core/session.hpp"

namespace ipclab {

/// Drives a transport mechanism: the `pattern` parameter picks throughput or round trips.
void run_transport(Session& s);
/// Repeats a loop mechanism's op for the duration, timing it in batches.
void run_loop(Session& s);

}  // namespace ipclab
