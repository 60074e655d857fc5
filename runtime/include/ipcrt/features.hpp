// What the running kernel supports, probed once per process so callers can skip what is missing.
#pragma once

#include <string>

namespace ipcrt {

/// Kernel io_uring capabilities found by trying setup flags and reading io_uring_get_probe.
struct features {
  bool io_uring = false;       // io_uring_setup works at all
  bool single_issuer = false;  // IORING_SETUP_SINGLE_ISSUER
  bool defer_taskrun = false;  // IORING_SETUP_DEFER_TASKRUN
  bool coop_taskrun = false;   // IORING_SETUP_COOP_TASKRUN
  bool sqpoll = false;         // IORING_SETUP_SQPOLL (may need privileges on old kernels)
  bool msg_ring = false;       // IORING_OP_MSG_RING
  bool link_timeout = false;   // IORING_OP_LINK_TIMEOUT
  bool async_cancel = false;   // IORING_OP_ASYNC_CANCEL
  bool multishot_accept = false;
  bool recv_multishot = false;
  bool buf_ring = false;  // IORING_REGISTER_PBUF_RING
  bool registered_files = false;
  bool fixed_buffers = false;

  /// Probes on first call (creates and tears down small rings); later calls return the cached result.
  static const features& get();
  /// One line per feature, for logs and skip messages.
  std::string describe() const;
};

}  // namespace ipcrt
