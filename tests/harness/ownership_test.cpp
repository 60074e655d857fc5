// Ownership of what a run creates (core/ownership/journal.hpp): exclusive creation that leaves a planted
// object alone, a journal per run, and a sweep that removes exactly what a dead run's journal
// lists — never a live run's objects, never anything unlisted or another user's.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <semaphore.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "../ownership_support.hpp"
#include "core/ownership/journal.hpp"
#include "core/ownership/sweep.hpp"
#include "core/process/process.hpp"

namespace ipclab {
namespace {

using test::exists;
using test::run_folders_of;

std::string shm_path(const std::string& name) { return "/dev/shm" + name; }
std::string sem_path(const std::string& name) { return "/dev/shm/sem." + name.substr(1); }
bool mq_exists(const std::string& name) {
  mqd_t q = mq_open(name.c_str(), O_RDONLY);
  if (q == mqd_t(-1)) return false;
  mq_close(q);
  return true;
}
bool msgq_exists(int key) { return msgget(key, 0) >= 0; }

// What a child's run created, sent back through a pipe.
struct Created {
  std::string shm, sem, mq, fifo, file;
  int key = 0;
};

// Forks a child that starts its own run, creates one object of every kind (the file in
// `file_dir`), reports their names, then either exits at once without cleaning up (a crash) or
// waits until `hold` is closed. Returns the child (core/process).
Process child_run(const std::string& file_dir, Created& c, int* hold_fd) {
  int names[2], hold[2];
  if (pipe(names) != 0 || pipe(hold) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  Process child = Process::fork(-1, [&] {
    close(names[0]);
    close(hold[1]);
    std::string out;
    try {
      std::string shm = ipc::unique_name("own"), sem = ipc::unique_name("own"), mq = ipc::unique_name("own");
      close(ipc::create_shm(shm));
      sem_close(ipc::create_sem(sem, 0));
      mq_attr attr{};
      attr.mq_maxmsg = 2;
      attr.mq_msgsize = 64;
      mq_close(ipc::create_mq(mq, 0, &attr));
      int key = 0;
      ipc::create_msgq(key);
      std::string fifo = ipc::run_dir() + ipc::unique_name("fifo");
      ipc::create_fifo(fifo);
      std::string file;
      close(ipc::create_file(file_dir, "data", 0600, file));
      out = shm + "\n" + sem + "\n" + mq + "\n" + fifo + "\n" + file + "\n" + std::to_string(key) + "\n";
    } catch (const std::exception& e) {
      out = std::string("error ") + e.what() + "\n";
    }
    (void)!write(names[1], out.data(), out.size());
    close(names[1]);
    char b;
    if (hold_fd) (void)!read(hold[0], &b, 1);
    return 0;  // the child ends with _exit: the run's clean-up never happens, as in a crash
  });
  close(names[1]);
  close(hold[0]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(names[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(names[0]);
  std::istringstream in(text);
  std::string key;
  std::getline(in, c.shm);
  std::getline(in, c.sem);
  std::getline(in, c.mq);
  std::getline(in, c.fifo);
  std::getline(in, c.file);
  std::getline(in, key);
  if (c.shm.rfind("error", 0) == 0) throw std::runtime_error(c.shm);
  c.key = std::stoi(key);
  if (hold_fd)
    *hold_fd = hold[1];
  else
    close(hold[1]);
  return child;
}

class Ownership : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ipclab-ownership-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.' || std::string(e->d_name).size() > 2)
          unlink((dir_ + "/" + e->d_name).c_str());
      closedir(d);
    }
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(Ownership, CreationRefusesAPlantedNameAndLeavesItInPlace) {
  const std::string shm = ipc::unique_name("planted"), sem = ipc::unique_name("planted"),
                    mq = ipc::unique_name("planted");
  // Planted under the very names the run is about to use.
  int fd = shm_open(shm.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  sem_t* s = sem_open(sem.c_str(), O_CREAT | O_EXCL, 0600, 0);
  ASSERT_NE(s, SEM_FAILED);
  sem_close(s);
  mq_attr attr{};
  attr.mq_maxmsg = 2;
  attr.mq_msgsize = 64;
  mqd_t q = mq_open(mq.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
  ASSERT_NE(q, mqd_t(-1));
  mq_close(q);
  const std::string fifo = ipc::run_dir() + ipc::unique_name("fifo");
  ASSERT_EQ(symlink(dir_.c_str(), fifo.c_str()), 0);

  EXPECT_THROW(ipc::create_shm(shm), std::system_error);
  EXPECT_THROW(ipc::create_sem(sem, 0), std::system_error);
  EXPECT_THROW(ipc::create_mq(mq, 0, &attr), std::system_error);
  EXPECT_THROW(ipc::create_fifo(fifo), std::system_error);
  // A failed creation is not the run's: the end of the run leaves the planted objects alone.
  ipc::end_run();
  EXPECT_TRUE(exists(shm_path(shm)));
  EXPECT_TRUE(exists(sem_path(sem)));
  EXPECT_TRUE(mq_exists(mq));
  shm_unlink(shm.c_str());
  sem_unlink(sem.c_str());
  mq_unlink(mq.c_str());
  // The run folder was not removed either: it holds the planted link.
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  unlink(fifo.c_str());
  rmdir(fifo.substr(0, fifo.rfind('/')).c_str());
}

TEST_F(Ownership, ObjectsAreCreatedWithModes0600WhateverTheUmask) {
  const mode_t old = umask(0);
  const std::string shm = ipc::unique_name("mode");
  close(ipc::create_shm(shm));
  std::string file;
  close(ipc::create_file(dir_, "mode", 0600, file));
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat(shm_path(shm).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(stat(ipc::run_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ipc::remove(ipc::Kind::PosixShm, shm);
  ipc::remove(ipc::Kind::File, file);
  EXPECT_FALSE(exists(shm_path(shm)));
  EXPECT_FALSE(exists(file));
}

// At a normal end the run removes what its journal still lists as open — here a path another
// program created in the run's folder (a library's socket) — and then the folder.
TEST_F(Ownership, ANormalEndRemovesWhatTheJournalStillLists) {
  const std::string folder = ipc::run_dir();
  const std::string path = folder + "/made-by-another";
  ipc::track_path(path);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ipc::end_run();
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(folder));
}

TEST_F(Ownership, TheSweepRemovesWhatADeadRunListedAndSaysSo) {
  Created c;
  Process child = child_run(dir_, c, nullptr);
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.wait(30));
  ASSERT_TRUE(exists(shm_path(c.shm)) && exists(sem_path(c.sem)) && mq_exists(c.mq) && exists(c.fifo) &&
              exists(c.file) && msgq_exists(c.key));
  ASSERT_EQ(run_folders_of(pid).size(), 1u);

  auto lines = ipc::sweep_leftovers();
  std::string said;
  for (auto& l : lines) said += l + "\n";
  EXPECT_FALSE(exists(shm_path(c.shm)));
  EXPECT_FALSE(exists(sem_path(c.sem)));
  EXPECT_FALSE(mq_exists(c.mq));
  EXPECT_FALSE(msgq_exists(c.key));
  EXPECT_FALSE(exists(c.fifo));
  EXPECT_FALSE(exists(c.file));
  EXPECT_TRUE(run_folders_of(pid).empty());
  for (auto& n : {c.shm, c.sem, c.mq, c.file}) EXPECT_NE(said.find(n), std::string::npos) << said;
}

TEST_F(Ownership, ALiveRunIsNeverSwept) {
  Created c;
  int hold = -1;
  Process child = child_run(dir_, c, &hold);
  ipc::sweep_leftovers();
  EXPECT_TRUE(exists(shm_path(c.shm)));
  EXPECT_TRUE(mq_exists(c.mq));
  EXPECT_TRUE(msgq_exists(c.key));
  EXPECT_TRUE(exists(c.fifo));
  EXPECT_TRUE(exists(c.file));
  close(hold);  // the child exits without cleaning up: now it is a dead run
  ASSERT_TRUE(child.wait(30));
  ipc::sweep_leftovers();
  EXPECT_FALSE(exists(shm_path(c.shm)));
  EXPECT_FALSE(msgq_exists(c.key));
  EXPECT_FALSE(exists(c.file));
}

TEST_F(Ownership, TheSweepLeavesWhatIsNotListedOrNoLongerTheUsers) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give an object to another user";
  Created c;
  Process child = child_run(dir_, c, nullptr);
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.wait(30));
  auto folders = run_folders_of(pid);
  ASSERT_EQ(folders.size(), 1u);
  // The journal lists the segment, but it now belongs to someone else; the folder gains a file
  // the journal does not list.
  ASSERT_EQ(chown(shm_path(c.shm).c_str(), 65534, 65534), 0);
  const std::string stray = folders[0] + "/stray";
  std::ofstream(stray) << "not ipclab's";
  ipc::sweep_leftovers();
  EXPECT_TRUE(exists(shm_path(c.shm))) << "removed another user's object";
  EXPECT_TRUE(exists(stray)) << "removed a file the journal does not list";
  EXPECT_FALSE(exists(c.file));
  EXPECT_FALSE(exists(sem_path(c.sem)));
  shm_unlink(c.shm.c_str());
  unlink(stray.c_str());
  rmdir(folders[0].c_str());
}

}  // namespace
}  // namespace ipclab
