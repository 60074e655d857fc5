// Package rtbench holds the Go runtime's side of ipclab's runtime suite (docs/runtime.md):
// goroutine spawn+join, runtime.Gosched switches, channel messages (1 pair and P pairs) and timer
// arm+fire, each counting its results into a Tally that Verify checks the same way as the C++
// benches (src/mechanisms/runtime/common.cpp).
//
// Drive modes (issue 20; condy-bench, the reference, has no Go benches): Go has no block_on, so
// "block_on" runs the bench on the calling goroutine — the peer's main goroutine, the root the
// runtime starts with — and "spawned" runs it in a new goroutine that main waits for on a
// channel. Either way runtime.Gosched puts the goroutine on the global run queue and enters the
// scheduler; the netpoller is consulted by the scheduler only when it finds nothing to run, so
// no driver sits on the switch's path in either mode. SwitchMany runs tasks goroutines yielding
// round-robin.
package rtbench

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"ipclab/peers/go/contract"
)

// Tally is what a run observed: results counted, their sum, and results out of order.
type Tally struct {
	Count, Sum, Disorder uint64
}

// Take counts got where want was due (a channel message, a goroutine's result).
func (t *Tally) Take(got, want uint64) {
	t.Count++
	t.Sum += got
	if got != want {
		t.Disorder++
	}
}

// Add folds another tally (a pair's) into t.
func (t *Tally) Add(o Tally) {
	t.Count += o.Count
	t.Sum += o.Sum
	t.Disorder += o.Disorder
}

// IndexSum is 0+1+...+n-1: what n results numbered from 0 add up to.
func IndexSum(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return n * (n - 1) / 2
}

// Verify judges got against the expected count and sum: a shortfall is lost, a surplus
// duplicated, a wrong sum or an out-of-order result corrupt.
func Verify(wantCount, wantSum uint64, got Tally) contract.Integrity {
	i := contract.Integrity{Sent: wantCount, Received: got.Count, Corrupt: got.Disorder}
	if got.Count < wantCount {
		i.Lost = wantCount - got.Count
	}
	if got.Count > wantCount {
		i.Duplicated = got.Count - wantCount
	}
	if got.Count == wantCount && got.Sum != wantSum {
		i.Corrupt++
	}
	return i
}

// Params are the benches' parameters, named as in the C++ mechanisms.
type Params struct {
	N        uint64 // operations (per pair for channel_pairs)
	Batch    uint64 // spawn: goroutines in flight before they are joined
	Capacity int    // channel buffer in messages (0 = unbuffered, a rendezvous)
	Pairs    uint64 // channel_pairs: producer/consumer pairs
	Delay    time.Duration
	Tasks    uint64 // switch_many: goroutines yielding round-robin, N/Tasks yields each
	Drive    string // block_on: the bench on the calling goroutine; spawned: in a new one awaited
}

// Bench is one benchmark: its ops and expected tally for p, and the body that produces a tally.
type Bench struct {
	Ops  func(p Params) uint64
	Body func(p Params) Tally
}

func nOps(p Params) uint64 { return p.N }

// Benches by the name of their C++ counterparts (runtime/<name>_ipcrt).
var Benches = map[string]Bench{
	"spawn":  {nOps, func(p Params) Tally { return Spawn(p.N, p.Batch) }},
	"switch": {nOps, func(p Params) Tally { return Switch(p.N) }},
	"switch_many": {func(p Params) uint64 { return p.N / p.Tasks * p.Tasks }, func(p Params) Tally {
		return SwitchMany(p.Tasks, p.N/p.Tasks)
	}},
	"channel": {nOps, func(p Params) Tally {
		return Pairs(1, p.N, p.Capacity)
	}},
	"channel_pairs": {func(p Params) uint64 { return p.N * p.Pairs }, func(p Params) Tally {
		return Pairs(p.Pairs, p.N, p.Capacity)
	}},
	"timer": {nOps, func(p Params) Tally { return Timer(p.N, p.Delay) }},
}

