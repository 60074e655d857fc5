// messaging/sysv_mq: System V message queues (msgget/msgsnd/msgrcv). Queues are created
// under fresh keys of the run (ipc::create_msgq: IPC_CREAT|IPC_EXCL 0600, journaled) and removed
// at the end. The queue's byte budget (msg_qbytes) is queue_depth messages, capped to
// /proc/sys/kernel/msgmnb with a warning. A blocked msgrcv returns EINTR on the harness's wake-up
// signal, which is how an aborting run stops it.
#include <sys/ipc.h>
#include <sys/msg.h>

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <system_error>

#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

int64_t msgmax() { return read_proc_int("/proc/sys/kernel/msgmax", 8192); }
int64_t msgmnb() { return read_proc_int("/proc/sys/kernel/msgmnb", 16384); }

class SysvEndpoint final : public Endpoint {
 public:
  SysvEndpoint(int to_peer, int from_peer, bool nb, size_t size)
      : out_(to_peer), in_(from_peer), nb_(nb), buf_(sizeof(long) + size) {}
  void send(const std::byte* data, size_t len) override {
    // The API wants `long mtype` in front of the text: one copy into our buffer.
    long type = 1;
    std::memcpy(buf_.data(), &type, sizeof type);
    std::memcpy(buf_.data() + sizeof(long), data, len);
    while (msgsnd(out_, buf_.data(), len, nb_ ? IPC_NOWAIT : 0) != 0) retry_errno("msgsnd", nb_);
  }
  size_t recv(std::byte* buf, size_t len) override {
    ssize_t n;
    while ((n = msgrcv(in_, buf_.data(), len, 0, nb_ ? IPC_NOWAIT : 0)) < 0) {
      if (errno == ENOMSG) errno = EAGAIN;  // IPC_NOWAIT on an empty queue
      retry_errno("msgrcv", nb_);
    }
    if (size_t(n) != len)
      throw std::runtime_error(fmt::format("SysV message of {} bytes, expected {}", n, len));
    std::memcpy(buf, buf_.data() + sizeof(long), len);
    return len;
  }

 private:
  int out_, in_;
  bool nb_;
  std::vector<std::byte> buf_;
};

class SysvTransport final : public Transport {
 public:
  explicit SysvTransport(const Params& p) {
    roundtrip_ = std_params::is_roundtrip(p);
    nb_ = p.flag("nonblocking");
    size_ = size_t(p.i64("size"));
    const int nqueues = roundtrip_ ? 2 * int(p.i64("producers")) : 1;
    const uint64_t asked = uint64_t(p.i64("queue_depth")) * size_;
    qbytes_ = std::min<uint64_t>(asked, uint64_t(msgmnb()));
    qbytes_ = std::max<uint64_t>(qbytes_, size_);
    if (qbytes_ < asked)
      warn_once("sysv_msgmnb",
                fmt::format("sysv_mq: queue of {} bytes capped to /proc/sys/kernel/msgmnb = {} "
                            "(raise it with sysctl kernel.msgmnb)",
                            asked, qbytes_));
    try {
      for (int i = 0; i < nqueues; ++i) create();
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~SysvTransport() override { destroy(); }

  std::unique_ptr<Endpoint> open(Role role, int index) override {
    if (!roundtrip_) return std::make_unique<SysvEndpoint>(ids_[0], ids_[0], nb_, size_);
    int req = ids_[size_t(2 * index)], rep = ids_[size_t(2 * index + 1)];
    if (role == Role::Producer) return std::make_unique<SysvEndpoint>(req, rep, nb_, size_);
    return std::make_unique<SysvEndpoint>(rep, req, nb_, size_);
  }
  std::string object_name() const override {
    return ids_.empty() ? "-" : fmt::format("sysv:{:#x}", keys_[0]);
  }
  void describe(nlohmann::json& extra) const override {
    extra["msg_qbytes"] = qbytes_;
    extra["queue_depth_used"] = qbytes_ / size_;
    extra["queues"] = ids_.size();
  }

 private:
  void create() {
    int key = 0;
    int id = ipc::create_msgq(key);
    ids_.push_back(id);
    keys_.push_back(key);
    msqid_ds ds{};
    if (msgctl(id, IPC_STAT, &ds) == 0) {
      ds.msg_qbytes = qbytes_;
      if (msgctl(id, IPC_SET, &ds) != 0)
        throw std::system_error(errno, std::generic_category(), "msgctl IPC_SET msg_qbytes");
    }
  }
  void destroy() {
    for (int key : keys_) ipc::remove(ipc::Kind::SysvMsg, fmt::format("{:#x}", key));
    ids_.clear();
    keys_.clear();
  }
  std::vector<int> ids_, keys_;
  uint64_t qbytes_ = 0;
  size_t size_ = 0;
  bool roundtrip_ = false, nb_ = false;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "sysv_mq",
    .help = "System V message queue (msgget IPC_EXCL 0600, msgsnd/msgrcv)",
    .params = suite_params({nonblocking(),
                            queue_depth("16",
                                        "messages the queue holds (msg_qbytes = queue_depth x size, capped "
                                        "to /proc/sys/kernel/msgmnb with a warning)")}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<SysvTransport>(p);
    },
    .check =
        [](const Params& p) {
          return check(Caps{.max_size = msgmax(),
                            .size_limit_why = "/proc/sys/kernel/msgmax; raise it with sysctl",
                            .shared_queue = true},
                       p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
