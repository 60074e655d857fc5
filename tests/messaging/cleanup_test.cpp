// Clean-up: after a normal run, and after SIGINT to a running `ipclab run`, nothing of that
// process is left: no POSIX mq, SysV queue, shm segment, FIFO or run directory.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"

namespace {

using ipclab::Process;
using ipclab::Spawn;

std::string ipclab_binary() {
  // The unit binary is built next to ipclab.
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = 0;
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  for (std::string c : {dir + "/ipclab", dir + "/../ipclab"})
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// Why leftover POSIX queues cannot be seen here ("" when they can): they are listed only where
// the mqueue filesystem is mounted on /dev/mqueue.
std::string mqueue_unseen() {
  constexpr long kMqueueMagic = 0x19800202;  // MQUEUE_MAGIC, <linux/magic.h>
  struct statfs fs {};
  if (statfs("/dev/mqueue", &fs) != 0 || fs.f_type != kMqueueMagic)
    return "/dev/mqueue is not an mqueue mount here, so a POSIX queue left behind could not be seen; "
           "mount it (mount -t mqueue none /dev/mqueue)";
  return "";
}

std::vector<std::string> leftovers(pid_t pid) {
  std::vector<std::string> found;
  const std::string tag = "ipclab." + std::to_string(pid) + ".";
  for (const char* dir : {"/dev/mqueue", "/dev/shm"}) {
    if (DIR* d = opendir(dir)) {
      while (dirent* e = readdir(d))
        if (std::string(e->d_name).find(tag) != std::string::npos)
          found.push_back(std::string(dir) + "/" + e->d_name);
      closedir(d);
    }
  }
  // The run's folder in the state folder: "run.<pid>.<random>".
  const std::string state = ipclab::ipc::state_dir();
  if (DIR* d = opendir(state.c_str())) {
    const std::string run = "run." + std::to_string(pid) + ".";
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(run, 0) == 0) found.push_back(state + "/" + e->d_name);
    closedir(d);
  }
  // SysV queues whose creator is that pid.
  std::ifstream in("/proc/sysvipc/msg");
  std::string line;
  std::getline(in, line);
  std::istringstream hs(line);
  std::vector<std::string> cols;
  for (std::string c; hs >> c;) cols.push_back(c);
  int cpid = -1;
  for (size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == "lspid" || cols[i] == "cpid") cpid = cols[i] == "cpid" ? int(i) : cpid;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> v;
    for (std::string c; ls >> c;) v.push_back(c);
    if (cpid >= 0 && int(v.size()) > cpid && v[size_t(cpid)] == std::to_string(pid))
      found.push_back("sysv msg " + line);
  }
  return found;
}

// Starts ipclab (core/process) with its output on /dev/null.
Process spawn(const std::string& bin, const std::vector<std::string>& args) {
  std::vector<std::string> argv{bin};
  argv.insert(argv.end(), args.begin(), args.end());
  const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  Process p = Process::exec(Spawn{.stdout_fd = devnull, .stderr_fd = devnull}, argv);
  close(devnull);
  return p;
}

// The mechanisms whose objects a run leaves named somewhere, in two groups: POSIX queues can be
// listed only where /dev/mqueue is mounted, the others always.
struct Objects {
  std::string name;
  std::vector<std::string> mechanisms;
  bool posix_mq = false;
};

// How the test names a group (gtest would print its bytes).
void PrintTo(const Objects& o, std::ostream* os) { *os << o.name; }

const Objects kGroups[] = {
    {"fifo_sysv_shm", {"messaging/fifo", "messaging/sysv_mq", "messaging/shm_spsc"}},
    {"posix_mq", {"messaging/posix_mq"}, true},
};

std::vector<std::string> run_args(const Objects& o, std::initializer_list<std::string> timing) {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), o.mechanisms.begin(), o.mechanisms.end());
  args.insert(args.end(), {"-p", "pattern=roundtrip", "-p", "mode=processes", "-p", "placement=unpinned",
                           "--repetitions", "1"});
  args.insert(args.end(), timing);
  return args;
}

class MessagingCleanup : public ::testing::TestWithParam<Objects> {
 protected:
  void SetUp() override {
    bin_ = ipclab_binary();
    if (bin_.empty()) GTEST_SKIP() << "ipclab binary not found next to the test binary";
    if (GetParam().posix_mq)
      if (const auto why = mqueue_unseen(); !why.empty()) GTEST_SKIP() << why;
  }
  std::string bin_;
};

TEST_P(MessagingCleanup, NothingLeftAfterANormalRun) {
  Process run = spawn(bin_, run_args(GetParam(), {"--duration", "0.05", "--warmup", "0.01"}));
  const pid_t pid = run.pid();
  ASSERT_TRUE(run.wait(120));
  EXPECT_TRUE(run.clean()) << run.death();
  EXPECT_EQ(leftovers(pid), std::vector<std::string>{});
}

TEST_P(MessagingCleanup, NothingLeftAfterSigint) {
  Process run = spawn(bin_, run_args(GetParam(), {"--duration", "5", "--warmup", "0"}));
  const pid_t pid = run.pid();
  // Wait until the run has created its objects, then interrupt it mid-run.
  for (int i = 0; i < 100 && leftovers(pid).empty(); ++i) usleep(20'000);
  EXPECT_FALSE(leftovers(pid).empty()) << "the run never created an object to clean up";
  usleep(100'000);
  run.signal(SIGINT);
  ASSERT_TRUE(run.wait(30)) << "the run did not end within 30 s of SIGINT";
  EXPECT_EQ(leftovers(pid), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Messaging, MessagingCleanup, ::testing::ValuesIn(kGroups),
                         [](const auto& info) { return info.param.name; });

}  // namespace
