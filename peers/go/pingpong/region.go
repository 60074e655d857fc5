// Package pingpong is the Go side of ipclab's pingpong suite (reference 004): the layout of the
// shared-memory region and the wait strategies, mirroring src/mechanisms/pingpong/slot.hpp and
// wait.hpp. Orderings: Go's sync/atomic operations are sequentially consistent, which is what
// the sleeping strategies need (flag store → state load, state store → flag load; see slot.hpp);
// the plain fields a, b and sum are ordered by the atomic accesses to `state` around them.
package pingpong

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Slot states (slot.hpp State).
const (
	Wait      uint32 = 0
	ReqReady  uint32 = 1
	RespReady uint32 = 2
	Done      uint32 = 3
)

// Byte offsets of the layout shared with C++ (static_asserts in slot.hpp pin the same numbers).
const (
	HeaderSize = 128
	SlotSize   = 64
	magic      = 0x50504731

	offMagic       = 0
	offPairs       = 4
	offMeasuring   = 8
	offAttached    = 64
	offFinished    = 68
	offCPUUser     = 72
	offCPUSys      = 80
	offCtxVol      = 88
	offCtxInvol    = 96
	offBadRequests = 104

	offState         = 0
	offReqID         = 4
	offHostSleeping  = 8
	offGuestSleeping = 12
	offA             = 16
	offB             = 24
	offSum           = 32
)

// Region is a mapped pingpong region: a header and `Pairs` slots.
type Region struct {
	Mem   []byte
	Pairs int
}

// Size of a region of n pairs.
func Size(pairs int) int { return HeaderSize + SlotSize*pairs }

// Attach maps the POSIX shared-memory object `name` ("/ipclab.…") created by the host.
func Attach(name string, pairs int) (*Region, error) {
	f, err := os.OpenFile("/dev/shm"+name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, Size(pairs), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", name, err)
	}
	r := &Region{Mem: mem, Pairs: pairs}
	if got := *r.u32(offMagic); got != magic {
		return nil, fmt.Errorf("%s: bad magic %#x (layout mismatch with the host)", name, got)
	}
	if got := int(*r.u32(offPairs)); got != pairs {
		return nil, fmt.Errorf("%s: host has %d pairs, guest was told %d", name, got, pairs)
	}
	return r, nil
}

// NewAnonymous makes a region in anonymous shared memory (tests: host and guest in one process).
func NewAnonymous(pairs int) (*Region, error) {
	mem, err := syscall.Mmap(-1, 0, Size(pairs), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_ANON)
	if err != nil {
		return nil, err
	}
	r := &Region{Mem: mem, Pairs: pairs}
	*r.u32(offMagic) = magic
	*r.u32(offPairs) = uint32(pairs)
	return r, nil
}

func (r *Region) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.Mem[off])) }
func (r *Region) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.Mem[off])) }

// Slot returns slot i.
func (r *Region) Slot(i int) *Slot { return &Slot{base: unsafe.Pointer(&r.Mem[HeaderSize+SlotSize*i])} }

// Measuring reports whether the host opened the measured window.
func (r *Region) Measuring() bool { return atomic.LoadUint32(r.u32(offMeasuring)) != 0 }

// SetMeasuring opens the window (the host's side; tests).
func (r *Region) SetMeasuring() { atomic.StoreUint32(r.u32(offMeasuring), 1) }

// Attached counts one more guest worker ready to answer.
func (r *Region) Attached() uint32 { return atomic.AddUint32(r.u32(offAttached), 1) }

// Report writes the guest's CPU window and bad-request count, then marks the guest finished.
func (r *Region) Report(userNs, sysNs, ctxVol, ctxInvol, bad uint64) {
	*r.u64(offCPUUser) = userNs
	*r.u64(offCPUSys) = sysNs
	*r.u64(offCtxVol) = ctxVol
	*r.u64(offCtxInvol) = ctxInvol
	*r.u64(offBadRequests) = bad
	atomic.StoreUint32(r.u32(offFinished), 1) // publishes the plain stores above
}

// Slot is one 64-byte slot.
type Slot struct{ base unsafe.Pointer }

func (s *Slot) u32(off uintptr) *uint32 { return (*uint32)(unsafe.Add(s.base, off)) }
func (s *Slot) i64(off uintptr) *int64  { return (*int64)(unsafe.Add(s.base, off)) }

func (s *Slot) State() *uint32         { return s.u32(offState) }
func (s *Slot) ReqID() *uint32         { return s.u32(offReqID) }
func (s *Slot) HostSleeping() *uint32  { return s.u32(offHostSleeping) }
func (s *Slot) GuestSleeping() *uint32 { return s.u32(offGuestSleeping) }
func (s *Slot) A() *int64              { return s.i64(offA) }
func (s *Slot) B() *int64              { return s.i64(offB) }
func (s *Slot) Sum() *int64            { return s.i64(offSum) }
