#pragma once
// Whole-message reads and writes on file descriptors, shared by every fd-based mechanism.
// EINTR is retried unless the session is aborting (then Aborted is thrown); EOF and errors throw.
#include <cstddef>
#include <string>

namespace ipclab {

/// Writes all `len` bytes (stream semantics: loops over short writes).
void write_all(int fd, const std::byte* buf, size_t len);
/// Reads exactly `len` bytes (stream semantics); a peer that closed throws.
void read_exact(int fd, std::byte* buf, size_t len);
/// A file's text from its start (pread: the offset is left alone), up to its end or, when `stop`
/// is given, at least up to the first `stop` character.
std::string read_from_start(int fd, char stop = 0);
/// Throws std::system_error for errno unless it is EINTR outside an abort (then returns).
void check_errno(const char* what);
/// The retry rule of a blocking call that failed: true to retry it on EINTR and, when
/// `nonblocking`, on EAGAIN (after a pause); Aborted once the run aborts; std::system_error for
/// any other errno.
bool retry_errno(const char* what, bool nonblocking);

}  // namespace ipclab