// Check names the first parameter out of range for bench.
func Check(bench string, p Params) error {
	if _, ok := Benches[bench]; !ok {
		return fmt.Errorf("--bench=%s: want spawn, switch, switch_many, channel, channel_pairs or timer", bench)
	}
	switch {
	case p.N < 1 || p.N > 1<<30:
		return fmt.Errorf("--n=%d: want 1..%d", p.N, 1<<30)
	case p.Batch < 1 || p.Batch > 1<<24:
		return fmt.Errorf("--batch=%d: want 1..%d", p.Batch, 1<<24)
	case p.Capacity < 0 || p.Capacity > 1<<20:
		return fmt.Errorf("--capacity=%d: want 0..%d", p.Capacity, 1<<20)
	case p.Pairs < 1 || p.Pairs > 4096:
		return fmt.Errorf("--pairs=%d: want 1..4096", p.Pairs)
	case p.Delay < 0 || p.Delay > time.Second:
		return fmt.Errorf("--delay_us=%d: want 0..1000000", p.Delay.Microseconds())
	case p.Drive != "block_on" && p.Drive != "spawned":
		return fmt.Errorf("--drive=%s: want block_on or spawned", p.Drive)
	case bench == "switch_many" && (p.Tasks < 1 || p.Tasks > p.N):
		return fmt.Errorf("--tasks=%d: want 1..n (--n=%d)", p.Tasks, p.N)
	}
	return nil
}

// unset marks a result slot no goroutine has written.
const unset = ^uint64(0)

// Spawn starts n goroutines, batch at a time, each storing its index in its own slot, and joins
// each batch with a sync.WaitGroup (Go has no join handle; the WaitGroup is the idiomatic join).
// A goroutine that never ran leaves its slot unset and is counted lost.
func Spawn(n, batch uint64) Tally {
	if batch > n {
		batch = n
	}
	slots := make([]uint64, batch)
	var wg sync.WaitGroup
	var t Tally
	for base := uint64(0); base < n; base += batch {
		m := n - base
		if m > batch {
			m = batch
		}
		for j := range slots[:m] {
			slots[j] = unset
		}
		wg.Add(int(m))
		for j := uint64(0); j < m; j++ {
			go leaf(&slots[j], base+j, &wg)
		}
		wg.Wait()
		for j, v := range slots[:m] {
			if v != unset {
				t.Take(v, base+uint64(j))
			}
		}
	}
	return t
}

func leaf(slot *uint64, i uint64, wg *sync.WaitGroup) {
	*slot = i
	wg.Done()
}

// Switch yields n times with runtime.Gosched in one goroutine: each call puts the goroutine on
// the run queue and enters the scheduler, which resumes it (the analogue of ipcrt's yield()).
func Switch(n uint64) Tally {
	var t Tally
	for i := uint64(0); i < n; i++ {
		runtime.Gosched()
		t.Take(i, i)
	}
	return t
}

// SwitchMany starts tasks goroutines that each call runtime.Gosched per times, and waits for
// them all. Goroutine k counts its yields as k*per..k*per+per-1 in its own slot, so the sum over
// all is IndexSum of the switches done: a lost goroutine comes short, a duplicated one over.
func SwitchMany(tasks, per uint64) Tally {
	var wg sync.WaitGroup
	tallies := make([]Tally, tasks)
	wg.Add(int(tasks))
	for k := uint64(0); k < tasks; k++ {
		go func(out *Tally, first uint64) {
			var t Tally
			for i := first; i < first+per; i++ {
				runtime.Gosched()
				t.Take(i, i)
			}
			*out = t
			wg.Done()
		}(&tallies[k], k*per)
	}
	wg.Wait()
	var all Tally
	for _, t := range tallies {
		all.Add(t)
	}
	return all
}

