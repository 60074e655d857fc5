#pragma once
// The epoll reactor the epoll models share (epoll_lt, epoll_et, epoll_reuseport).

namespace ipclab::servers {

/// One epoll reactor over the listener `lfd` and its connections, on the calling thread, level-
/// or edge-triggered; serves the protocol forever.
void epoll_reactor(int lfd, bool edge);

}  // namespace ipclab::servers
