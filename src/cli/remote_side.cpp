// `ipclab remote-side`, hidden: the remote end of `ipclab run --remote`, started there by ssh
// (core/remote/remote.hpp).
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "core/ownership/cleanup.hpp"
#include "core/ownership/crash.hpp"
#include "core/ownership/journal.hpp"
#include "core/ownership/sweep.hpp"
#include "core/remote/remote.hpp"

namespace ipclab::cli {
namespace {

int cmd_remote_side() {
  // Its run folder, swept at its end like a local one (and by a later run if it dies); what its
  // sweep removes goes to the local side in its hello, not on its stderr, which is ssh's.
  ipc::begin_run();
  ipc::install_signal_cleanup();
  crash::install();
  return remote::serve(ipc::sweep_leftovers());
}

Runner declare_remote_side(CLI::App& sub) {
  sub.group("");  // not in `ipclab --help`
  return [](const std::string&) { return cmd_remote_side(); };
}

}  // namespace

IPCLAB_COMMAND(Command{"remote-side", "The remote end of `ipclab run --remote` (started by it)",
                       declare_remote_side});

}  // namespace ipclab::cli
