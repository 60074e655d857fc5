#pragma once
// The standard patterns, written once for every mechanism.
#include <memory>

#include "core/measure/session.hpp"

namespace ipclab {

/// Drives a transport mechanism: the `pattern` parameter picks throughput or round trips.
void run_transport(Session& s);
/// The server of one round-trip channel, on its own (the remote side of --remote, core/run/remote.hpp):
/// echoes each request on `ep` until the client's stop marker, as the roundtrip pattern's server.
void serve_roundtrip(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p);
/// Where a transport's receivers run when they are not on this host: `--remote` (core/run/remote.cpp)
/// sets them for its run; the transport pattern then opens only the senders' ends here, through
/// them, and folds into the record what the far side measured.
class FarReceivers {
 public:
  virtual ~FarReceivers() = default;
  virtual std::unique_ptr<Transport> open_transport(Session& s) = 0;
  virtual void fold(Session& s) = 0;
};
/// Sets the far receivers of the runs from now on (nullptr: the receivers run here).
void set_far_receivers(FarReceivers* far);
/// Repeats a loop mechanism's op for the duration, timing it in batches.
void run_loop(Session& s);

}  // namespace ipclab
