package rtbench

import (
	"fmt"
	"testing"
	"time"

	"ipclab/peers/go/contract"
)

// Every bench at a tiny size, including a partial spawn batch, a rendezvous channel and 3
// pairs, produces exactly the results it should.
func TestBenchesCountEveryResult(t *testing.T) {
	cases := []struct {
		bench string
		p     Params
	}{
		{"spawn", Params{N: 1000, Batch: 64}}, // 1000 = 15 full batches + 40
		{"spawn", Params{N: 3, Batch: 1024}},
		{"switch", Params{N: 1000}},
		{"switch_many", Params{N: 1000, Tasks: 7}}, // 142 yields each, 994 in all
		{"switch_many", Params{N: 5, Tasks: 5}},
		{"channel", Params{N: 1000, Capacity: 16}},
		{"channel", Params{N: 1000, Capacity: 0}},
		{"channel_pairs", Params{N: 500, Pairs: 3, Capacity: 8}},
		{"timer", Params{N: 50}},
		{"timer", Params{N: 5, Delay: 200 * time.Microsecond}},
	}
	for _, c := range cases {
		c.p.Batch, c.p.Pairs = max1(c.p.Batch), max1(c.p.Pairs)
		b := Benches[c.bench]
		ops := b.Ops(c.p)
		got := b.Body(c.p)
		if in := Verify(ops, IndexSum(ops), got); !in.Clean() || in.Received != ops {
			t.Errorf("%s %+v: integrity %+v from tally %+v", c.bench, c.p, in, got)
		}
	}
}

// The many-task switch's tally catches a goroutine lost or counted twice, and both drive modes
// produce a clean record of the switches actually done.
func TestSwitchManyAndDrive(t *testing.T) {
	full := SwitchMany(4, 10)
	if in := Verify(40, IndexSum(40), full); !in.Clean() {
		t.Fatalf("4 tasks x 10: integrity %+v", in)
	}
	short := SwitchMany(3, 10) // one of 4 tasks missing
	if in := Verify(40, IndexSum(40), short); in.Lost != 10 {
		t.Errorf("a missing task: integrity %+v, want 10 lost", in)
	}
	twice := full
	twice.Add(SwitchMany(1, 10)) // task 0 counted twice
	if in := Verify(40, IndexSum(40), twice); in.Duplicated != 10 {
		t.Errorf("a duplicated task: integrity %+v, want 10 duplicated", in)
	}
	for _, d := range []string{"block_on", "spawned"} {
		p := Params{N: 1000, Tasks: 64, Batch: 1, Pairs: 1, Drive: d}
		if err := Check("switch_many", p); err != nil {
			t.Fatal(err)
		}
		r := Run("switch_many", p, 0.001)
		if !r.Integrity.Clean() || r.Integrity.Received != 960 || r.Extra["drive"] != d {
			t.Errorf("drive=%s: record %+v", d, r)
		}
	}
	if Check("switch", Params{N: 10, Batch: 1, Pairs: 1, Drive: "spawn"}) == nil {
		t.Error("--drive=spawn accepted")
	}
	if Check("switch_many", Params{N: 10, Tasks: 11, Batch: 1, Pairs: 1, Drive: "block_on"}) == nil {
		t.Error("--tasks above --n accepted")
	}
}

func max1(v uint64) uint64 {
	if v == 0 {
		return 1
	}
	return v
}

