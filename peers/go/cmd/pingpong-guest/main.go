// pingpong-guest is the Go guest of ipclab's pingpong suite (reference 004): it attaches to the
// host's shared-memory region, runs one goroutine per slot that answers a+b until DONE, and
// writes its CPU window into the region's header. The host (ipclab, pingpong/go) starts it.
//
//	pingpong-guest --shm=/ipclab.<pid>.<n>.pingpong --pairs=N --wait=adaptive_sem
//	               [--spin-limit=2000] [--sem=PREFIX] [--efd=toGuest0,toHost0,...]
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"ipclab/peers/go/pingpong"
)

func main() {
	shm := flag.String("shm", "", "POSIX shared-memory name of the region")
	pairs := flag.Int("pairs", 1, "slots to answer")
	wait := flag.String("wait", pingpong.AdaptiveSem, "wait strategy")
	spinLimit := flag.Int("spin-limit", 2000, "spins before an adaptive wait sleeps")
	semPrefix := flag.String("sem", "", "named semaphores are PREFIX.h<i> (host) and PREFIX.g<i> (guest)")
	efds := flag.String("efd", "", "eventfds, per pair: to-guest,to-host")
	flag.Parse()
	if err := run(*shm, *pairs, *wait, *spinLimit, *semPrefix, *efds); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong-guest:", err)
		os.Exit(1)
	}
}

func run(shm string, pairs int, wait string, spinLimit int, semPrefix, efds string) error {
	if shm == "" || pairs < 1 {
		return fmt.Errorf("--shm and --pairs >= 1 are required")
	}
	st, err := pingpong.NewStrategy(wait, spinLimit)
	if err != nil {
		return err
	}
	r, err := pingpong.Attach(shm, pairs)
	if err != nil {
		return err
	}
	sides := make([]pingpong.Side, pairs)
	if st.UsesSem() {
		for i := range sides {
			if sides[i].MySem, err = pingpong.OpenSem(fmt.Sprintf("%s.g%d", semPrefix, i), false); err != nil {
				return err
			}
			if sides[i].PeerSem, err = pingpong.OpenSem(fmt.Sprintf("%s.h%d", semPrefix, i), false); err != nil {
				return err
			}
		}
	}
	if wait == pingpong.Eventfd {
		fields := strings.Split(efds, ",")
		if len(fields) != 2*pairs {
			return fmt.Errorf("--efd needs %d descriptors, got %q", 2*pairs, efds)
		}
		for i := range sides {
			a, err1 := strconv.Atoi(fields[2*i])
			b, err2 := strconv.Atoi(fields[2*i+1])
			if err1 != nil || err2 != nil {
				return fmt.Errorf("--efd: bad descriptor in %q", efds)
			}
			sides[i].MyEfd, sides[i].PeerEfd = a, b
		}
	}

	var begin syscall.Rusage
	var begun atomic.Bool
	var once sync.Once
	startWindow := func() {
		once.Do(func() {
			syscall.Getrusage(syscall.RUSAGE_SELF, &begin)
			begun.Store(true)
		})
	}
	var bad atomic.Uint64
	var wg sync.WaitGroup
	for i := 0; i < pairs; i++ {
		wg.Add(1)
		go func(i int) { // one goroutine per slot, as the reference
			defer wg.Done()
			bad.Add(pingpong.Answer(r, i, st, &sides[i], startWindow))
		}(i)
	}
	wg.Wait()
	var end syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &end)
	if !begun.Load() {
		end = begin
	}
	ns := func(tv syscall.Timeval) uint64 { return uint64(tv.Sec)*1e9 + uint64(tv.Usec)*1e3 }
	r.Report(ns(end.Utime)-ns(begin.Utime), ns(end.Stime)-ns(begin.Stime),
		uint64(end.Nvcsw-begin.Nvcsw), uint64(end.Nivcsw-begin.Nivcsw), bad.Load())
	return nil
}
