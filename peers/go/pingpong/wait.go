package pingpong

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Strategy names, as the host's `wait` parameter.
const (
	Spin          = "spin"
	SpinYield     = "spin_yield"
	AdaptiveFutex = "adaptive_futex"
	AdaptiveSem   = "adaptive_sem"
	SemOnly       = "sem"
	FutexOnly     = "futex"
	Eventfd       = "eventfd"
)

// Side is what one side of one pair blocks on and what wakes its peer.
type Side struct {
	MySem, PeerSem Sem
	MyEfd, PeerEfd int
}

// Strategy waits for a slot's state and hands the slot over (wait.hpp Strategy).
type Strategy struct {
	name      string
	spinLimit int
}

// NewStrategy checks the name; sem and futex never spin.
func NewStrategy(name string, spinLimit int) (*Strategy, error) {
	switch name {
	case Spin, SpinYield, AdaptiveFutex, AdaptiveSem, Eventfd:
	case SemOnly, FutexOnly:
		spinLimit = 0
	default:
		return nil, fmt.Errorf("unknown wait strategy %q", name)
	}
	return &Strategy{name: name, spinLimit: spinLimit}, nil
}

// UsesSem tells whether the strategy needs the named semaphores.
func (st *Strategy) UsesSem() bool { return st.name == AdaptiveSem || st.name == SemOnly }

func (st *Strategy) usesFutex() bool { return st.name == AdaptiveFutex || st.name == FutexOnly }

func bit(s uint32) uint32 { return 1 << s }

// WaitFor blocks until the slot's state is in mask (bits of states) and returns it; mine is
// this side's sleeping flag.
func (st *Strategy) WaitFor(s *Slot, mine *uint32, io *Side, mask uint32) uint32 {
	state := s.State()
	switch st.name {
	case Spin:
		// No pause instruction in Go: a plain load loop (the runtime preempts it if needed).
		for {
			if v := atomic.LoadUint32(state); bit(v)&mask != 0 {
				return v
			}
		}
	case SpinYield:
		for {
			if v := atomic.LoadUint32(state); bit(v)&mask != 0 {
				return v
			}
			runtime.Gosched()
		}
	case Eventfd:
		var buf [8]byte
		for {
			if v := atomic.LoadUint32(state); bit(v)&mask != 0 {
				return v
			}
			syscall.Read(io.MyEfd, buf[:])
		}
	}
	// The reference's adaptive wait: Gosched while spinning, then sleep.
	for i := 0; i < st.spinLimit; i++ {
		if v := atomic.LoadUint32(state); bit(v)&mask != 0 {
			return v
		}
		runtime.Gosched()
	}
	for {
		atomic.StoreUint32(mine, 1) // Dekker: flag, then state (both sequentially consistent)
		v := atomic.LoadUint32(state)
		if bit(v)&mask != 0 {
			atomic.StoreUint32(mine, 0)
			return v
		}
		if st.UsesSem() {
			io.MySem.Wait()
		} else {
			futexWait(state, v)
		}
		atomic.StoreUint32(mine, 0)
		if v := atomic.LoadUint32(state); bit(v)&mask != 0 {
			return v
		}
	}
}

// HandOver publishes `v` (with the plain fields written before it) and wakes the peer if needed.
func (st *Strategy) HandOver(s *Slot, v uint32, peer *uint32, io *Side) {
	atomic.StoreUint32(s.State(), v)
	switch {
	case st.name == Eventfd:
		postEfd(io.PeerEfd)
	case st.UsesSem():
		if atomic.LoadUint32(peer) != 0 { // Dekker: state, then flag
			io.PeerSem.Post()
		}
	case st.usesFutex():
		if atomic.LoadUint32(peer) != 0 {
			futexWake(s.State(), 1)
		}
	}
}

// Finish ends the slot: DONE and an unconditional wake-up (tests play the host with it).
func (st *Strategy) Finish(s *Slot, io *Side) {
	atomic.StoreUint32(s.State(), Done)
	switch {
	case st.name == Eventfd:
		postEfd(io.PeerEfd)
	case st.UsesSem():
		io.PeerSem.Post()
	case st.usesFutex():
		futexWake(s.State(), 1<<30)
	}
}

func postEfd(fd int) {
	one := uint64(1)
	buf := (*[8]byte)(unsafe.Pointer(&one))
	for {
		if _, err := syscall.Write(fd, buf[:]); err != syscall.EINTR {
			return
		}
	}
}

// Answer is a guest worker's loop over slot i until DONE: sum every request. onMeasuring runs
// once, when the host's measured window is first seen open. Returns the requests whose req_id
// did not follow the previous one.
func Answer(r *Region, i int, st *Strategy, io *Side, onMeasuring func()) uint64 {
	s := r.Slot(i)
	r.Attached()
	var bad uint64
	expect := uint32(1)
	measuring := false
	for {
		if st.WaitFor(s, s.GuestSleeping(), io, bit(ReqReady)|bit(Done)) == Done {
			return bad
		}
		if !measuring && r.Measuring() {
			measuring = true
			onMeasuring()
		}
		if req := *s.ReqID(); req != expect {
			bad++
		}
		expect = *s.ReqID() + 1
		*s.Sum() = *s.A() + *s.B()
		st.HandOver(s, RespReady, s.HostSleeping(), io)
	}
}