// The verifier catches a missing, an extra, a reordered and a wrong-sum result.
func TestVerifyCatchesEveryFault(t *testing.T) {
	const n = 10
	tally := func(vals ...uint64) Tally {
		var t Tally
		for i, v := range vals {
			t.Take(v, uint64(i))
		}
		return t
	}
	good := tally(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	if in := Verify(n, IndexSum(n), good); !in.Clean() || in.Sent != n || in.Received != n {
		t.Fatalf("clean run judged %+v", in)
	}
	if in := Verify(n, IndexSum(n), tally(0, 1, 2, 3, 4, 5, 6, 7, 8)); in.Lost != 1 {
		t.Errorf("missing result: %+v", in)
	}
	if in := Verify(n, IndexSum(n), tally(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)); in.Duplicated != 1 {
		t.Errorf("extra result: %+v", in)
	}
	if in := Verify(n, IndexSum(n), tally(0, 1, 2, 3, 5, 4, 6, 7, 8, 9)); in.Corrupt == 0 {
		t.Errorf("reordered results: %+v", in)
	}
	wrong := good
	wrong.Sum++
	if in := Verify(n, IndexSum(n), wrong); in.Corrupt != 1 {
		t.Errorf("wrong sum: %+v", in)
	}
}

// Run's record carries the timed run's counts and a time per op, and flags a short body.
func TestRunRecord(t *testing.T) {
	r := Run("channel_pairs", Params{N: 100, Pairs: 2, Capacity: 4, Batch: 1}, 0.001)
	if r.Name != "runtime/channel_pairs_go" || r.Ops != 200 || r.WallS <= 0 || r.TimePerOpNs <= 0 {
		t.Fatalf("record %+v", r)
	}
	if !r.Integrity.Clean() || r.Integrity.Sent != 200 || r.Integrity.Received != 200 {
		t.Fatalf("integrity %+v", r.Integrity)
	}
	saved := Benches["switch"]
	defer func() { Benches["switch"] = saved }()
	if r.Latency == nil || r.Latency.Kind != "batch_mean" || r.Latency.Count == 0 ||
		len(r.Latency.Histogram.Values) == 0 || r.Extra["batch_units"] == nil {
		t.Fatalf("latency %+v, extra %v", r.Latency, r.Extra)
	}
	// The batches tile the window: their mean per op is the record's time per op, within the
	// rounding of each to whole ns.
	if mean := r.Latency.Mean; mean > r.TimePerOpNs*1.5+1 || mean < r.TimePerOpNs/1.5-1 {
		t.Errorf("batch means average %.1f ns, time per op %.1f ns", mean, r.TimePerOpNs)
	}
	// A batch restarts the body: spawn's are whole batches of goroutines in flight, a channel's
	// whole capacities, switch_many's yields of every goroutine (batch_units counts them per
	// goroutine, as the Rust peers do: at most 1000/7).
	for _, c := range []struct {
		bench string
		p     Params
		step  uint64
	}{
		{"spawn", Params{N: 1000, Batch: 64, Capacity: 1, Pairs: 1, Tasks: 1, Drive: "block_on"}, 64},
		{"channel", Params{N: 1000, Batch: 1, Capacity: 48, Pairs: 1, Tasks: 1, Drive: "block_on"}, 48},
		{"switch_many", Params{N: 1000, Batch: 1, Capacity: 1, Pairs: 1, Tasks: 7, Drive: "block_on"}, 1},
	} {
		r := Run(c.bench, c.p, 0)
		if u := r.Extra["batch_units"].(uint64); u%c.step != 0 || !r.Integrity.Clean() || r.Latency == nil ||
			(c.bench == "switch_many" && (u > 142 || r.Ops != 994)) {
			t.Errorf("%s: batches of %d (want whole %d), record %+v", c.bench, u, c.step, r)
		}
	}
	Benches["switch"] = Bench{nOps, func(p Params) Tally { return Switch(p.N - 1) }}
	// One result short in every run: each timed batch loses one, and so did warm-up and the
	// calibrating runs.
	if r := Run("switch", Params{N: 100}, 0.001); r.Integrity.Sent != 100 ||
		r.Integrity.Received != 100-r.Latency.Count || r.Integrity.Lost <= r.Latency.Count {
		t.Fatalf("a body one result short in every run: integrity %+v, %d batches", r.Integrity, r.Latency.Count)
	}
}

// A batch's size doubles until its run lasts 100 times the timing's cost, and never passes n.
func TestBatchUnits(t *testing.T) {
	// A body of 1 µs to start and 1 µs per unit: the target is 100 × (a clock read + 1 µs).
	body := func(m uint64) time.Duration { return time.Duration(1000+1000*m) * time.Nanosecond }
	k := BatchUnits(1<<20, body)
	if k&(k-1) != 0 || k < 64 || k > 256 {
		t.Errorf("batch of %d units for a 1 µs start and 1 µs per unit", k)
	}
	if k := BatchUnits(3, body); k != 3 {
		t.Errorf("batch of %d units where n is 3", k)
	}
	if k := BatchUnits(1, body); k != 1 {
		t.Errorf("batch of %d units where n is 1", k)
	}
}

// The histogram keeps the harness's buckets and the exact figures.
func TestHistLatency(t *testing.T) {
	var h contract.Hist
	if h.Latency("x") != nil {
		t.Error("an empty histogram made a latency")
	}
	for _, v := range []uint64{257, 3, 5, 3} {
		h.Record(v)
	}
	l := h.Latency("io")
	if l.Kind != "io" || l.Count != 4 || l.Min != 3 || l.Max != 257 || l.Mean != 67 ||
		fmt.Sprint(l.Histogram.Values) != "[3 5 256]" || fmt.Sprint(l.Histogram.Counts) != "[2 1 1]" {
		t.Errorf("latency %+v", l)
	}
}

func TestCheckNamesTheBadParameter(t *testing.T) {
	ok := Params{N: 1, Batch: 1, Pairs: 1, Drive: "block_on"}
	if err := Check("switch", ok); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.N = 0
	if err := Check("switch", bad); err == nil {
		t.Error("n=0 accepted")
	}
	if err := Check("yield", ok); err == nil {
		t.Error("unknown bench accepted")
	}
}
