// servers/peer: any server executable of the protocol (a reader's own, or a reference's behind a
// wrapper), started as `<server> [server_args]` and held to the contract of docs/servers.md: listen
// on 127.0.0.1 (port 0 = the kernel's choice), print the port as one decimal line on stdout once
// listening, serve the protocol (protocol.hpp), and run until killed. Pinned, watched and stopped
// by the harness as the forked models are (core/peers/server's exec launch).
#include "core/machine/home.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

const std::string& wrapper() {
  static const std::string path = source_file("scripts/serve-on-port.py");
  return path;
}

// `server_args`: the words joined by '+' (parameter values hold no spaces); "none" for none.
// address=argv: the server takes its address as its last two arguments and prints nothing (reference
// 001's); scripts/serve-on-port.py gives it a free port and prints the port for it.
std::vector<std::string> server_argv(const Params& p) {
  std::vector<std::string> argv{p.str("server")};
  if (p.str("address") == "argv") argv.insert(argv.begin(), wrapper());
  const std::string& a = p.str("server_args");
  if (a == "none") return argv;
  for (size_t b = 0;;) {
    const size_t e = a.find('+', b);
    std::string word = a.substr(b, e == std::string::npos ? e : e - b);
    if (!word.empty()) argv.push_back(std::move(word));
    if (e == std::string::npos) return argv;
    b = e + 1;
  }
}

IPCLAB_REGISTER(make_mechanism({
    .name = "peer",
    .help = "an external server executable of the protocol (-p server=/abs/path), see docs/servers.md; "
            "the default is the minimal Python example of the contract",
    // Not held to serving every client: a reader's server may be of any model. Its rejected and
    // lost sessions are counted and reported; a corrupt reply fails the record.
    .event_driven = false,
    .extra_params = {{.name = "server",
                      .type = ParamType::String,
                      .def = source_file("tests/servers/servers_server.py"),
                      .help = "absolute path of the server executable (skipped when missing)",
                      .path = true},
                     {.name = "server_args",
                      .type = ParamType::String,
                      .def = "none",
                      .help = "the server's arguments, joined by '+' (e.g. hang+3); none for none"},
                     {.name = "address",
                      .type = ParamType::String,
                      .def = "stdout",
                      .choices = {"stdout", "argv"},
                      .help = "stdout: the server picks its port and prints it (the contract); argv: it "
                              "takes `127.0.0.1 PORT` as its last arguments and prints nothing "
                              "(reference 001's servers), run through scripts/serve-on-port.py"}},
    .argv = server_argv,
}));

}  // namespace
}  // namespace ipclab::servers
