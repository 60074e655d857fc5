// Package echo is the Go echo server of ipclab's echo suite (echo/go, docs/echo.md): a goroutine
// per connection doing blocking Read then Write on a net.Conn, which the Go runtime turns into
// non-blocking sockets under its epoll netpoller — the idiomatic Go server.
package echo

import (
	"errors"
	"net"
)

// BufSize is what one Read takes at most: 64 KiB, like the epoll server's reads (and the
// suite's largest message), so a message of any size is echoed with as few calls as there.
const BufSize = 64 << 10

// Serve accepts connections on ln and echoes each on its own goroutine until ln is closed.
func Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go echo(c)
	}
}

// echo writes back every byte read, in order, until the client closes the connection. Write
// returns only when all n bytes are written (it waits in the netpoller when the socket is full).
// io.Copy is not used: for a TCP→TCP copy it splices through a pipe, not what the other servers do.
func echo(c net.Conn) {
	defer c.Close()
	buf := make([]byte, BufSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
