package pingpong

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
)

// host plays the C++ host's part on slot i: n round trips, every answer verified.
func host(t *testing.T, r *Region, i int, st *Strategy, io *Side, n int) {
	s := r.Slot(i)
	for k := 1; k <= n; k++ {
		a, b := int64(k)*2654435761, int64(i)<<32|int64(k)
		*s.A(), *s.B(), *s.ReqID() = a, b, uint32(k)
		st.HandOver(s, ReqReady, s.GuestSleeping(), io)
		st.WaitFor(s, s.HostSleeping(), io, bit(RespReady))
		if got := *s.Sum(); got != a+b {
			t.Errorf("pair %d round trip %d: sum %d, want %d", i, k, got, a+b)
			break
		}
	}
	st.Finish(s, io)
}

func eventfd(t *testing.T) int {
	fd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC, 0)
	if errno != 0 {
		t.Fatalf("eventfd: %v", errno)
	}
	return int(fd)
}

// Both sides of the protocol in one process, every strategy: the guest's answers arrive, are
// right, and no request is seen twice or skipped.
func TestAnswerEveryStrategy(t *testing.T) {
	const pairs, n = 3, 2000
	for _, name := range []string{Spin, SpinYield, AdaptiveFutex, AdaptiveSem, SemOnly, FutexOnly, Eventfd} {
		t.Run(name, func(t *testing.T) {
			st, err := NewStrategy(name, 100)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewAnonymous(pairs)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Munmap(r.Mem)
			hostSide, guestSide := make([]Side, pairs), make([]Side, pairs)
			for i := 0; i < pairs; i++ {
				if st.UsesSem() {
					prefix := fmt.Sprintf("/ipclab.%d.gotest.%s.%d", os.Getpid(), name, i)
					hs, err1 := OpenSem(prefix+".h", true)
					gs, err2 := OpenSem(prefix+".g", true)
					UnlinkSem(prefix + ".h")
					UnlinkSem(prefix + ".g")
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					hostSide[i] = Side{MySem: hs, PeerSem: gs}
					guestSide[i] = Side{MySem: gs, PeerSem: hs}
				}
				if name == Eventfd {
					toHost, toGuest := eventfd(t), eventfd(t)
					defer syscall.Close(toHost)
					defer syscall.Close(toGuest)
					hostSide[i] = Side{MyEfd: toHost, PeerEfd: toGuest}
					guestSide[i] = Side{MyEfd: toGuest, PeerEfd: toHost}
				}
			}
			r.SetMeasuring()
			var wg sync.WaitGroup
			bad := make([]uint64, pairs)
			measured := make([]bool, pairs)
			for i := 0; i < pairs; i++ {
				wg.Add(2)
				go func(i int) {
					defer wg.Done()
					bad[i] = Answer(r, i, st, &guestSide[i], func() { measured[i] = true })
				}(i)
				go func(i int) {
					defer wg.Done()
					host(t, r, i, st, &hostSide[i], n)
				}(i)
			}
			wg.Wait()
			for i := 0; i < pairs; i++ {
				if bad[i] != 0 || !measured[i] {
					t.Errorf("pair %d: %d bad requests, window seen %v", i, bad[i], measured[i])
				}
			}
		})
	}
}

// The offsets Go uses are the ones the C++ static_asserts pin.
func TestLayout(t *testing.T) {
	r, err := NewAnonymous(2)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Slot(1)
	*s.Sum() = 7
	if got := r.Mem[HeaderSize+SlotSize+offSum]; got != 7 {
		t.Fatalf("sum of slot 1 not at byte %d", HeaderSize+SlotSize+offSum)
	}
	r.Report(1, 2, 3, 4, 5)
	if *r.u64(offBadRequests) != 5 || *r.u32(offFinished) != 1 {
		t.Fatal("header fields misplaced")
	}
}
