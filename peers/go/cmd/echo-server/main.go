// echo-server is the Go server of ipclab's echo suite (echo/go), following the peer server
// contract of docs/echo.md: listen on 127.0.0.1 port 0, print the port once listening, echo every
// byte on every connection, run until killed.
//
//	echo-server [--size=BYTES] [--connections=N] [--gomaxprocs=1]
package main

import (
	"fmt"
	"net"
	"os"

	"ipclab/peers/go/contract"
	"ipclab/peers/go/echo"
)

func main() {
	a := contract.NewArgs("echo-server")
	f := a.Flags
	// The suite passes both; the server needs neither (it reads what arrives, up to 64 KiB).
	size := f.Int("size", 1024, "message size in bytes (checked only)")
	f.Int("connections", 16, "client connections (informational)")
	procs := f.Int("gomaxprocs", 1, "GOMAXPROCS (1 = one scheduler thread, like the C++ servers)")
	if err := a.Parse(os.Args[1:]); err != nil {
		contract.Fail("echo-server", err)
	}
	if *size < 1 || *size > echo.BufSize {
		contract.Fail("echo-server", fmt.Errorf("--size=%d: want 1..%d", *size, echo.BufSize))
	}
	if err := contract.SetGOMAXPROCS(*procs); err != nil {
		contract.Fail("echo-server", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-server:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port) // os.Stdout is unbuffered: the harness sees it now
	if err := echo.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "echo-server:", err)
		os.Exit(1)
	}
}