// Drive runs body as p.Drive says: on the calling goroutine (block_on, the analogue of a Rust
// runtime's block_on root: the peer's main goroutine) or in a new goroutine the caller waits for
// on a channel (spawned).
func Drive(p Params, body func(Params) Tally) Tally {
	if p.Drive != "spawned" {
		return body(p)
	}
	done := make(chan Tally)
	go func() { done <- body(p) }()
	return <-done
}

// Pairs runs pairs producer/consumer goroutine pairs, each over its own chan uint64 of capacity
// capacity. Pair p's message i carries p*n+i, so a message crossing pairs is caught too; the
// producer closes its channel after n messages and the consumer ranges over it.
func Pairs(pairs, n uint64, capacity int) Tally {
	var wg sync.WaitGroup
	tallies := make([]Tally, pairs)
	for p := uint64(0); p < pairs; p++ {
		ch := make(chan uint64, capacity)
		wg.Add(2)
		go consume(ch, p*n, &tallies[p], &wg)
		go produce(ch, p*n, n, &wg)
	}
	wg.Wait()
	var all Tally
	for _, t := range tallies {
		all.Add(t)
	}
	return all
}

func produce(ch chan<- uint64, first, n uint64, wg *sync.WaitGroup) {
	for i := uint64(0); i < n; i++ {
		ch <- first + i
	}
	close(ch)
	wg.Done()
}

func consume(ch <-chan uint64, first uint64, out *Tally, wg *sync.WaitGroup) {
	var t Tally // local, so consumers on other Ps do not share a cache line while counting
	for v := range ch {
		t.Take(v, first+t.Count)
	}
	*out = t
	wg.Done()
}

// Timer arms and fires n timers one after the other: one time.Timer, Reset(delay) then a
// receive from its channel (the analogue of re-arming one steady_timer). time.Sleep is not used:
// it returns at once for a zero delay without arming anything. Each receive is a fire; with a
// delay, a fire sooner than the delay after arming counts as out of order.
func Timer(n uint64, delay time.Duration) Tally {
	tm := time.NewTimer(time.Hour)
	if !tm.Stop() {
		<-tm.C
	}
	var t Tally
	for i := uint64(0); i < n; i++ {
		var t0 time.Time
		if delay > 0 {
			t0 = time.Now()
		}
		tm.Reset(delay)
		<-tm.C
		if delay > 0 && time.Since(t0) < delay {
			t.Take(^i, i)
		} else {
			t.Take(i, i)
		}
	}
	return t
}

// unit is the step of p.N one batch counts in (the last batch takes what is left): one yield of
// every goroutine for switch_many (its N is the switches in all, N/Tasks each); whole batches of
// goroutines for spawn and whole capacities of messages for the channels, since a batch restarts
// the body and these keep what they shape (goroutines in flight; a channel filled and drained as
// in the steady state); one operation otherwise.
func unit(bench string, p Params) uint64 {
	u := uint64(1)
	switch bench {
	case "switch_many":
		u = p.Tasks
	case "spawn":
		u = p.Batch
	case "channel", "channel_pairs":
		u = uint64(max(p.Capacity, 1))
	}
	return max(1, min(u, p.N))
}

// ClockReadNs is the cost of one clock read (time.Now), in ns: the least of a few timed runs of
// 1000.
func ClockReadNs() float64 {
	least := math.Inf(1)
	for r := 0; r < 5; r++ {
		t0 := time.Now()
		for i := 0; i < 1000; i++ {
			_ = time.Now()
		}
		least = math.Min(least, float64(time.Since(t0).Nanoseconds())/1000)
	}
	return least
}

