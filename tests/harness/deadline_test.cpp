// The deadline of a body that shows no progress (Session::measure): past it the process prints
// the FAILED line, removes the run's objects and exits 1; disarmed in time, nothing happens.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/measure/watchdog.hpp"
#include "core/ownership/deadline.hpp"
#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"

namespace ipclab {
namespace {

struct Outcome {
  int status = 0;
  std::string err;
};

// Runs `body` in a forked child (core/process) with its stderr on a pipe; returns how it ended
// and what it said.
Outcome in_child(const std::function<int()>& body) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  Process child = Process::fork(-1, [&] {
    dup2(p[1], 2);
    return body();
  });
  close(p[1]);
  Outcome o;
  char buf[512];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) o.err.append(buf, size_t(n));
  close(p[0]);
  EXPECT_TRUE(child.wait(30));
  o.status = child.status();
  return o;
}

TEST(Deadline, PastItTheProcessSaysWhyRemovesItsObjectsAndExits1) {
  int names[2];
  ASSERT_EQ(pipe(names), 0);
  Outcome o = in_child([&] {
    const std::string shm = ipc::unique_name("deadline");
    close(ipc::create_shm(shm));
    (void)!write(names[1], shm.data(), shm.size());
    close(names[1]);
    Deadline d(0.2, "FAILED x (repetition 0): stalled: workload x did not finish within 0.2 s");
    sleep(10);  // the stalled body
    return 0;
  });
  close(names[1]);
  char buf[256] = {};
  ASSERT_GT(read(names[0], buf, sizeof buf - 1), 0);
  close(names[0]);
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1) << describe_exit(o.status);
  EXPECT_EQ(o.err, "FAILED x (repetition 0): stalled: workload x did not finish within 0.2 s\n");
  struct stat st {};
  EXPECT_NE(stat((std::string("/dev/shm") + buf).c_str(), &st), 0) << buf << " outlived the deadline";
}

TEST(Deadline, DisarmedInTimeItDoesNothing) {
  Outcome o = in_child([] {
    { Deadline d(0.1, "FAILED: should not be printed"); }
    usleep(300'000);
    return 0;
  });
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << describe_exit(o.status);
  EXPECT_EQ(o.err, "");
}

// A set-up guard (Session::guard_setup) names the step it waited on in its line.
TEST(Deadline, ItsLineNamesWhatTheBodyWaitedFor) {
  Outcome o = in_child([] {
    Deadline d(0.2, "FAILED x (repetition 0): stalled: its set-up did not finish within 0.2 s");
    Deadline::waiting_for("writing the test file /d/f");
    sleep(10);
    return 0;
  });
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1) << describe_exit(o.status);
  EXPECT_EQ(o.err,
            "FAILED x (repetition 0): stalled: its set-up did not finish within 0.2 s; it waited for "
            "writing the test file /d/f\n");
}

// A body that makes progress (a large file written MiB by MiB) outlives the deadline's length.
TEST(Deadline, ProgressStartsItOver) {
  Outcome o = in_child([] {
    Deadline d(0.3, "FAILED: should not be printed");
    for (int i = 0; i < 5; ++i) {
      usleep(150'000);
      Deadline::progress();
    }
    return 0;
  });
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << describe_exit(o.status);
  EXPECT_EQ(o.err, "");
}

}  // namespace
}  // namespace ipclab
