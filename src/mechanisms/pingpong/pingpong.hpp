#pragma once
// The pingpong suite (reference 004, SPEC §3.2): `pairs` host threads each own one slot of a
// shared-memory region and make `round_trips` round trips with a guest — a C++ thread, a C++
// process or a Go process. One file per guest kind registers the mechanism; this is the run
// they share. docs/pingpong.md describes the protocol.
#include <string>
#include <vector>

#include "core/model/mechanism.hpp"

namespace ipclab::pingpong {

enum class GuestKind { Thread, Process, Go };

/// Parameters of every pingpong mechanism (wait, pairs, round_trips, spin_limit, placement, ...).
std::vector<ParamSpec> suite_params();

/// Why this point cannot run with this guest kind ("" when it can): too many pairs for the
/// session's workers.
std::string check(const Params& p, GuestKind kind);

/// Runs one repetition on the session: region, hosts and guest, record. `go_guest`: the Go guest
/// executable (kind Go; go::peer_path found it).
void run(Session& s, GuestKind kind, const std::string& go_guest = "");

}  // namespace ipclab::pingpong
