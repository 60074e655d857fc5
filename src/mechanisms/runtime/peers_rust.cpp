// runtime/<bench>_<rt>: the runtime suite's benches on the Rust runtimes (peers/rust): Tokio
// current_thread and multi_thread, Monoio (IoUringDriver) and Compio (io_uring), with the same
// parameters, defaults and checks as <bench>_ipcrt. Each run starts the runtime's peer, which times
// the bench itself (warm-up run, then the timed run, like Session::measure) and reports the tally
// it verified; fold_peer takes its record. Channels come twice: channel_<rt> on the runtime's own
// fastest channel (tokio::sync::mpsc; local_sync::mpsc::bounded for Monoio and Compio) and
// channel_futures_<rt> on futures::channel::mpsc, the reference's choice. `drive` (issue 20) runs the
// body as block_on's root future, as condy-bench does, or spawned and joined from block_on;
// switch_many_<rt> has `tasks` tasks yield round-robin, sharing the driver's cost between them.
#include <fmt/format.h>

#include <string_view>

#include "core/measure/session.hpp"
#include "core/peers/peer.hpp"
#include "mechanisms/runtime/common.hpp"
#include "mechanisms/rust_peers.hpp"

namespace ipclab::rt {
namespace {

// Tokio's and futures' bounded channels have no rendezvous mode.
ParamSpec peer_capacity() {
  ParamSpec p = capacity_param();
  p.min = 1;
  p.help = "channel capacity in messages (as for ipcrt and Asio; at least 1 here)";
  return p;
}

struct Bench {
  const char* name;     // mechanism prefix
  const char* peer;     // --bench=
  const char* channel;  // --channel= ("" for none)
  std::vector<ParamSpec> (*params)();
  const char* what;
};

const Bench kBenches[] = {
    {"spawn", "spawn", "",
     [] {
       return std::vector<ParamSpec>{spawn_n(), batch_param(), drive_param_default_quick()};
     },
     "spawn n tasks returning their index and join every handle (in batches)"},
    {"switch", "switch", "",
     [] {
       return std::vector<ParamSpec>{switch_n(), drive_param()};
     },
     "yield n times in one task (tokio::task::yield_now; a self-wake for Monoio and Compio)"},
    {"switch_many", "switch_many", "",
     [] {
       return std::vector<ParamSpec>{switch_n(), tasks_param(), drive_param()};
     },
     "spawn `tasks` tasks that yield n/tasks times each, round-robin, and join them"},
    {"channel", "channel", "native",
     [] {
       return std::vector<ParamSpec>{channel_n(), peer_capacity(), drive_param_default_quick()};
     },
     "n messages through the runtime's own channel (tokio::sync::mpsc / local_sync::mpsc::bounded), one "
     "producer and one consumer task"},
    {"channel_futures", "channel", "futures",
     [] {
       return std::vector<ParamSpec>{channel_n(), peer_capacity(), drive_param_default_quick()};
     },
     "n messages through futures::channel::mpsc (the reference's choice), one producer and one consumer "
     "task"},
    {"channel_pairs", "channel_pairs", "native",
     [] {
       return std::vector<ParamSpec>{pairs_param(), pairs_n(), peer_capacity(), drive_param_default_quick()};
     },
     "P producer/consumer pairs, n messages each, over the runtime's own channel"},
    {"channel_pairs_futures", "channel_pairs", "futures",
     [] {
       return std::vector<ParamSpec>{pairs_param(), pairs_n(), peer_capacity(), drive_param_default_quick()};
     },
     "P producer/consumer pairs, n messages each, over futures::channel::mpsc"},
    {"timer", "timer", "",
     [] {
       return std::vector<ParamSpec>{delay_param(), timer_n()};
     },
     "sleep(delay) n times in one task (arm + fire, sequential; Tokio's and Monoio's timers tick in ms)"},
};

void run(Session& s, const RustRuntime& rt, const Bench& b) {
  const Params& p = s.params();
  std::vector<std::string> args{fmt::format("--bench={}", b.peer)};
  if (*rt.flavor) args.push_back(fmt::format("--flavor={}", rt.flavor));
  if (*b.channel) args.push_back(fmt::format("--channel={}", b.channel));
  // Every timer bench gets the millisecond budget: Tokio's and Monoio's timers tick in ms.
  fold_peer(s, rust_peer(rt.binary), -1, args, peer_timeout_s(s, p.has("delay_us")));
}

const bool registered = [] {
  for (const RustRuntime& rt : kRustRuntimes)
    for (const Bench& b : kBenches)
      Registry::get().add(Mechanism{
          .suite = "runtime",
          .name = fmt::format("{}_{}", b.name, rt.suffix),
          .help = fmt::format("{}: {} (Rust peer, peers/rust)", rt.what, b.what),
          .params = b.params(),
          .workload = [&rt, &b](Session& s) { run(s, rt, b); },
          .check = std::string_view(b.name) == "switch_many" ? switch_many_check : nullptr,
      });
  return true;
}();

}  // namespace
}  // namespace ipclab::rt
