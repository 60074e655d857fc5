#include "core/home.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.hpp"

namespace ipclab {

namespace {

constexpr const char* kBundleVariable = "IPCLAB_BUNDLE";  // set by a bundle's bin/ipclab

struct Home {
  std::string bundle;   // the unpacked bundle's folder; empty for a build tree
  std::string exe_dir;  // the folder of the ipclab executable
  std::string error;    // what is wrong with IPCLAB_BUNDLE, for take_launcher_variable
};

// Read once, by the first caller: static constructors may ask (a parameter's default path) before
// main() runs, and main() removes the variable.
const Home& home() {
  static const Home h = [] {
    Home h;
    if (const char* b = std::getenv(kBundleVariable); b && *b) {
      h.bundle = b;
      h.exe_dir = h.bundle + "/libexec";
      if (h.bundle.front() != '/' || access((h.exe_dir + "/ipclab").c_str(), X_OK) != 0)
        h.error = fmt::format(
            "{}={} is not the folder of an unpacked bundle (no libexec/ipclab there); start a bundle's "
            "ipclab through its bin/ipclab, or unset {}",
            kBundleVariable, brief(h.bundle), kBundleVariable);
    } else {
      std::error_code ec;
      h.exe_dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
    }
    return h;
  }();
  return h;
}

}  // namespace

void take_launcher_variable() {
  const Home& h = home();
  unsetenv(kBundleVariable);
  if (!h.error.empty()) throw UsageError(h.error);
}

bool started_from_bundle() { return !home().bundle.empty(); }

const char* started_from() { return started_from_bundle() ? "bundle" : "build tree"; }

std::string beside_ipclab(std::string_view relative) {
  return fmt::format("{}/{}", home().exe_dir, relative);
}

std::string source_file(std::string_view relative) {
  if (started_from_bundle()) return fmt::format("{}/share/{}", home().bundle, relative);
  return fmt::format("{}/{}", IPCLAB_SOURCE_DIR, relative);
}

}  // namespace ipclab
