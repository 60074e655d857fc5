#pragma once
#include <stdexcept>
#include <string>

namespace ipclab {

/// Bad input from the user: one line that names the fix; the CLI exits with 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A feature the kernel or device lacks: the benchmark is reported as skipped with this reason.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ipclab
