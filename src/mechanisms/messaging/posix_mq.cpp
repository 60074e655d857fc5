// messaging/posix_mq: POSIX message queues (mq_open), as reference 002 benchmarks them. The queue
// attributes are capped to the kernel's limits (/proc/sys/fs/mqueue/msg_max, msgsize_max) and to
// RLIMIT_MSGQUEUE, with a warning; the values used go into the record. Queues are created
// O_EXCL 0600 under a fresh name of the run (ipc::create_mq) and unlinked at the end. Blocking mode uses
// mq_timedsend/mq_timedreceive with a short timeout, so a waiting side notices an abort.
#include <fcntl.h>
#include <mqueue.h>
#include <sys/resource.h>
#include <time.h>

#include <fmt/format.h>

#include <system_error>

#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

constexpr long kTimeoutNs = 100'000'000;  // per timed call; on timeout: check for abort, retry
// Kernel bookkeeping charged to RLIMIT_MSGQUEUE per message besides its payload (struct msg_msg
// and a share of the priority tree), rounded up.
constexpr uint64_t kPerMessageOverhead = 128;

int64_t msgsize_max() { return read_proc_int("/proc/sys/fs/mqueue/msgsize_max", 8192); }
int64_t msg_max() { return read_proc_int("/proc/sys/fs/mqueue/msg_max", 10); }

timespec deadline() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);  // mq_timed* take CLOCK_REALTIME absolute times
  ts.tv_nsec += kTimeoutNs;
  if (ts.tv_nsec >= 1'000'000'000) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1'000'000'000;
  }
  return ts;
}

class MqEndpoint final : public Endpoint {
 public:
  MqEndpoint(mqd_t to_peer, mqd_t from_peer, bool nb) : out_(to_peer), in_(from_peer), nb_(nb) {}
  void send(const std::byte* data, size_t len) override {
    for (;;) {
      int rc;
      if (nb_)
        rc = mq_send(out_, reinterpret_cast<const char*>(data), len, 0);
      else {
        timespec ts = deadline();
        rc = mq_timedsend(out_, reinterpret_cast<const char*>(data), len, 0, &ts);
      }
      if (rc == 0) return;
      if (errno == ETIMEDOUT)
        poll_abort();
      else
        retry_errno("mq_send", nb_);
    }
  }
  size_t recv(std::byte* buf, size_t len) override {
    for (;;) {
      ssize_t n;
      if (nb_)
        n = mq_receive(in_, reinterpret_cast<char*>(buf), len, nullptr);
      else {
        timespec ts = deadline();
        n = mq_timedreceive(in_, reinterpret_cast<char*>(buf), len, nullptr, &ts);
      }
      if (n >= 0) {
        if (size_t(n) != len)
          throw std::runtime_error(fmt::format("mq message of {} bytes, expected {}", n, len));
        return len;
      }
      if (errno == ETIMEDOUT)
        poll_abort();
      else
        retry_errno("mq_receive", nb_);
    }
  }

 private:
  mqd_t out_, in_;
  bool nb_;
};

