#pragma once
// Shared by the messaging mechanisms: one parameter set (so every mechanism offers the same
// grid under the same names), the checks that reject combinations a mechanism cannot run, and
// small helpers for kernel limits and non-blocking busy-polling.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/fdio.hpp"
#include "core/base/params.hpp"
#include "core/measure/session.hpp"

namespace ipclab::messaging {

/// What a mechanism can do; `check` turns it into one-line refusals.
struct Caps {
  int64_t max_size = 65536;                  // largest message (datagram and queue limits)
  std::string size_limit_why;                // named in the refusal when size > max_size
  bool shared_queue = false;                 // throughput with several producers/consumers on one queue
  int max_producers = 4, max_consumers = 4;  // e.g. 1 for the sides of an SPSC ring
  bool pairs = true;                         // roundtrip with N independent pairs
  bool processes = true;                     // false for in-process queues
  std::string topology_why;                  // why several producers/consumers cannot share it
};

/// The suite's parameters: pattern, size, producers, consumers, mode, placement, latency_sample,
/// random, then `extra`.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra = {});
/// Why `p` cannot run on a mechanism with `caps`, or "".
std::string check(const Caps& caps, const Params& p);

/// Bounded queue length (messages); the reference's maxMessages.
ParamSpec queue_depth(std::string def, std::string help, int64_t max = 1 << 20);
/// Non-blocking calls, busy-polling on EAGAIN (the reference's nonBlocking).
ParamSpec nonblocking();
/// Wait strategy of the shared-memory rings.
ParamSpec wait_strategy(std::vector<std::string> quick);

/// One line to stderr, once per `key` per process: limits capped to what the kernel allows.
void warn_once(const std::string& key, const std::string& text);
/// An integer from a /proc file, or `fallback` when it cannot be read.
int64_t read_proc_int(const char* path, int64_t fallback);

using ipclab::poll_abort;   // core/base/cancel.hpp
using ipclab::retry_errno;  // core/base/fdio.hpp

}  // namespace ipclab::messaging
