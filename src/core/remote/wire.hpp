#pragma once
// What the two ends of --remote share (core/remote/local.cpp here, core/remote/side.cpp on the
// other host): the mechanisms that cross, the JSON lines of their control channel, each host's
// identity and clock. For those two files only.
#include <sys/socket.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/cpu.hpp"

namespace ipclab::remote::detail {

/// The socket type of a crossing mechanism's data path, or this: its server runs on the remote host.
inline constexpr int kServer = -1;
/// The mechanisms whose two sides can be on two hosts, with the socket type of their data path.
const std::map<std::string, int>& crossing();

/// CLOCK_REALTIME now (ns): the clock probes compare the two hosts' wall clocks.
uint64_t realtime_ns();
/// This host and build (version, build type and flags), which both ends compare first.
nlohmann::json identity();
std::string identity_text(const nlohmann::json& h);

/// One word for the remote shell, which runs ssh's command line: quoted.
std::string shell_quote(const std::string& s);
/// Splits "-p 2222" into "-p", "2222" (an --ssh-option as it would be typed after ssh).
std::vector<std::string> words(const std::string& s);

/// One JSON line, whole.
void write_line(int fd, const nlohmann::json& j);

/// The control channel's heartbeat: each end sends a beat line every `interval_s` while nothing
/// else need be said, and takes the other end for gone once it has heard nothing from it — no
/// line, no beat — for `deadline_s` (5 intervals). A remote side that has not ended `grace_s` (2
/// intervals) after that is ended as by SIGTERM. Default 2 s, so 10 s and 14 s; docs/remote.md.
struct Heartbeat {
  double interval_s = 2;
  double deadline_s() const { return 5 * interval_s; }
  double grace_s() const { return 2 * interval_s; }
  /// Every `interval_s` seconds (IPCLAB_REMOTE_HEARTBEAT_S, or the default); the range a value may
  /// take, for both ends' checks.
  static constexpr double kMin = 0.05, kMax = 60;
  nlohmann::json to_json() const;
};

/// One end of the control channel: JSON lines read from `in`, written to `out` (the ssh session's
/// pipes here, stdin and stdout there). A thread of its own reads the input as it comes, so that
/// the other end is heard whatever this one's thread is doing (a measured window, a server's
/// start): it queues each line but the beats, sends this end's beats, and ends the channel when
/// the input ends, when a line runs past kMaxLine, or when the other end is silent past the
/// heartbeat's deadline. Writes are whole lines, one writer at a time.
class Channel {
 public:
  enum class End { Open, Eof, Silent, Overlong };
  static constexpr size_t kMaxLine = 64u << 20;  // a result with its histograms is well under 1 MiB

  /// What the channel's thread answers itself, as it reads a line (nullopt: the line is queued):
  /// the clock probe, so that no hand-over between threads sits inside its round trip.
  using Answer = std::function<std::optional<nlohmann::json>(const std::string& line)>;

  /// Starts reading `in`; beats and watches nothing until beat().
  Channel(int in, int out, Answer answer = {});
  ~Channel();  // stops its thread; closes neither descriptor
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// From now on: a beat every `h.interval_s`, and the channel ends once nothing was heard for
  /// `h.deadline_s`; `on_silent` (optional) runs on the channel's thread when it does.
  void beat(const Heartbeat& h, std::function<void()> on_silent = {});
  /// Sends one line; std::system_error when it cannot be written.
  void send(const nlohmann::json& j);
  /// The next line (beats left out), waiting at most until `deadline` (now_ns): false when none
  /// came by then, or the channel ended with none left (end() says which). `arrived_ns`: when the
  /// channel's thread read it (now_ns), for the clock probe's round trip.
  bool next(std::string& line, uint64_t deadline, uint64_t* arrived_ns = nullptr);
  End end() const;
  /// Why it ended, for a message: "" while open.
  std::string end_text() const;
  /// Bytes read so far, beats included (the hello's check of what a login shell printed first).
  uint64_t bytes_in() const;

 private:
  void pump();
  void finish(End why);  // under m_
  int in_, out_;
  Answer answer_;
  int wake_[2] = {-1, -1};  // the destructor's word to the thread
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, uint64_t>> lines_;  // and when each was read
  End end_ = End::Open;
  uint64_t bytes_in_ = 0, heard_ns_ = 0;
  Heartbeat beat_;
  bool beating_ = false;
  std::function<void()> on_silent_;
  std::mutex write_m_;
  std::thread thread_;
};

/// A reply from the other end that fails its check, naming the field and what it should be.
struct BadReply : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// `j`'s member `key` as a whole number within [lo, hi] (`where` names `j` in the message: e.g.
/// "result.cpu"); `fallback` when it is absent (none: it must be there). BadReply otherwise: a
/// real, a string, a value out of range — never a double turned into an integer unchecked.
int64_t whole(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi,
              std::optional<int64_t> fallback, const std::string& where);
/// The same for the full unsigned range (sums of sequence numbers, histogram values and counts).
uint64_t whole_u64(const nlohmann::json& j, const char* key, uint64_t hi, std::optional<uint64_t> fallback,
                   const std::string& where);
/// `j`'s member `key` as a finite number within [lo, hi]; `fallback` when absent; BadReply otherwise.
double real(const nlohmann::json& j, const char* key, double lo, double hi, std::optional<double> fallback,
            const std::string& where);
/// `j`'s member `key` as an array of at most `max_n` whole numbers each at most `hi` (empty when
/// absent); BadReply otherwise.
std::vector<uint64_t> wholes(const nlohmann::json& j, const char* key, size_t max_n, uint64_t hi,
                             const std::string& where);
/// `j`'s member `key` as a string of at most `max` bytes; `fallback` when absent; BadReply otherwise.
std::string text(const nlohmann::json& j, const char* key, size_t max, std::optional<std::string> fallback,
                 const std::string& where);
/// `j`'s member `key`, which must be an object (an empty one when absent); BadReply otherwise.
const nlohmann::json& object(const nlohmann::json& j, const char* key, const std::string& where);

/// This end of the data path to `address`:`port`: the interface a datagram socket connected there
/// leaves by (a UDP connect sends nothing); {} when there is none.
nlohmann::json network_path_to(const std::string& address, int port);
/// The interface of this host's `address`, where a data path ends; {} when it has none.
nlohmann::json network_path_at(const std::string& address);

/// CPU usage as the control channel carries it, and back: `cpu_of` checks each figure as whole()
/// and real() do — seconds from 0 to `max_s`, context switches from 0 to INT64_MAX.
nlohmann::json cpu_json(const CpuUsage& c);
CpuUsage cpu_of(const nlohmann::json& j, double max_s, const std::string& where);

}  // namespace ipclab::remote::detail
