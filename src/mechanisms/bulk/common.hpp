#pragma once
// Shared by the bulk mechanisms: one parameter set (pattern, size, mode, placement, verify), the
// one check every mechanism's refusals go through, and the small system helpers several of them
// use (a notification socketpair, SCM_RIGHTS, the pipe size).
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/params.hpp"

namespace ipclab::bulk {

/// The largest message the suite takes: 1 GiB (the grid stops at 64 MiB).
constexpr int64_t kMaxSize = int64_t(1) << 30;

/// pattern (throughput | roundtrip), size, mode, placement, verify, then `extra`.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra = {});

/// What a mechanism can do; check() turns it into one-line refusals.
struct Caps {
  int64_t max_size = kMaxSize;
  std::string size_limit_why;  // named in the refusal when size > max_size
  bool processes = true;       // false: threads of one process only
  std::string processes_why;
};
/// Why `p` cannot run on a mechanism with `caps`, or "".
std::string check(const Caps& caps, const Params& p);

/// A connected AF_UNIX socketpair (SOCK_SEQPACKET: a notification is one record), close-on-exec.
void notify_pair(int sv[2]);
/// Sends `len` bytes of `data` (a notification) with descriptor `fd` attached when fd >= 0.
void send_record(int sock, const void* data, size_t len, int fd = -1);
/// Receives one record of exactly `len` bytes; returns the descriptor it carried, or -1.
int recv_record(int sock, void* data, size_t len);
/// Writes all `len` bytes / reads exactly `len` bytes (retrying on EINTR, aborting with the run).
void write_all(int fd, const void* data, size_t len);
void read_all(int fd, void* data, size_t len);

/// Private anonymous memory, page-aligned, mapped with the object and released with it: the
/// buffers a side sends from or receives into in place.
class Pages {
 public:
  explicit Pages(size_t bytes);
  ~Pages();
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  std::byte* get() const { return mem_; }

 private:
  std::byte* mem_;
  size_t bytes_;
};

/// The notes two bulk endpoints exchange over a SEQPACKET socket beside their data: "message in
/// slot k" (Data, possibly with a descriptor) and "slot k is yours again" (Credit). One socket
/// carries both kinds both ways in a round trip, so each wait keeps the notes of the other kind
/// that arrive first.
struct Note {
  enum Kind : uint32_t { Data = 1, Credit = 2 };
  uint32_t kind = 0;
  uint32_t slot = 0;
  int32_t pid = 0;  // process_vm: whose memory
  uint32_t pad = 0;
  uint64_t addr = 0;  // process_vm: where in it
  uint64_t len = 0;
};

class Notes {
 public:
  explicit Notes(int sock) : sock_(sock) {}
  ~Notes();
  Notes(const Notes&) = delete;
  Notes& operator=(const Notes&) = delete;
  /// Sends `n` (its kind set by the caller), with descriptor `fd` attached when >= 0.
  void send(const Note& n, int fd = -1) { send_record(sock_, &n, sizeof n, fd); }
  /// Waits for the next Data note; `fd` receives the descriptor it carried (-1: none).
  Note data(int* fd = nullptr);
  /// Waits for the next Credit note.
  Note credit();

 private:
  Note next(Note::Kind kind, int* fd);
  int sock_;
  std::vector<Note> data_, credits_;  // arrived early, oldest first
  std::vector<int> fds_;              // the early data notes' descriptors
};

/// Sets a pipe's capacity to `want` bytes, at most /proc/sys/fs/pipe-max-size (a larger message
/// passes in pieces); returns the capacity it got (a warning when the kernel refused).
size_t grow_pipe(int fd, size_t want);

}  // namespace ipclab::bulk
