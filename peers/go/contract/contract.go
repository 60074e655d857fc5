// Package contract is the Go side of ipclab's peer contract (docs/json-schema.md#peers): the
// harness starts a peer with its parameters as --name=value plus --duration, --warmup and --cpus,
// and reads one JSON record per line from its stdout.
package contract

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Args holds the harness's standard arguments; a peer adds its own flags to Flags before Parse.
type Args struct {
	Flags    *flag.FlagSet
	Duration float64 // seconds of the measured window (duration-driven peers)
	Warmup   float64 // seconds of warm-up; count-based peers run their body untimed for as long first
	CPUs     []int   // the harness's --cpus list
}

// NewArgs declares the standard arguments of a peer called name.
func NewArgs(name string) *Args {
	a := &Args{Flags: flag.NewFlagSet(name, flag.ContinueOnError)}
	a.Flags.Float64Var(&a.Duration, "duration", 1, "seconds measured (duration-driven peers)")
	a.Flags.Float64Var(&a.Warmup, "warmup", 0.2, "seconds of warm-up; a count-based body runs untimed for as long first")
	return a
}

// Parse parses argv (without the program name). A bad argument is an error naming it; the
// caller exits 2 (Fail).
func (a *Args) Parse(argv []string) error {
	var cpus string
	a.Flags.StringVar(&cpus, "cpus", "", "CPU list of the run, e.g. 0,1")
	a.Flags.SetOutput(io.Discard) // one line of our own instead of flag's usage dump
	if err := a.Flags.Parse(argv); err != nil {
		return err
	}
	if a.Flags.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; parameters are --name=value", a.Flags.Arg(0))
	}
	if a.Duration < 0 || a.Warmup < 0 {
		return fmt.Errorf("--duration and --warmup must be >= 0")
	}
	a.CPUs = nil
	for _, f := range strings.Split(cpus, ",") {
		if f == "" {
			continue
		}
		c, err := strconv.Atoi(f)
		if err != nil || c < 0 {
			return fmt.Errorf("--cpus=%s: want a comma-separated list of CPU numbers", cpus)
		}
		a.CPUs = append(a.CPUs, c)
	}
	return nil
}

// Fail prints a one-line error naming the fix and exits 2 (the harness's bad-input status).
func Fail(peer string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", peer, err)
	os.Exit(2)
}

// SetGOMAXPROCS applies a --gomaxprocs value: 1 and up is taken as is; anything else is an error.
// One P is the Go analogue of the single-threaded runtimes it is compared with.
func SetGOMAXPROCS(n int) error {
	if n < 1 || n > 1024 {
		return fmt.Errorf("--gomaxprocs=%d: want 1..1024 (1 = one scheduler thread, like the C++ runtimes)", n)
	}
	runtime.GOMAXPROCS(n)
	return nil
}

// Integrity is the record's integrity object: what was due, what arrived, and what went wrong.
type Integrity struct {
	Sent       uint64 `json:"sent"`
	Received   uint64 `json:"received"`
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	Corrupt    uint64 `json:"corrupt"`
}

// Clean is true when nothing was lost, duplicated or corrupted.
func (i Integrity) Clean() bool { return i.Lost == 0 && i.Duplicated == 0 && i.Corrupt == 0 }

// CPU is the record's cpu object for the measured window (the whole process, every thread).
type CPU struct {
	UserS    float64 `json:"user_s"`
	SysS     float64 `json:"sys_s"`
	CtxVol   int64   `json:"ctx_vol"`
	CtxInvol int64   `json:"ctx_invol"`
}

// Usage is the process's CPU so far (getrusage RUSAGE_SELF: all threads, the Go runtime's too).
func Usage() CPU {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return CPU{}
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)*1e-6 }
	return CPU{UserS: sec(ru.Utime), SysS: sec(ru.Stime), CtxVol: ru.Nvcsw, CtxInvol: ru.Nivcsw}
}