class MqTransport final : public Transport {
 public:
  explicit MqTransport(const Params& p) {
    const bool roundtrip = std_params::is_roundtrip(p);
    const int pairs = roundtrip ? int(p.i64("producers")) : 1;
    const int nqueues = roundtrip ? 2 * pairs : 1;
    msgsize_ = p.i64("size");
    const int64_t asked = p.i64("queue_depth");
    maxmsg_ = std::min(asked, msg_max());
    if (maxmsg_ < asked)
      warn_once("mq_msg_max",
                fmt::format("posix_mq: queue_depth {} capped to /proc/sys/fs/mqueue/msg_max = {} "
                            "(raise it with sysctl fs.mqueue.msg_max)",
                            asked, maxmsg_));
    // Every queue of the run counts against RLIMIT_MSGQUEUE (bytes per user).
    rlimit rl{};
    getrlimit(RLIMIT_MSGQUEUE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY) {
      const uint64_t per_queue = uint64_t(rl.rlim_cur) / uint64_t(nqueues);
      const int64_t fits = int64_t(per_queue / (uint64_t(msgsize_) + kPerMessageOverhead));
      if (fits < 1)
        throw Skip(
            fmt::format("RLIMIT_MSGQUEUE ({} bytes) cannot hold {} queues of {}-byte messages; "
                        "use fewer pairs or smaller messages",
                        rl.rlim_cur, nqueues, msgsize_));
      if (fits < maxmsg_) {
        warn_once("mq_rlimit",
                  fmt::format("posix_mq: queue depth capped from {} to {} so that {} queue(s) fit "
                              "in RLIMIT_MSGQUEUE = {} bytes (ulimit -q)",
                              maxmsg_, fits, nqueues, rl.rlim_cur));
        maxmsg_ = fits;
      }
    }
    const bool nb = p.flag("nonblocking");
    try {
      for (int i = 0; i < nqueues; ++i) create(nb);
    } catch (...) {
      destroy();
      throw;
    }
    nb_ = nb;
    roundtrip_ = roundtrip;
  }
  ~MqTransport() override { destroy(); }

  std::unique_ptr<Endpoint> open(Role role, int index) override {
    // Round-trip pair i: queue 2i carries requests, 2i+1 replies. Throughput: one shared queue.
    if (!roundtrip_) return std::make_unique<MqEndpoint>(queues_[0].fd, queues_[0].fd, nb_);
    auto& req = queues_[size_t(2 * index)];
    auto& rep = queues_[size_t(2 * index + 1)];
    if (role == Role::Producer) return std::make_unique<MqEndpoint>(req.fd, rep.fd, nb_);
    return std::make_unique<MqEndpoint>(rep.fd, req.fd, nb_);
  }
  std::string object_name() const override { return queues_.empty() ? "-" : queues_[0].name; }
  void describe(nlohmann::json& extra) const override {
    extra["mq_maxmsg"] = maxmsg_;
    extra["mq_msgsize"] = msgsize_;
    extra["queue_depth_used"] = maxmsg_;
    extra["queues"] = queues_.size();
  }

 private:
  struct Queue {
    std::string name;
    mqd_t fd;
  };
  void create(bool nb) {
    // The reference unlinks the name before creating; a fresh name of this run needs no unlink,
    // and an object of that name that is not ours must stay where it is.
    Queue q{ipc::unique_name("mq"), mqd_t(-1)};
    mq_attr attr{};
    attr.mq_maxmsg = maxmsg_;
    attr.mq_msgsize = msgsize_;
    try {
      q.fd = ipc::create_mq(q.name, nb ? O_NONBLOCK : 0, &attr);
    } catch (const std::system_error& e) {
      throw std::system_error(
          e.code(),
          fmt::format("mq_open {} (maxmsg {}, msgsize {}){}", q.name, maxmsg_, msgsize_,
                      e.code().value() == EMFILE ? ": RLIMIT_MSGQUEUE exhausted, see ulimit -q" : ""));
    }
    queues_.push_back(q);
  }
  void destroy() {
    for (auto& q : queues_) {
      mq_close(q.fd);
      ipc::remove(ipc::Kind::PosixMq, q.name);
    }
    queues_.clear();
  }
  std::vector<Queue> queues_;
  int64_t maxmsg_ = 0, msgsize_ = 0;
  bool nb_ = false, roundtrip_ = false;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "posix_mq",
    .help = "POSIX message queue (mq_open O_EXCL 0600, timed send/receive); reference 002's backend",
    .params = suite_params({nonblocking(),
                            queue_depth("10",
                                        "maxMessages: mq_maxmsg, capped to /proc/sys/fs/mqueue/msg_max "
                                        "and RLIMIT_MSGQUEUE with a warning")}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<MqTransport>(p);
    },
    .check =
        [](const Params& p) {
          const int64_t lim = msgsize_max();
          return check(Caps{.max_size = lim,
                            .size_limit_why = "/proc/sys/fs/mqueue/msgsize_max; raise it with sysctl",
                            .shared_queue = true},
                       p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
