// core/measure/session, what the echo and servers suites need of it: a run bounded by its work rather
// than --duration (until_done), warm-up work that keeps the window closed until it is done
// (Worker::hold_warmup), and a peer's death named before the worker's error it caused.
#include "core/measure/session.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "core/base/clock.hpp"
#include "core/process/process.hpp"

using namespace ipclab;

namespace {

const Mechanism kMech{.suite = "test", .name = "session"};
const Params kParams;  // none

RunOptions options(double duration_s, double warmup_s) {
  RunOptions o;
  o.duration_s = duration_s;
  o.warmup_s = warmup_s;
  return o;
}

// Work of `steps` x 10 ms, following the phases as any worker does; false when the run stopped it.
bool work(Worker& w, int steps) {
  for (int i = 0; i < steps; ++i) {
    if (!w.running()) return false;
    sleep_ns(10'000'000);
  }
  return true;
}

// Waits for the measured window to open; false when the run stopped first.
bool await_window(Worker& w) {
  while (w.running() && !w.measuring()) sleep_ns(100'000);
  return w.measuring();
}

}  // namespace

// 300 ms of work against a --duration of 50 ms: the window lasts until the work is done.
TEST(SessionUntilDone, WindowLastsUntilTheWorkIsDone) {
  const RunOptions o = options(0.05, 0);
  Record rec;
  Session s(kMech, kParams, o, rec);
  s.until_done(30);
  s.run_workers({{"worker", 0, -1,
                  [](Worker& w) {
                    w.ready();
                    if (await_window(w) && work(w, 30)) w.out().ops = 1;
                  }}},
                false, "");
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_EQ(rec.ops, 1u);
  EXPECT_GE(rec.wall_s, 0.3);
  EXPECT_LT(rec.wall_s, 10.0);
}

// Work that outlasts the bound fails the record, naming the bound, and is stopped.
TEST(SessionUntilDone, WorkPastTheBoundFailsTheRun) {
  const RunOptions o = options(0.05, 0);
  Record rec;
  Session s(kMech, kParams, o, rec);
  s.until_done(0.2);
  const uint64_t t0 = now_ns();
  s.run_workers({{"worker", 0, -1,
                  [](Worker& w) {
                    w.ready();
                    if (await_window(w)) work(w, 1000);  // 10 s unless stopped
                  }}},
                false, "");
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 5.0);
  EXPECT_EQ(rec.status, Status::Failed);
  EXPECT_NE(rec.error.find("did not finish their work within 0.2 s"), std::string::npos) << rec.error;
}

// The window opens only once the warm-up work is done, even when it outlasts --warmup; the work
// itself never sees the measured phase.
TEST(SessionUntilDone, WarmupWorkKeepsTheWindowClosed) {
  for (bool bounded : {false, true}) {
    SCOPED_TRACE(bounded ? "until_done" : "timed");
    const RunOptions o = options(0.1, 0.01);
    Record rec;
    Session s(kMech, kParams, o, rec);
    if (bounded) s.until_done(30);
    std::atomic<bool> measured_while_warming{false};
    std::atomic<uint64_t> warmed_at{0}, opened_at{0};
    s.run_workers({{"worker", 0, -1,
                    [&](Worker& w) {
                      w.hold_warmup();
                      w.ready();
                      for (int i = 0; i < 20; ++i) {  // 200 ms of warm-up work, against --warmup 10 ms
                        w.running();
                        if (w.measuring()) measured_while_warming = true;
                        sleep_ns(10'000'000);
                      }
                      warmed_at = now_ns();
                      w.warmed();
                      if (!await_window(w)) return;
                      opened_at = now_ns();
                      work(w, bounded ? 5 : 1000);
                    }}},
                  false, "");
    EXPECT_EQ(rec.status, Status::Ok) << rec.error;
    EXPECT_FALSE(measured_while_warming);
    ASSERT_NE(opened_at.load(), 0u);
    EXPECT_GT(opened_at.load(), warmed_at.load());
    // The measured window is --duration (timed) or the 50 ms of work (bounded), not the warm-up.
    EXPECT_LT(rec.wall_s, 1.0);
  }
}

// A peer killed mid-run: the worker sees it first as a broken pipe, but the record names the
// death, the cause.
TEST(SessionUntilDone, PeerDeathIsNamedBeforeTheWorkersSymptom) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Process peer = Process::fork(-1, [] {
    sleep_ns(100'000'000);
    raise(SIGKILL);
    return 0;
  });
  ::close(p[1]);  // the peer holds the only write end: its death ends the worker's read
  const RunOptions o = options(5, 0);
  Record rec;
  Session s(kMech, kParams, o, rec);
  s.add_peer({.role = "server", .index = 0, .process = &peer});
  const int rfd = p[0];
  s.run_workers({{"client", 0, -1,
                  [rfd](Worker& w) {
                    w.ready();
                    char c;
                    while (w.running())
                      if (::read(rfd, &c, 1) == 0) throw std::runtime_error("the peer closed its pipe");
                  }}},
                false, "");
  ::close(rfd);
  EXPECT_EQ(rec.status, Status::Failed);
  EXPECT_NE(rec.error.find("server 0 died of signal 9"), std::string::npos) << rec.error;
}
