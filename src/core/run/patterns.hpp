#pragma once
// The standard patterns, written once for every mechanism.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/measure/session.hpp"

namespace ipclab {

/// The server of one round-trip channel, on its own (the remote side of --remote, core/remote/remote.hpp):
/// echoes each request on `ep` until the client's stop marker, as the roundtrip pattern's server.
void serve_roundtrip(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p);
/// Consumer `index` of a throughput channel, on its own (the remote side of --remote): receives,
/// verifies and times every message on `ep` until its stop marker, as the throughput pattern's
/// consumer does, into its slot — which must be the run's slot `producers + index`, the consumers'
/// place in a local run. The producers' send stamps are on another host's clock: `clock_offset_ns`
/// (this host's CLOCK_MONOTONIC minus theirs) is added to each before the one-way latency is taken.
/// `window_ns`: the run's --duration (pattern=rate's backlog slices).
void serve_throughput(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p, int index,
                      int64_t clock_offset_ns, uint64_t window_ns);
/// What far receivers saw of each producer's messages (a consumer's seen counts, summed over the
/// consumers): for the check that every message sent reached one of them, intact.
struct FarSeen {
  std::vector<uint64_t> count, seqsum;  // per producer (empty: a round-trip run's)
  /// pattern=rate: the receivers' half of the open-loop trace (latency from the actual send time,
  /// the backlog slices), summed over them; null otherwise.
  std::unique_ptr<RateTrace> rate;
};
/// Where a transport's receivers run when they are not on this host: across the link of
/// `--remote` (core/remote/remote.hpp: LinkReceivers), handed to run_transport for its run. The
/// transport pattern then opens only the senders' ends here, through them, and folds into the
/// record what the far side measured (its integrity, ops, bytes, latency and CPU), keeping the
/// check of what was sent against what was seen for itself.
class FarReceivers {
 public:
  virtual ~FarReceivers() = default;
  virtual std::unique_ptr<Transport> open_transport(Session& s) = 0;
  /// After the run: what the far side measured, into the record; what it saw of each producer.
  virtual FarSeen fold_far_side(Session& s) = 0;
};
/// Drives a transport mechanism: the `pattern` parameter picks throughput or round trips. `far`:
/// where its receivers run when not here (--remote); nullptr: here.
void run_transport(Session& s, FarReceivers* far = nullptr);
/// Repeats a loop mechanism's op for the duration, timing it in batches.
void run_loop(Session& s);

}  // namespace ipclab
