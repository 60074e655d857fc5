// runtime/<bench>_go: the Go runtime's side of the runtime suite, measured by a peer process
// (peers/go/cmd/runtime-peer, package rtbench) on the same workloads as ipcrt and Asio, with the
// same parameters and grids: goroutine spawn+join, runtime.Gosched switch, channel messages (1
// pair and P pairs) and time.Timer arm+fire. The peer verifies every result (sums, sequence
// numbers, fire counts) and reports ns/op and its CPU over the timed run; see docs/runtime.md.
// `drive` (issue 20) runs the bench on the peer's main goroutine or in one main waits for;
// switch_many_go has `tasks` goroutines Gosched round-robin.
#include <string>

#include "core/measure/session.hpp"
#include "core/peers/peer.hpp"
#include "mechanisms/go_peers.hpp"
#include "mechanisms/runtime/common.hpp"

#ifndef IPCLAB_GO_RUNTIME_PEER
#define IPCLAB_GO_RUNTIME_PEER ""
#endif

namespace ipclab::rt {
namespace {

std::function<void(Session&)> run_go(const std::string& bench) {
  return [bench](Session& s) {
    const std::string peer = go::peer_path(IPCLAB_GO_RUNTIME_PEER, "go_peers");
    const auto& cpus = s.options().cpus;
    const int cpu = s.params().i64("gomaxprocs") == 1 && !cpus.empty() ? cpus[0] : -1;
    // A timer with a delay waits for Go's netpoller, whose timeouts are whole milliseconds.
    const bool ms_timer = bench == "timer" && s.params().i64("delay_us") > 0;
    fold_peer(s, peer, cpu, {"--bench=" + bench}, peer_timeout_s(s, ms_timer));
  };
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "spawn_go",
    .help = "Go: `go leaf(i)` n goroutines, joined with a sync.WaitGroup per batch",
    .params = {spawn_n(), batch_param(), drive_param_default_quick(), go::gomaxprocs_param()},
    .workload = run_go("spawn"),
});

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_go",
    .help = "Go: runtime.Gosched() n times in one goroutine",
    .params = {switch_n(), drive_param(), go::gomaxprocs_param()},
    .workload = run_go("switch"),
});

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_many_go",
    .help =
        "Go: `tasks` goroutines each calling runtime.Gosched() n/tasks times, joined with a sync.WaitGroup",
    .params = {switch_n(), tasks_param(), drive_param(), go::gomaxprocs_param()},
    .workload = run_go("switch_many"),
    .check = switch_many_check,
});

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_go",
    .help = "Go: n messages through a chan uint64 of capacity, one producer and one consumer goroutine",
    .params = {channel_n(), capacity_param(), drive_param_default_quick(), go::gomaxprocs_param()},
    .workload = run_go("channel"),
});

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_pairs_go",
    .help = "Go: P pairs of producer/consumer goroutines, n messages each through a chan uint64",
    .params = {pairs_param(), pairs_n(), capacity_param(), drive_param_default_quick(),
               go::gomaxprocs_param()},
    .workload = run_go("channel_pairs"),
});

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "timer_go",
    .help = "Go: one time.Timer, Reset(delay) + receive from its channel n times (arm + fire, sequential)",
    .params = {delay_param(), timer_n(), go::gomaxprocs_param()},
    .workload = run_go("timer"),
});

}  // namespace
}  // namespace ipclab::rt
