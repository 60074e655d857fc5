#pragma once
// Test hooks, read from IPCLAB_FAULT, so tests can prove end to end that the harness notices what
// it claims to notice. One spec per run:
//   corrupt:N           flips one byte of every Nth message a consumer (roundtrip: the server)
//                       receives; the run must fail with corrupt = the messages flipped;
//   slow:MECH:NS        busy-waits NS ns after every receive of mechanism MECH (compare must flag it);
//   stall:MECH:ROLE:MS  the ROLE side (producer, consumer, client, server) of mechanism MECH
//                       freezes once for MS ms in the middle of the measured window — for the
//                       frozen-peer tests of thread-based runs, where SIGSTOP cannot stop one side
//                       alone. It spins (state R, as a side stuck in its own work would), and lets
//                       go early once the session aborts.
// MECH is a mechanism's name (`pipe`) or full name (`messaging/pipe`). The hooks are a decorator
// installed only when asked for, so normal runs pay nothing.
#include <memory>
#include <string>

#include "core/mechanism.hpp"

namespace ipclab {

class Worker;

/// The valid forms, for error messages.
inline constexpr const char* kFaultForms = "corrupt:N, slow:MECH:NS or stall:MECH:ROLE:MS";

/// Checks IPCLAB_FAULT up front: UsageError naming the valid forms when it is set but malformed.
void check_fault_env();

/// `ep`, wrapped in the hooks IPCLAB_FAULT asks for on this side (`role` of mechanism `mech`),
/// or `ep` itself when none applies. `w` tells the hooks where the measured window is.
std::unique_ptr<Endpoint> with_faults(std::unique_ptr<Endpoint> ep, const Mechanism& mech,
                                      const std::string& role, Worker& w, double duration_s);

}  // namespace ipclab
