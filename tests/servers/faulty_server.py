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
import selectors
import socket
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "healthy"
if MODE not in ("healthy", "close", "cross", "hang"):
    sys.exit(f"faulty_server.py: unknown fault {MODE!r}; use healthy, close, cross or hang")

sel = selectors.DefaultSelector()
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(128)
lsock.setblocking(False)
sel.register(lsock, selectors.EVENT_READ)
print(lsock.getsockname()[1], flush=True)
conns = {}  # connection -> [index, lines seen, unfinished line]
accepted = 0


def drop(conn):
    sel.unregister(conn)
    del conns[conn]
    conn.close()


while True:
    for key, _ in sel.select():
        if key.fileobj is lsock:
            try:
                conn, _ = lsock.accept()
            except BlockingIOError:
                continue
            conn.setblocking(True)
            sel.register(conn, selectors.EVENT_READ)
            conns[conn] = [accepted, 0, b""]
            accepted += 1
            continue
        conn = key.fileobj
        st = conns[conn]
        try:
            data = conn.recv(4096)
        except ConnectionError:
            data = b""
        if not data:
            drop(conn)
            continue
        *lines, st[2] = (st[2] + data).split(b"\n")
        reply, done = b"", False
        for line in lines:
            st[1] += 1
            if line == b"exit":
                done = True
                break
            fault = st[1] >= 3 if MODE == "hang" else st[1] == 3
            if MODE == "close" and fault and st[0] == 0:
                done = True
                break
            if MODE == "hang" and fault and st[0] == 0:
                continue
            if MODE == "cross" and fault and st[0] == 1:
                continue
            reply += b"pong\npong\n" if MODE == "cross" and fault and st[0] == 0 else b"pong\n"
        if reply:
            try:
                conn.sendall(reply)
            except ConnectionError:
                done = True
        if done:
            drop(conn)
