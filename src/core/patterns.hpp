#pragma once
// The standard patterns, written once for every mechanism.
#include "core/session.hpp"

namespace ipclab {

/// Drives a transport mechanism: the `pattern` parameter picks throughput or round trips.
void run_transport(Session& s);
/// The server of one round-trip channel, on its own (the remote side of --remote, core/remote.hpp):
/// echoes each request on `ep` until the client's stop marker, as the roundtrip pattern's server.
void serve_roundtrip(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p);
/// Repeats a loop mechanism's op for the duration, timing it in batches.
void run_loop(Session& s);

}  // namespace ipclab
