// The protocol's server side (see protocol.hpp).
#include "mechanisms/servers/protocol.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace ipclab::servers {

const std::vector<std::string> kMessages = {"hi",      "hello",           "guten tag", "ping",    "wake up",
                                            "how r u", "have a nice day", "bye-bye",   "see you", "exit"};

ProtocolConn::State ProtocolConn::feed(const char* data, size_t n, std::string& out) {
  for (size_t i = 0; i < n; ++i) {
    char c = data[i];
    if (c != '\n') {
      if (len_ == sizeof line_) return State::Bad;
      line_[len_++] = c;
      continue;
    }
    std::string_view line(line_, len_);
    len_ = 0;
    if (line == "exit") return State::Exit;
    bool known = false;
    for (size_t k = 0; k + 1 < kMessages.size(); ++k) known |= line == kMessages[k];
    if (!known) return State::Bad;
    out.append(kPong, kPongLen);
  }
  return State::Open;
}

namespace {
bool send_all(int fd, const std::string& out) {
  size_t off = 0;
  while (off < out.size()) {
    ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;  // a few bytes never fill a socket buffer: the peer is gone
    off += size_t(w);
  }
  return true;
}
}  // namespace

void serve_blocking(int fd) {
  ProtocolConn pc;
  std::string out;
  char buf[512];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.clear();
    auto st = pc.feed(buf, size_t(r), out);
    if (!out.empty() && !send_all(fd, out)) break;
    if (st != ProtocolConn::State::Open) break;
  }
  ::close(fd);
}

bool serve_ready(int fd, ProtocolConn& pc, bool drain) {
  std::string out;
  char buf[512];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0) return errno == EAGAIN || errno == EINTR;
    if (r == 0) return false;
    out.clear();
    auto st = pc.feed(buf, size_t(r), out);
    if (!out.empty() && !send_all(fd, out)) return false;
    if (st != ProtocolConn::State::Open) return false;
    if (!drain) return true;
  }
}

}  // namespace ipclab::servers