// BatchUnits is the size, in units, of one timed batch of a count-based body of n units: the
// smallest power of two (at most n) whose run lasts 100 times what timing it costs (a clock read,
// and starting the body again: the intercept of the runs of 1 and 2 units), so that timing in
// batches costs the run under 1%, whatever this machine's clock and the body's speed. run(m)
// runs the body on m units and returns its time.
func BatchUnits(n uint64, run func(m uint64) time.Duration) uint64 {
	if n < 2 {
		return 1
	}
	least := func(m uint64) float64 {
		l := math.Inf(1)
		for r := 0; r < 3; r++ {
			l = math.Min(l, float64(run(m)))
		}
		return l
	}
	t1, t2 := least(1), least(2)
	target := 100 * (ClockReadNs() + math.Max(0, 2*t1-t2))
	m, tm := uint64(1), t1
	for tm < target && m < n {
		m = min(2*m, n)
		tm = float64(run(m))
	}
	return m
}

// Run measures bench the way Session::measure does for the C++ benches: untimed runs for warmupS
// seconds (of one step, two, four ...), then timed, in batches of BatchUnits (found by untimed runs, counted
// as warm-up) with one clock read between two: each batch's time per op (ns) is one sample of the
// record's latency, kind batch_mean, and the batches tile the window (their ops-weighted mean is
// its time per op). A GC before the timed run keeps the warm-up's garbage out of it; collections
// the timed run causes itself are counted (extra.gc_cycles). Every run's tally is verified:
// lost, duplicated and corrupt add up over all runs, sent and received are the timed batches'. A
// dirty integrity is reported, not hidden: the harness fails it.
func Run(bench string, p Params, warmupS float64) contract.Record {
	b := Benches[bench]
	step := unit(bench, p)
	total := p.N
	if bench == "switch_many" {
		total = p.N / p.Tasks * p.Tasks
	}
	var seen contract.Integrity
	// runOn runs the body with N = c and folds its verdict into seen.
	runOn := func(c uint64) (contract.Integrity, uint64) {
		q := p
		q.N = c
		ops := b.Ops(q)
		v := Verify(ops, IndexSum(ops), Drive(q, b.Body))
		seen.Lost += v.Lost
		seen.Duplicated += v.Duplicated
		seen.Corrupt += v.Corrupt
		return v, ops
	}
	if warmupS > 0 {
		// Warm-up for --warmup's time, not a whole count: n is grown to fill the window (the
		// harness's fold_peer), and a warm-up of all n doubled every repetition. Runs of one step,
		// two, four ... (at most the total), until the time has passed.
		start := time.Now()
		for c := min(step, total); ; c = min(2*c, total) {
			runOn(c)
			if time.Since(start).Seconds() >= warmupS {
				break
			}
		}
	}
	k := BatchUnits((total+step-1)/step, func(m uint64) time.Duration {
		t0 := time.Now()
		runOn(min(m*step, total))
		return time.Since(t0)
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	var batches contract.Hist
	var ops uint64
	c0 := contract.Usage()
	t0 := time.Now()
	last := t0
	for done := uint64(0); done < total; {
		c := min(k*step, total-done)
		v, o := runOn(c)
		now := time.Now()
		seen.Sent += v.Sent
		seen.Received += v.Received
		batches.Record((uint64(now.Sub(last).Nanoseconds()) + o/2) / max(o, 1))
		last = now
		ops += o
		done += c
	}
	wall := last.Sub(t0)
	cpu := contract.Usage().Sub(c0)
	runtime.ReadMemStats(&ms)

	r := contract.Record{Name: "runtime/" + bench + "_go", Integrity: seen}
	r.Measured(ops, wall, cpu)
	r.Latency = batches.Latency("batch_mean")
	r.Extra = map[string]any{
		"runtime":     runtime.Version(),
		"gomaxprocs":  runtime.GOMAXPROCS(0),
		"gc_cycles":   ms.NumGC - gc0,
		"drive":       p.Drive,
		"batch_units": k * step, // switch_many's below: yields per goroutine, as the Rust peers count it
	}
	if bench == "switch_many" {
		r.Extra["tasks"] = p.Tasks
		r.Extra["batch_units"] = k
	}
	return r
}
