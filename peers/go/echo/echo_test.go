package echo

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"sync"
	"testing"
)

// Several connections at once, messages up to the largest size, each echoed byte for byte and
// in order; closing the listener ends Serve without an error.
func TestEchoesEveryByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ln) }()

	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			rng := rand.New(rand.NewSource(int64(c)))
			for _, size := range []int{1, 1024, 4096, 65536} {
				msg := make([]byte, size)
				rng.Read(msg)
				go conn.Write(msg) // a 64 KiB message need not fit the socket buffers before it is read
				got := make([]byte, size)
				if _, err := io.ReadFull(conn, got); err != nil {
					t.Errorf("connection %d size %d: %v", c, size, err)
					return
				}
				if !bytes.Equal(got, msg) {
					t.Errorf("connection %d size %d: echoed bytes differ", c, size)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	ln.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}
