// messaging/fifo: named pipes (mkfifo) in the run's directory, one per direction. Like a pipe,
// but the kernel object has a name in the file system, so unrelated processes could open it.
#include <fcntl.h>
#include <sys/stat.h>

#include <tuple>

#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

// Creates a FIFO and opens both ends: the read end first with O_NONBLOCK (an open for reading
// would otherwise wait for a writer), then the write end; then the read end's mode is set.
std::pair<int, int> make_fifo(const std::string& path, bool nonblocking) {
  ipc::create_fifo(path);
  int r = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (r < 0) {
    ipc::remove(ipc::Kind::Path, path);
    transport::check_rc(r, "open fifo for reading");
  }
  int w = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0));
  if (w < 0) {
    ::close(r);
    ipc::remove(ipc::Kind::Path, path);
    transport::check_rc(w, "open fifo for writing");
  }
  if (!nonblocking) ::fcntl(r, F_SETFL, ::fcntl(r, F_GETFL) & ~O_NONBLOCK);
  return {r, w};
}

const Caps kFifoCaps{.topology_why =
                         "a FIFO is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "fifo",
    .help = "named pipe (mkfifo, 0600, in the run directory), one per direction",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      const bool nb = p.flag("nonblocking");
      const bool roundtrip = std_params::is_roundtrip(p);
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{
              .framing = transport::Framing::Stream, .socket = false, .nonblocking = nb},
          [nb, roundtrip] {
            const std::string dir = ipc::run_dir();
            transport::FdChannel c;
            const std::string first = dir + ipc::unique_name("fifo");
            std::tie(c.cons_r, c.prod_w) = make_fifo(first, nb);
            c.paths.push_back(first);
            if (roundtrip) {
              try {
                const std::string second = dir + ipc::unique_name("fifo");
                std::tie(c.prod_r, c.cons_w) = make_fifo(second, nb);
                c.paths.push_back(second);
              } catch (...) {
                ::close(c.cons_r);
                ::close(c.prod_w);
                ipc::remove(ipc::Kind::Path, c.paths.front());
                throw;
              }
            }
            return c;
          });
    },
    .check = [](const Params& p) { return check(kFifoCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
