// libs/iceoryx: Eclipse iceoryx 2.0 (Debian's libiceoryx-posh) publish/subscribe with zero-copy
// loans. The sender loans a chunk of RouDi's shared memory, the harness writes its message there
// (send_buffer), and publishing hands the chunk's offset to the receiver, which checks the message
// where it lies (recv_in_place) and releases the chunk at its next receive: nothing is copied.
// A round trip's echo is the one copy: a received chunk cannot be published again, so the server
// loans a chunk for the echo and copies into it what the client's check reads of it — every byte
// with verify=full, the sampled words with verify=sample (msg::copy) — where iceoryx's own
// iceperf follower publishes a fresh chunk holding only its small header.
// Two topics per transport: requests (sender to receiver) and replies (round trips' echoes, and the
// receiver's acknowledgement of the stop marker, which the sender waits for — at most 5 s — before
// it stops offering). Lossless: the publisher waits for a full subscriber queue
// (WAIT_FOR_CONSUMER / BLOCK_PRODUCER). A receiver waits in a WaitSet (iceoryx's futex-backed
// semaphore) or spins (-p wait), in either case 100 ms at most before it looks at the run's abort.
//
// RouDi, iceoryx's broker, is the harness's: started by the first iceoryx benchmark of an ipclab
// process with a configuration of its own (written in the run's folder) and stopped when the run
// ends (ipc::at_end). Its CPU over each window is charged to the record as role "roudi", apart
// from the two sides'. It lives as long as the run rather than one benchmark because iceoryx's
// runtime — a process's registration with RouDi — cannot be made twice in one process (a second
// one, with a new RouDi, crashed here).
//
// iceoryx 2.0 uses fixed names, the same for the whole machine: /tmp/roudi, /tmp/roudi.lock,
// /tmp/iox-unique-roudi.lock, the shared memory /iceoryx_mgmt and one named after the user's group;
// RouDi removes stale ones as it starts. They are used only under the machine-wide lock "iceoryx"
// (ipc::lock_shared), held from before the check that none of them exist until they are removed
// again, and kept by RouDi itself (its inherited descriptor): two runs never race for them, in any
// PID namespace, and a RouDi that outlived its run keeps them locked. A run waits for the lock a
// bounded time, then skips with the holder's name. Under the lock, ipclab starts its RouDi only
// where none of the names exist (another RouDi's are not ours to remove): otherwise the benchmark
// is skipped with the names. RouDi removes them itself when stopped; the run removes whatever a
// killed RouDi left; a run killed outright (its RouDi dies with it, core/peers/daemon.hpp) leaves them
// to the next run's sweep, which removes them once it holds the lock.
//
// The runtime: RouDi's own factory makes one per process for ever; ipclab installs its own
// factory (PoshRuntime's protected interface, as iceoryx's tests do) so that a runtime can be
// ended — deregistered and its socket /tmp/<name> removed — before RouDi stops, which would
// otherwise send SIGTERM to every process still registered. Threads share one runtime, made in
// the ipclab process; each forked side makes and ends its own. As with nng, a forked side cannot
// make one once the parent has (it inherits the parent's mappings): mode=processes after
// mode=threads in one run is skipped with the reason.
#include <grp.h>
#include <immintrin.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/base/error.hpp"
#include "core/load/message.hpp"
#include "core/machine/env.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/peers/daemon.hpp"
#include "iceoryx_hoofs/log/logmanager.hpp"
#include "iceoryx_posh/internal/runtime/posh_runtime_impl.hpp"
#include "iceoryx_posh/popo/untyped_publisher.hpp"
#include "iceoryx_posh/popo/untyped_subscriber.hpp"
#include "iceoryx_posh/popo/wait_set.hpp"
#include "iceoryx_versions.hpp"
#include "mechanisms/libs/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {
namespace {

constexpr const char* kRoudi = "/usr/bin/iox-roudi";
constexpr const char* kLock = "iceoryx";  // the machine-wide lock of iceoryx's fixed names
constexpr double kLockWait_s = 10;        // how long a run waits for another run's RouDi to end

std::string iceoryx_version() {
  return fmt::format("{}.{}.{}", ICEORYX_VERSION_MAJOR, ICEORYX_VERSION_MINOR, ICEORYX_VERSION_PATCH);
}

// RouDi's memory pools: chunk sizes (the payload plus room for iceoryx's chunk header) and counts,
// enough for two full subscriber queues of each size and what the sides hold; under 150 MiB of
// /dev/shm in all, up to the suite's largest message (1 MiB).
struct Pool {
  uint64_t payload, count;
};
constexpr Pool kPools[] = {{256, 528},   {1024, 528},   {4096, 528},  {16384, 528},
                           {65536, 528}, {262144, 136}, {1 << 20, 40}};
constexpr uint64_t kChunkHeaderRoom = 128;
constexpr uint64_t kMaxQueue = 256;  // iceoryx 2.0's largest subscriber queue

// The subscriber queue for messages of `size`: two such queues and a few held chunks fit its pool.
uint64_t queue_capacity(uint64_t size) {
  for (const Pool& p : kPools)
    if (size + 1 <= p.payload) return std::min(kMaxQueue, p.count / 2 - 8);
  return 1;
}

std::string roudi_config() {
  std::string toml = "[general]\nversion = 1\n\n[[segment]]\n";
  for (const Pool& p : kPools)
    toml +=
        fmt::format("\n[[segment.mempool]]\nsize = {}\ncount = {}\n", p.payload + kChunkHeaderRoom, p.count);
  return toml;
}

// The names iceoryx 2.0 gives whatever RouDi runs: files, then POSIX shared memory.
std::vector<std::string> fixed_files() {
  return {"/tmp/roudi", "/tmp/roudi.lock", "/tmp/iox-unique-roudi.lock"};
}
std::vector<std::string> fixed_shm() {
  const group* g = getgrgid(getegid());
  std::vector<std::string> v = {"/iceoryx_mgmt"};
  if (g && g->gr_name) v.push_back(std::string("/") + g->gr_name);
  return v;
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

// A runtime this process can end (see the file's comment).
class Runtime final : public iox::runtime::PoshRuntimeImpl {
 public:
  explicit Runtime(const iox::RuntimeName_t& name)
      : PoshRuntimeImpl(iox::cxx::make_optional<const iox::RuntimeName_t*>(&name)) {}
};

std::atomic<Runtime*> g_runtime{nullptr};  // this process's runtime, if any

// Installs the factory that hands out g_runtime: what Publisher and Subscriber construct with.
struct Factory : iox::runtime::PoshRuntime {
  static iox::runtime::PoshRuntime& get(iox::cxx::optional<const iox::RuntimeName_t*>) {
    Runtime* r = g_runtime.load();
    if (!r) {  // a port made with no runtime: a bug of ours, not a state to run on
      fmt::print(stderr, "ipclab: iceoryx: a port was made before this process's runtime\n");
      std::abort();
    }
    return *r;
  }
  static void install() {
    static const bool done = [] {
      setRuntimeFactory(&Factory::get);
      return true;
    }();
    (void)done;
  }
};

// The runtime's socket and lock, /tmp/<name> and /tmp/<name>.lock, journaled before it makes
// them: a side killed before it ends its runtime leaves them to the run (the name carries the
// run's tag, so a later sweep may remove them too).
std::string new_runtime_name(const char* who) {
  static std::atomic<uint64_t> n{0};
  const std::string name = fmt::format("iox.ipclab.{}.{}{}", ipc::run_id(), who, ++n);
  ipc::track_file("/tmp/" + name);
  ipc::track_file("/tmp/" + name + ".lock");
  return name;
}

void make_runtime(const std::string& name) {
  Factory::install();
  g_runtime.store(new Runtime(iox::RuntimeName_t(iox::cxx::TruncateToCapacity, name.c_str())));
}

void end_runtime() {
  delete g_runtime.exchange(nullptr);  // deregisters from RouDi and removes its socket
}

// The RouDi of this ipclab process, started on first use and stopped when the run ends.
class Host {
 public:
  static Host& get() {
    static Host* h = new Host;  // never destroyed: the run's end (ipc::at_end) stops its RouDi
    return *h;
  }

  /// Starts RouDi if it is not running yet; Skip when iceoryx's fixed names exist. Throws when
  /// this run's RouDi has died (its runtimes cannot be made again).
  void ensure_roudi() {
    if (!died_.empty()) throw std::runtime_error("iceoryx's RouDi died earlier in this run (" + died_ + ")");
    if (roudi_) {
      if (roudi_->process().alive()) return;
      died_ = "roudi " + roudi_->process().death();
      throw std::runtime_error("iceoryx's RouDi " + died_);
    }
    // Held from here until the names are gone again (stop, release_names), and by RouDi.
    lock_fd_ = ipc::lock_shared(kLock, kLockWait_s);
    std::string present;
    for (const auto& f : fixed_files())
      if (exists(f)) present += (present.empty() ? "" : ", ") + f;
    for (const auto& m : fixed_shm())
      if (exists("/dev/shm" + m)) present += (present.empty() ? "" : ", ") + ("/dev/shm" + m);
    if (!present.empty()) {
      release_names();
      throw Skip(
          fmt::format("iceoryx's fixed names exist ({}): another RouDi runs here, or a dead one left them; "
                      "ipclab starts its own only where none exist",
                      present));
    }
    // iceoryx's own log goes to stderr; warnings and errors only.
    iox::log::LogManager::GetLogManager().SetDefaultLogLevel(iox::log::LogLevel::kWarn,
                                                             iox::log::LogLevelOutput::kHideLogLevel);
    int fd = -1;
    try {
      fd = ipc::create_file(ipc::run_dir(), "roudi.toml", 0600, config_);
    } catch (...) {
      release_names();
      throw;
    }
    const std::string toml = roudi_config();
    const bool written = write(fd, toml.data(), toml.size()) == ssize_t(toml.size());
    close(fd);
    if (!written) {
      release_names();
      throw std::runtime_error("write RouDi's configuration " + config_);
    }
    tracked_ = true;
    for (const auto& f : fixed_files()) ipc::track_file(f);
    for (const auto& m : fixed_shm()) ipc::track_shm(m);
    try {
      roudi_.emplace(Daemon::Options{.name = "roudi",
                                     .argv = {kRoudi, "-c", config_, "-l", "warning"},
                                     .ready_text = "RouDi is ready for clients",
                                     .timeout_s = 20,
                                     .keep_fds = {lock_fd_}});
    } catch (const Skip&) {  // not installed
      release_names();
      throw;
    } catch (const std::exception& e) {  // it ended or hung before it served (its log's last lines)
      release_names();
      throw Skip(fmt::format("iceoryx's RouDi could not start: {}", e.what()));
    }
    ipc::at_end([this] { stop(); });
  }

  /// The runtime the threads of this process share, made on first use.
  void ensure_runtime() {
    if (g_runtime.load()) return;
    make_runtime(new_runtime_name("t"));
    // Ending a runtime uses iceoryx's own statics (its log manager among them), which exit()
    // destroys in the reverse order of their making: a handler registered after the runtime was
    // made runs before any of them goes. The run's end (at_end) usually comes first; then this
    // finds nothing left to do.
    std::atexit([] { Host::get().stop(); });
  }

  Daemon& roudi() { return *roudi_; }

  void stop() {
    if (!roudi_) return;  // never started, or stopped already
    // A runtime ends by telling RouDi: only while RouDi is there to answer.
    if (roudi_->process().alive()) end_runtime();
    roudi_.reset();  // SIGTERM: RouDi removes its names itself
    release_names();
  }

 private:
  // What a RouDi of ours may have left (it was none of them before it started: this run held the
  // lock all along), its configuration, then the lock.
  void release_names() {
    if (lock_fd_ < 0) return;
    if (tracked_) {  // journaled once they were found absent
      for (const auto& f : fixed_files()) ipc::remove(ipc::Kind::File, f);
      for (const auto& m : fixed_shm()) ipc::remove(ipc::Kind::PosixShm, m);
    }
    if (!config_.empty()) ipc::remove(ipc::Kind::File, config_);
    tracked_ = false;
    config_.clear();
    ipc::unlock_shared(kLock);
    lock_fd_ = -1;
  }

  std::optional<Daemon> roudi_;
  std::string config_, died_;
  int lock_fd_ = -1;
  bool tracked_ = false;
};

// What both sides of one transport need to meet: the two topics' service description.
struct Topics {
  char instance[64];  // unique per transport in this run
};

// GCC 12 sees a memcpy of the string's whole capacity in the truncating branch of iceoryx's
// string constructor, which a short literal never takes (the GCC 12 false positives of the
// top-level CMakeLists.txt's family).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
iox::capro::ServiceDescription service(const Topics& t, const char* event) {
  return {iox::capro::IdString_t(iox::cxx::TruncateToCapacity, "ipclab"),
          iox::capro::IdString_t(iox::cxx::TruncateToCapacity, t.instance),
          iox::capro::IdString_t(iox::cxx::TruncateToCapacity, event)};
}
#pragma GCC diagnostic pop

iox::popo::PublisherOptions publisher_options() {
  iox::popo::PublisherOptions o;
  o.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::WAIT_FOR_CONSUMER;
  return o;
}

iox::popo::SubscriberOptions subscriber_options(uint64_t size) {
  iox::popo::SubscriberOptions o;
  o.queueCapacity = queue_capacity(size);
  o.queueFullPolicy = iox::popo::QueueFullPolicy::BLOCK_PRODUCER;
  return o;
}

class IoxEndpoint final : public InPlaceEndpoint {
 public:
  // `runtime_name`: a forked side's own runtime, made here and ended with the endpoint.
  IoxEndpoint(const Topics& t, bool sender, bool spin, bool sampled, size_t size,
              const std::string& runtime_name)
      : own_runtime_(!runtime_name.empty()), spin_(spin), sampled_(sampled) {
    if (own_runtime_) make_runtime(runtime_name);
    pub_.emplace(service(t, sender ? "request" : "reply"), publisher_options());
    sub_.emplace(service(t, sender ? "reply" : "request"), subscriber_options(size));
    if (!spin_) {
      waitset_.emplace();
      if (waitset_->attachState(*sub_, iox::popo::SubscriberState::HAS_DATA).has_error())
        throw std::runtime_error("iceoryx: attach the subscriber to a WaitSet");
    }
    // RouDi connects a publisher to its subscribers in its discovery loop (every 100 ms): a
    // message published before that would reach no one.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!pub_->hasSubscribers()) {
      messaging::poll_abort();
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("iceoryx: the other side did not subscribe within 10 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  ~IoxEndpoint() override {
    release_held();
    loaned_ = nullptr;  // a loan never published goes back with the publisher
    // The sender of the stop marker stops offering only once the receiver has it.
    for (int tries = 0; stop_sent_ && tries < 50; ++tries) {
      const void* ack = take_within_100ms();
      if (ack) {
        sub_->release(ack);
        break;
      }
    }
    waitset_.reset();
    sub_.reset();
    pub_.reset();
    if (own_runtime_) end_runtime();
  }

  std::byte* send_buffer(std::byte*, size_t len) override {
    if (loaned_) return static_cast<std::byte*>(loaned_);
    auto r = pub_->loan(uint32_t(len), alignof(std::max_align_t));
    if (r.has_error())
      throw std::runtime_error(
          fmt::format("iceoryx: no chunk of {} bytes to loan (error {})", len, int(r.get_error())));
    loaned_ = r.value();
    return static_cast<std::byte*>(loaned_);
  }

  void send(const std::byte* data, size_t len) override {
    // A message written elsewhere (an echo of the chunk just received) is copied into a loan, as
    // much of it as the check at the other end reads. Whether it is the stop marker is read
    // before publishing: a published chunk is the receiver's.
    stop_sent_ = stop_sent_ || msg::is_stop(data, len);
    if (data != loaned_) msg::copy(send_buffer(nullptr, len), data, len, sampled_);
    pub_->publish(std::exchange(loaned_, nullptr));
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    release_held();
    const void* chunk = nullptr;
    while (!(chunk = take_within_100ms())) messaging::poll_abort();
    held_ = chunk;
    const auto* header = iox::mepoo::ChunkHeader::fromUserPayload(chunk);
    if (header->userPayloadSize() != len)
      throw std::runtime_error(
          fmt::format("a message of {} bytes, expected {}", header->userPayloadSize(), len));
    auto* body = static_cast<std::byte*>(const_cast<void*>(chunk));
    if (msg::is_stop(body, len)) {  // its sender waits for this before it stops offering
      auto ack = pub_->loan(1);
      if (ack.has_error()) throw std::runtime_error("iceoryx: no chunk to acknowledge the stop marker");
      std::memset(ack.value(), 1, 1);
      pub_->publish(ack.value());
    }
    return body;
  }

 private:
  // The next chunk, or null after about 100 ms without one.
  const void* take_within_100ms() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    for (uint32_t spins = 0;; ++spins) {
      auto r = sub_->take();
      if (!r.has_error()) return r.value();
      if (r.get_error() != iox::popo::ChunkReceiveResult::NO_CHUNK_AVAILABLE)
        throw std::runtime_error("iceoryx: this side holds too many chunks");
      if (!spin_) {
        (void)waitset_->timedWait(iox::units::Duration::fromMilliseconds(100));
        if (std::chrono::steady_clock::now() > until) {
          auto again = sub_->take();
          return again.has_error() ? nullptr : again.value();
        }
        continue;
      }
      _mm_pause();
      if ((spins & 4095) == 4095 && std::chrono::steady_clock::now() > until) return nullptr;
    }
  }

  void release_held() {
    if (held_) sub_->release(std::exchange(held_, nullptr));
  }

  bool own_runtime_, spin_, sampled_;
  bool stop_sent_ = false;
  std::optional<iox::popo::UntypedPublisher> pub_;
  std::optional<iox::popo::UntypedSubscriber> sub_;
  std::optional<iox::popo::WaitSet<>> waitset_;
  void* loaned_ = nullptr;
  const void* held_ = nullptr;
};

ForkRule g_iceoryx_fork_rule("iceoryx", "a forked side cannot register with RouDi after its parent has");

class IoxTransport final : public LibraryTransport {
 public:
  explicit IoxTransport(const Params& p)
      : LibraryTransport(p, "iceoryx", "iceoryx " + iceoryx_version(), "none (shared memory)"),
        processes_(p.str("mode") == "processes"),
        spin_(p.str("wait") == "spin"),
        sampled_(p.str("verify") == "sample"),
        size_(size_t(p.i64("size"))),
        topics_(sizeof(Topics)) {
    g_iceoryx_fork_rule.admit(p);
    set_baseline("shm_spsc", {{"wait", spin_ ? "spin" : "futex"}});
    Host& host = Host::get();
    host.ensure_roudi();
    if (!processes_) {
      host.ensure_runtime();
    } else {
      sender_name_ = new_runtime_name("s");
      receiver_name_ = new_runtime_name("r");
    }
    static std::atomic<uint64_t> n{0};
    auto* t = new (topics_.get()) Topics();
    std::snprintf(t->instance, sizeof t->instance, "%s.%llu", ipc::run_id().c_str(),
                  static_cast<unsigned long long>(++n));
  }

  void attach(Session& s) override { Host::get().roudi().attach(s); }

  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool sender = role == Role::Producer;
    const std::string own = !processes_ ? "" : sender ? sender_name_ : receiver_name_;
    return std::make_unique<IoxEndpoint>(*static_cast<Topics*>(topics_.get()), sender, spin_, sampled_, size_,
                                         own);
  }

 private:
  bool processes_, spin_, sampled_;
  size_t size_;
  messaging::SharedMapping topics_;
  std::string sender_name_, receiver_name_;
};

const LibraryVersion kIceoryxVersion{"iceoryx", iceoryx_version};  // in every result's environment block

IPCLAB_REGISTER(Mechanism{
    .suite = "libs",
    .name = "iceoryx",
    .help = "Eclipse iceoryx: publish/subscribe with zero-copy loans through the harness's own RouDi",
    .params =
        suite_params({}, {{.name = "wait",
                           .type = ParamType::String,
                           .def = "waitset",
                           .choices = {"waitset", "spin"},
                           .help = "how a receiver waits: waitset (iceoryx's WaitSet, a semaphore in shared "
                                   "memory) or spin (polls its queue)",
                           .quick = {"waitset"},
                           .full = {"waitset", "spin"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<IoxTransport>(p);
    },
    .check =
        [](const Params& p) {
          if (p.str("wait") == "spin" && p.str("placement") == "same")
            return std::string(
                "two sides spinning on one CPU wait out each other's time slices; use "
                "wait=waitset or placement=cross");
          return check(p);
        },
});

}  // namespace
}  // namespace ipclab::libs
