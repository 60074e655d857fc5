// The machine-wide lock of names every copy of a daemon shares (ipc::lock_shared): exclusive
// across runs, naming its holder to a run that waits; a planted link or FIFO at its path refused
// and left alone, without blocking; and a sweep that removes a dead run's fixed names only once it
// holds the lock that run held.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../ownership_support.hpp"
#include "core/base/error.hpp"
#include "core/ownership/journal.hpp"
#include "core/ownership/sweep.hpp"
#include "core/process/process.hpp"

namespace ipclab {
namespace {

using test::exists;
using test::run_folders_of;

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  return text;
}

std::string lock_name() { return "test." + std::to_string(getpid()); }

TEST(SharedLock, IsExclusiveAcrossRunsAndNamesItsHolderToARunThatWaits) {
  const std::string name = lock_name(), path = ipc::shared_lock_path(name);
  ipc::lock_shared(name, 1);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Process child = Process::fork(-1, [&] {  // a run of its own
    close(p[0]);
    std::string said = "taken";
    try {
      ipc::lock_shared(name, 0.3);
    } catch (const Skip& e) {
      said = e.what();
    }
    (void)!write(p[1], said.data(), said.size());
    return 0;
  });
  close(p[1]);
  const std::string said = read_all(p[0]);
  close(p[0]);
  ASSERT_TRUE(child.wait(30));
  EXPECT_NE(said.find("in use by ipclab run " + ipc::run_id()), std::string::npos) << said;
  ipc::unlock_shared(name);
  EXPECT_FALSE(exists(path));
  ipc::sweep_leftovers();  // the child's run folder
}

TEST(SharedLock, APlantedLinkOrFifoIsRefusedWithoutBlockingAndLeftAlone) {
  const std::string name = lock_name(), path = ipc::shared_lock_path(name);
  for (int kind = 0; kind < 2; ++kind) {
    ASSERT_EQ(kind == 0 ? symlink("/etc/hostname", path.c_str()) : mkfifo(path.c_str(), 0600), 0);
    try {
      ipc::lock_shared(name, 0.1);
      ADD_FAILURE() << "a planted " << (kind == 0 ? "link" : "FIFO") << " was taken as the lock";
    } catch (const Skip& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(kind == 0 ? S_ISLNK(st.st_mode) : S_ISFIFO(st.st_mode));
    unlink(path.c_str());
  }
}

TEST(SharedLock, TheSweepRemovesADeadRunsFixedNamesOnlyOnceItHoldsTheLock) {
  const std::string name = lock_name(), path = ipc::shared_lock_path(name);
  const std::string fixed = "/tmp/ipclab-sharedtest-fixed." + std::to_string(getpid());
  Process child = Process::fork(-1, [&] {
    try {
      ipc::lock_shared(name, 1);
      ipc::track_file(fixed);  // a daemon's fixed name, made under the lock
      close(open(fixed.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
    } catch (...) {
      return 1;
    }
    return 0;  // _exit: no clean-up, as when killed
  });
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.wait(30));
  ASSERT_TRUE(child.clean());
  ASSERT_TRUE(exists(fixed));
  ASSERT_TRUE(exists(path));  // left by the dead run, unlocked

  // Another run holds the lock now: the dead run's fixed name stays, and so does its folder.
  ipc::lock_shared(name, 1);
  std::string said;
  for (auto& l : ipc::sweep_leftovers()) said += l + "\n";
  EXPECT_TRUE(exists(fixed));
  EXPECT_EQ(run_folders_of(pid).size(), 1u);
  EXPECT_NE(said.find("kept its machine-wide names"), std::string::npos) << said;
  ipc::unlock_shared(name);

  // Free: the next sweep takes it, removes the name, the lock file and the folder.
  said.clear();
  for (auto& l : ipc::sweep_leftovers()) said += l + "\n";
  EXPECT_FALSE(exists(fixed));
  EXPECT_FALSE(exists(path));
  EXPECT_TRUE(run_folders_of(pid).empty());
  EXPECT_NE(said.find("file " + fixed), std::string::npos) << said;
  unlink(fixed.c_str());
}

TEST(SharedLock, AFixedNameJournaledWithoutALockIsNeverSwept) {
  const std::string fixed = "/tmp/ipclab-sharedtest-nolock." + std::to_string(getpid());
  Process child = Process::fork(-1, [&] {
    try {
      ipc::track_file(fixed);
      close(open(fixed.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
    } catch (...) {
      return 1;
    }
    return 0;
  });
  ASSERT_TRUE(child.wait(30));
  ASSERT_TRUE(child.clean());
  ipc::sweep_leftovers();
  EXPECT_TRUE(exists(fixed));  // whose it is cannot be told by now
  unlink(fixed.c_str());
}

}  // namespace
}  // namespace ipclab
