#pragma once
// The servers suite's protocol (reference 001): a client sends nine greetings, each answered
// `pong\n`, then `exit`, after which the server closes the connection. The server side's parser and
// the two ways the models serve a connection with it.
#include <cstddef>
#include <string>
#include <vector>

namespace ipclab::servers {

/// The client's lines in order; every one but the last ("exit") is answered kPong.
extern const std::vector<std::string> kMessages;
inline constexpr char kPong[] = "pong\n";
inline constexpr size_t kPongLen = 5;

/// Per-connection line parser of a server: feed received bytes, get the reply bytes to send.
class ProtocolConn {
 public:
  enum class State { Open, Exit, Bad };
  /// Appends the replies for every complete line in data[0..n) to `out`; returns the state:
  /// Exit after an `exit` line (close the connection), Bad on an unknown line or a too-long one.
  State feed(const char* data, size_t n, std::string& out);

 private:
  char line_[32];
  size_t len_ = 0;
};

/// Serves one connection with blocking reads until `exit`, EOF or an error; closes it.
void serve_blocking(int fd);
/// Reads a non-blocking connection (until EAGAIN when `drain`, else once) and answers;
/// false when the caller must close it.
bool serve_ready(int fd, ProtocolConn& pc, bool drain);

}  // namespace ipclab::servers