// Sub is the CPU spent between two Usage readings.
func (c CPU) Sub(before CPU) CPU {
	return CPU{c.UserS - before.UserS, c.SysS - before.SysS, c.CtxVol - before.CtxVol, c.CtxInvol - before.CtxInvol}
}

// Record is one result line (docs/json-schema.md): the harness fills in placement and context.
type Record struct {
	Name        string             `json:"name"`
	Status      string             `json:"status,omitempty"`
	Error       string             `json:"error,omitempty"`
	Params      map[string]any     `json:"params,omitempty"`
	Ops         uint64             `json:"ops"`
	Bytes       uint64             `json:"bytes"`
	WallS       float64            `json:"wall_s"`
	TimePerOpNs float64            `json:"time_per_op_ns"`
	Rates       map[string]float64 `json:"rates"`
	CPU         CPU                `json:"cpu"`
	Integrity   Integrity          `json:"integrity"`
	Latency     *Latency           `json:"latency_ns,omitempty"`
	Extra       map[string]any     `json:"extra,omitempty"`
}

// SubBits is the harness's histogram layout (src/core/stats/histogram.hpp, HdrHistogram's
// log-linear buckets): values below 2^(SubBits+1) have a bucket each, then every power of two is
// cut into 2^SubBits buckets of equal width.
const SubBits = 7

// BucketLowest is the lowest value of v's bucket, which stands for v in the record's histogram.
func BucketLowest(v uint64) uint64 {
	if v < 2<<SubBits {
		return v
	}
	shift := uint(bits.Len64(v)-1) - SubBits
	return v >> shift << shift
}

// Hist is a latency histogram in the harness's layout; count, mean, min and max are exact.
type Hist struct {
	buckets         map[uint64]uint64
	Count, Min, Max uint64
	sum             float64
}

// Record adds one value (ns).
func (h *Hist) Record(v uint64) {
	if h.buckets == nil {
		h.buckets = map[uint64]uint64{}
	}
	h.buckets[BucketLowest(v)]++
	if h.Count == 0 || v < h.Min {
		h.Min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.Count++
	h.sum += float64(v)
}

// Histogram is the sparse histogram of a latency_ns object: each non-empty bucket's lowest value
// and its count, in order of value.
type Histogram struct {
	SubBuckets int      `json:"sub_buckets"`
	Values     []uint64 `json:"values"`
	Counts     []uint64 `json:"counts"`
}

// Latency is the record's latency_ns object (docs/json-schema.md): its kind, the exact figures,
// and the histogram the harness computes the percentiles from.
type Latency struct {
	Kind      string    `json:"kind"`
	Count     uint64    `json:"count"`
	Mean      float64   `json:"mean"`
	Min       uint64    `json:"min"`
	Max       uint64    `json:"max"`
	Histogram Histogram `json:"histogram"`
}

// Latency is h as a record's latency_ns of kind; nil when h is empty.
func (h *Hist) Latency(kind string) *Latency {
	if h.Count == 0 {
		return nil
	}
	l := &Latency{Kind: kind, Count: h.Count, Mean: h.sum / float64(h.Count), Min: h.Min, Max: h.Max,
		Histogram: Histogram{SubBuckets: 1 << SubBits}}
	for v := range h.buckets {
		l.Histogram.Values = append(l.Histogram.Values, v)
	}
	sort.Slice(l.Histogram.Values, func(i, j int) bool { return l.Histogram.Values[i] < l.Histogram.Values[j] })
	for _, v := range l.Histogram.Values {
		l.Histogram.Counts = append(l.Histogram.Counts, h.buckets[v])
	}
	return l
}

// Measured fills the timing fields from ops done in wall.
func (r *Record) Measured(ops uint64, wall time.Duration, cpu CPU) {
	r.Ops = ops
	r.WallS = wall.Seconds()
	r.CPU = cpu
	r.Rates = map[string]float64{}
	if ops > 0 && r.WallS > 0 {
		r.TimePerOpNs = r.WallS * 1e9 / float64(ops)
		r.Rates["ops_per_s"] = float64(ops) / r.WallS
	}
}

// Write prints the record as one line.
func (r *Record) Write(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
