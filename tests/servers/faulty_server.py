#!/usr/bin/env python3
"""A deliberately faulty server of the servers suite's protocol for tests/servers/test_peer.py, under
servers/peer's contract (docs/servers.md). Its one argument names the fault, acted out on the
third request line of the first connection accepted (connection 0); every other line is served:
  healthy  no fault
  close    closes connection 0 instead of answering its third line
  cross    answers connection 0's third line twice (`pong\\npong\\n`: a reply owed to another
           connection) and never answers the third line of connection 1, the one robbed
  hang     never answers connection 0's third line, nor anything after it (the connection stays open)
"""
import sys

from servers_server import serve  # the script's folder is on sys.path

MODE = sys.argv[1] if len(sys.argv) > 1 else "healthy"
if MODE not in ("healthy", "close", "cross", "hang"):
    sys.exit(f"faulty_server.py: unknown fault {MODE!r}; use healthy, close, cross or hang")


def reply(index, n):
    fault = n >= 3 if MODE == "hang" else n == 3
    if MODE == "close" and fault and index == 0:
        return None
    if (MODE == "hang" and fault and index == 0) or (MODE == "cross" and fault and index == 1):
        return b""
    if MODE == "cross" and fault and index == 0:
        return b"pong\npong\n"
    return b"pong\n"


serve(reply, backlog=128)
