// runtime-peer is the Go runtime's peer in ipclab's runtime suite (runtime/<bench>_go, see
// docs/runtime.md): it runs one bench, count-based like the C++ ones, and prints one record.
//
//	runtime-peer --bench=spawn|switch|switch_many|channel|channel_pairs|timer [--n=N] [--batch=B]
//	             [--capacity=C] [--pairs=P] [--delay_us=D] [--tasks=T] [--drive=block_on|spawned]
//	             [--gomaxprocs=1]
//	             [--duration=S] [--warmup=S] [--cpus=LIST]
package main

import (
	"os"
	"time"

	"ipclab/peers/go/contract"
	"ipclab/peers/go/rtbench"
)

func main() {
	a := contract.NewArgs("runtime-peer")
	f := a.Flags
	bench := f.String("bench", "", "spawn, switch, switch_many, channel, channel_pairs or timer")
	n := f.Uint64("n", 16384, "operations (messages per pair for channel_pairs)")
	batch := f.Uint64("batch", 1024, "spawn: goroutines started before they are joined")
	capacity := f.Int("capacity", 1024, "channel buffer in messages (0 = unbuffered)")
	pairs := f.Uint64("pairs", 4, "channel_pairs: producer/consumer pairs")
	delayUs := f.Int64("delay_us", 0, "timer delay in microseconds")
	tasks := f.Uint64("tasks", 64, "switch_many: goroutines yielding round-robin, n/tasks yields each")
	drive := f.String("drive", "block_on", "block_on: the bench on the main goroutine; spawned: in a goroutine main waits for")
	procs := f.Int("gomaxprocs", 1, "GOMAXPROCS (1 = one scheduler thread)")
	if err := a.Parse(os.Args[1:]); err != nil {
		contract.Fail("runtime-peer", err)
	}
	p := rtbench.Params{N: *n, Batch: *batch, Capacity: *capacity, Pairs: *pairs,
		Delay: time.Duration(*delayUs) * time.Microsecond, Tasks: *tasks, Drive: *drive}
	if err := rtbench.Check(*bench, p); err != nil {
		contract.Fail("runtime-peer", err)
	}
	if err := contract.SetGOMAXPROCS(*procs); err != nil {
		contract.Fail("runtime-peer", err)
	}
	r := rtbench.Run(*bench, p, a.Warmup)
	if !r.Integrity.Clean() {
		// The harness fails the record from these counters; say it on stderr too.
		os.Stderr.WriteString("runtime-peer: integrity check failed\n")
	}
	if err := r.Write(os.Stdout); err != nil {
		os.Exit(1)
	}
}
