#pragma once
// Where ipclab finds what it runs and reads besides its own code: the Go and Rust peers the build
// made, and the few files of the source tree it reads at run time (the example servers in Python,
// the report package). They are found from the running ipclab, never from absolute paths compiled
// in, so that a moved build tree and a bundle unpacked anywhere (`make bundle`, scripts/bundle.sh)
// each find their own.
//
// From a build tree: ipclab is <build>/ipclab (the test programs are built beside it), the peers
// lie where the build put them relative to it (the IPCLAB_GO_* and IPCLAB_RUST_PEER_DIR definitions
// of peers/*/CMakeLists.txt are relative paths), and the source tree's files are read in place
// (IPCLAB_SOURCE_DIR).
//
// From a bundle: <bundle>/bin/ipclab is a shell launcher that starts the bundled dynamic loader on
// <bundle>/libexec/ipclab with `--library-path <bundle>/lib`. /proc/self/exe names the loader in
// such a process, so the launcher says where the bundle is in the environment variable
// IPCLAB_BUNDLE; the peers lie under <bundle>/libexec as they do beside a build tree's ipclab, and
// the source tree's files under <bundle>/share. main() takes the variable out of the environment
// first thing (take_launcher_variable), so that nothing ipclab starts inherits it; the libraries'
// path reaches the loader alone (no LD_LIBRARY_PATH), so sh, python3, fio, daemons and peers run
// with the host's own libraries.
#include <string>
#include <string_view>

namespace ipclab {

/// Removes IPCLAB_BUNDLE from the environment, having read it (the first call of any function here
/// reads it, static constructors included). main() calls it before anything else, while the
/// process has one thread. Throws UsageError when the variable names no unpacked bundle.
void take_launcher_variable();

/// Started from a bundle's launcher (true) or from a build tree.
bool started_from_bundle();

/// "bundle" or "build tree", for the environment block.
const char* started_from();

/// The file the build put at `relative` from ipclab's folder (a peer): absolute.
std::string beside_ipclab(std::string_view relative);

/// The file of the source tree at `relative` (e.g. "tests/echo/echo_server.py") as this ipclab
/// reads it: in the source tree for a build tree, in <bundle>/share for a bundle. Absolute.
std::string source_file(std::string_view relative);

/// The user's state folder, for what ipclab keeps from one run to the next (the cost model,
/// core/plan/estimate.hpp): $XDG_STATE_HOME/ipclab, or $HOME/.local/state/ipclab when XDG_STATE_HOME
/// is unset or not an absolute path (as the XDG base directory specification says); "" when
/// neither names one. Names it only: whoever writes there creates it (private_state_dir).
/// Distinct from the run's scratch folder under TMPDIR (core/ownership/journal.hpp), which a run removes.
std::string user_state_dir();

/// Creates user_state_dir() when missing (each missing folder on the way 0700, whatever the umask)
/// and returns it; "" with `why` saying what is wrong when there is none to name, or it is not a
/// folder of this user's closed to others (a folder someone else prepared is never used).
std::string private_state_dir(std::string& why);

}  // namespace ipclab
