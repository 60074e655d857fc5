#pragma once
// The cachecalc workload (reference 000, "cache calc"), shared by every variant: a calc walks the
// 10 keys of a string map, parses each value (empty = 10000), adds one and stores it back as text;
// a task is calc -> delay -> calc; an iteration is 1000 tasks on a fresh map, verified at the end.
// Two calcs: the reference's (the default) and our lean one; both end on the same values.
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/params.hpp"

namespace ipclab {
class Session;
class Worker;
}  // namespace ipclab

namespace ipclab::cachecalc {

using Cache = std::unordered_map<std::string, std::string>;

constexpr int kKeys = 10;
constexpr int kTasks = 1000;       // the reference's max_iter
constexpr int kConcurrency = 8;    // the reference's num_tasks: threads, async window, workers
constexpr int64_t kEmpty = 10000;  // what an empty value counts as
constexpr int64_t kExpected = kEmpty + 2 * kTasks;

/// The key names hello0 ... hello9.
const std::vector<std::string>& keys();
/// A map holding every key of `subset` with an empty value (all 10 keys by default).
Cache fresh_cache(std::span<const std::string> subset = keys());
/// The value as the calc reads it: empty counts as kEmpty.
int64_t parse_value(const std::string& v);
/// The reference's calc: per key, the key string is built anew ("hello" + its index), the value
/// copied out by one map lookup and stored back by a second, parsed with std::stoi (empty counts
/// as kEmpty). Its allocations and double hashing are part of the reference's cost.
void calc_reference(Cache& c);
/// Our lean calc over `subset` (all 10 keys by default): the prebuilt key names, one lookup per
/// key, the value rewritten in place.
void calc_lean(Cache& c, std::span<const std::string> subset = keys());
/// A calc over all 10 keys.
using CalcFn = void (*)(Cache&);
/// The `calc` parameter: reference (the default) or lean.
ParamSpec calc_param();
/// The calc the `calc` parameter names.
CalcFn calc_of(const Params& p);
/// "" when every key of `subset` holds kEmpty + 2 * tasks, else what is wrong.
std::string verify(const Cache& c, int tasks = kTasks, std::span<const std::string> subset = keys());

/// The delay as a blocking sleep (nanosleep): the reference's BM_sleep.
void sleep_delay(int64_t us);
/// The delay as busy work, as the reference's devzero_io (BM_sleep_devzero and every std-thread
/// variant): opens /dev/zero, reads it in 1 KiB blocks until `us` passed, closes it; 0 does nothing.
void devzero_delay(int64_t us);

/// The `delay_us` parameter: 8 and 64 as in the reference's /8 and /64.
ParamSpec delay_param();

/// How a task waits between its calcs: busy /dev/zero reads, a blocking sleep, or an asynchronous
/// timer of the variant's event loop (which frees the thread meanwhile).
enum class DelayKind { Devzero, Sleep, Timer };
/// The `delay_kind` parameter of a variant that can wait in the ways `kinds` names ("devzero",
/// "sleep", "timer"); the first is the default, the reference's choice for that variant.
ParamSpec delay_kind_param(std::vector<std::string> kinds);
DelayKind delay_kind_of(const Params& p);
/// A blocking delay of `kind` (Devzero or Sleep; Timer is the variant's own).
void blocking_delay(DelayKind kind, int64_t us);

/// A task of the thread variants (serial, std_mutex, std_async, threadpool) as the `calc`,
/// `delay_kind` and `delay_us` parameters say: calc, a blocking delay, calc.
struct BlockingTask {
  explicit BlockingTask(const Params& p);
  /// On one thread: nothing is shared.
  void operator()(Cache& c) const;
  /// Among threads: each calc under `m`, the delay outside it.
  void operator()(Cache& c, std::mutex& m) const;

  CalcFn calc;
  DelayKind kind;
  int64_t us;
};

/// The iteration loop of one session worker: the session's phases decide when it warms up, when
/// it measures and when it stops; the worker's own window holds whole iterations only, at least
/// one (WorkerSpec::whole_ops). Each measured iteration is an op, its time one latency sample.
/// Used as `while (it.next()) it.done(<one iteration>)`, on the worker's thread or on a thread the
/// worker hands the loop to (sharded: shard 0, while the worker waits).
class Iterations {
 public:
  explicit Iterations(Worker& w) : w_(w) {}
  /// Before an iteration: false once the session stops the run.
  bool next();
  /// After it, with "" or what its verification found: a failure counts as corrupt and is thrown
  /// (the first one stops the run and fails the record).
  void done(const std::string& error);

 private:
  Worker& w_;
  bool measuring_ = false;
  uint64_t t0_ = 0;
};

/// The session worker of a cachecalc run: a thread charged with the whole process's CPU (the
/// variant's pool or runtime threads too) whose body is `body`; ops = iterations, so time/op and
/// CPU/op are per iteration, and the latency histogram holds each iteration's time ("op").
void run_worker(Session& s, const std::function<void(Worker&)>& body);
/// run_worker over `iteration` (one verified iteration on the worker's thread, returning "" or
/// what its verification found), through Iterations.
void run_iterations(Session& s, const std::function<std::string()>& iteration);

}  // namespace ipclab::cachecalc
