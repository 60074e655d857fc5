package pingpong

// The small C wrapper the reference needed: Go has no named POSIX semaphores, and the futex
// goes through the same path so that both sleeping strategies pay the same cgo cost.

/*
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static sem_t* pp_sem_open(const char* name, int create) {
	sem_t* s = create ? sem_open(name, O_CREAT | O_EXCL, 0600, 0) : sem_open(name, 0);
	return s == SEM_FAILED ? NULL : s;
}
static int pp_sem_wait(sem_t* s) {
	int r;
	do { r = sem_wait(s); } while (r != 0 && errno == EINTR);
	return r;
}
static int pp_sem_post(sem_t* s) { return sem_post(s); }
static int pp_sem_unlink(const char* name) { return sem_unlink(name); }
// Shared (not private) futexes: the word lives in memory mapped by two processes.
static void pp_futex_wait(uint32_t* addr, uint32_t val) {
	syscall(SYS_futex, addr, FUTEX_WAIT, val, NULL, NULL, 0);
}
static void pp_futex_wake(uint32_t* addr, int n) {
	syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Sem is a named POSIX semaphore.
type Sem struct{ s *C.sem_t }

// OpenSem opens the semaphore `name`; create makes it (O_EXCL, 0600, value 0) as a host would.
func OpenSem(name string, create bool) (Sem, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	c := C.int(0)
	if create {
		c = 1
	}
	s, err := C.pp_sem_open(cs, c)
	if s == nil {
		return Sem{}, fmt.Errorf("sem_open %s: %v", name, err)
	}
	return Sem{s}, nil
}

// UnlinkSem removes a named semaphore.
func UnlinkSem(name string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.pp_sem_unlink(cs)
}

func (s Sem) Wait() { C.pp_sem_wait(s.s) }
func (s Sem) Post() { C.pp_sem_post(s.s) }

func futexWait(addr *uint32, val uint32) {
	C.pp_futex_wait((*C.uint32_t)(unsafe.Pointer(addr)), C.uint32_t(val))
}
func futexWake(addr *uint32, n int) { C.pp_futex_wake((*C.uint32_t)(unsafe.Pointer(addr)), C.int(n)) }
