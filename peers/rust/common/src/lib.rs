//! What the Rust peers share: the command line of the peer contract (docs/json-schema.md#peers),
//! the record they print, the integrity tally of the runtime suite (the same rules as
//! src/mechanisms/runtime/common.cpp), the measured window, and the fileio suite's test-file
//! format and IO plan (the same as src/mechanisms/fileio/common.cpp, so every block read is
//! verified against the content the harness wrote).
//!
//! The record is written by hand rather than with serde: it is a dozen flat fields, and serde's
//! derive would be most of the workspace's build time.

pub mod bench;
pub mod fileio;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

/// `--name=value` arguments. A bare `--name` counts as `true`.
pub struct Args {
    map: BTreeMap<String, String>,
}

impl Args {
    pub fn from_env() -> Args {
        Self::parse(std::env::args().skip(1))
    }

    pub fn parse(args: impl IntoIterator<Item = String>) -> Args {
        let mut map = BTreeMap::new();
        for a in args {
            let Some(rest) = a.strip_prefix("--") else { usage(&format!("unexpected argument '{a}'; use --name=value")) };
            match rest.split_once('=') {
                Some((k, v)) => map.insert(k.to_string(), v.to_string()),
                None => map.insert(rest.to_string(), "true".to_string()),
            };
        }
        Args { map }
    }

    pub fn str(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(String::as_str)
    }

    pub fn str_or<'a>(&'a self, k: &str, def: &'a str) -> &'a str {
        self.str(k).unwrap_or(def)
    }

    pub fn u64_or(&self, k: &str, def: u64) -> u64 {
        match self.str(k) {
            None => def,
            Some(v) => v.parse().unwrap_or_else(|_| usage(&format!("--{k}={v} is not a whole number"))),
        }
    }

    pub fn f64_or(&self, k: &str, def: f64) -> f64 {
        match self.str(k) {
            None => def,
            Some(v) => v.parse().unwrap_or_else(|_| usage(&format!("--{k}={v} is not a number"))),
        }
    }

    /// CPUs of `--cpus` (a list like 0,1); empty when not given.
    pub fn cpus(&self) -> Vec<usize> {
        self.str_or("cpus", "").split(',').filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect()
    }

    /// Worker threads for a multi-threaded runtime: one per CPU of --cpus, else per allowed CPU.
    pub fn worker_threads(&self) -> usize {
        let c = self.cpus().len();
        if c > 0 {
            c
        } else {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        }
    }
}

/// Bad input: one line naming the fix, exit 2 (the project's rule for every executable).
pub fn usage(msg: &str) -> ! {
    eprintln!("ipclab-peer: {msg}");
    std::process::exit(2)
}

/// The integrity counters of the harness's record.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Integrity {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupt: u64,
}

/// What a count-based run observed: results counted, their sum, results that came out of order.
#[derive(Clone, Copy, Default, Debug)]
pub struct Tally {
    pub count: u64,
    pub sum: u64,
    pub disorder: u64,
}

impl Tally {
    /// Counts `got` where `want` was due (a channel message, a task's result).
    #[inline]
    pub fn take(&mut self, got: u64, want: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(got);
        self.disorder += (got != want) as u64;
    }

    pub fn merge(&mut self, o: Tally) {
        self.count += o.count;
        self.sum = self.sum.wrapping_add(o.sum);
        self.disorder += o.disorder;
    }
}

/// Sum of 0..n-1: what n tasks returning their index, or n messages numbered from 0, add up to.
pub const fn index_sum(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        n * (n - 1) / 2
    }
}

/// The verdict of `got` against the expected count and sum: a shortfall is lost, a surplus
/// duplicated, a wrong sum or an out-of-order result corrupt.
pub fn verify(want_count: u64, want_sum: u64, got: &Tally) -> Integrity {
    Integrity {
        sent: want_count,
        received: got.count,
        lost: want_count.saturating_sub(got.count),
        duplicated: got.count.saturating_sub(want_count),
        corrupt: got.disorder + (got.count == want_count && got.sum != want_sum) as u64,
    }
}

/// CPU time of the whole process (every thread of it), as the harness's record counts it.
#[derive(Clone, Copy, Default, Debug)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
    pub ctx_vol: i64,
    pub ctx_invol: i64,
}

impl Cpu {
    pub fn now() -> Cpu {
        // SAFETY: getrusage fills the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Cpu { user_s: tv(ru.ru_utime), sys_s: tv(ru.ru_stime), ctx_vol: ru.ru_nvcsw, ctx_invol: ru.ru_nivcsw }
    }

    pub fn since(self, start: Cpu) -> Cpu {
        Cpu {
            user_s: self.user_s - start.user_s,
            sys_s: self.sys_s - start.sys_s,
            ctx_vol: self.ctx_vol - start.ctx_vol,
            ctx_invol: self.ctx_invol - start.ctx_invol,
        }
    }
}

/// A latency histogram in the harness's layout (src/core/stats/histogram.hpp, HdrHistogram's
/// log-linear buckets, 2^7 per power of two): each value is kept as its bucket's lowest value,
/// which is what the record's `histogram.values` hold and the harness reads back (add_sparse);
/// count, mean, min and max are exact.
#[derive(Clone, Default, Debug)]
pub struct Hist {
    buckets: BTreeMap<u64, u64>,
    pub count: u64,
    sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Hist {
    /// The harness's sub-bucket bits (Histogram::kSubBits).
    pub const SUB_BITS: u32 = 7;

    /// The lowest value of `v`'s bucket: values below 2^(SUB_BITS+1) have a bucket each, then each
    /// power of two is cut into 2^SUB_BITS buckets of equal width.
    pub fn bucket_lowest(v: u64) -> u64 {
        if v < 2 << Self::SUB_BITS {
            return v;
        }
        let shift = 63 - v.leading_zeros() - Self::SUB_BITS;
        (v >> shift) << shift
    }

    pub fn record(&mut self, v: u64) {
        *self.buckets.entry(Self::bucket_lowest(v)).or_insert(0) += 1;
        self.min = if self.count == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v as u128;
    }

    pub fn merge(&mut self, o: &Hist) {
        if o.count == 0 {
            return;
        }
        for (&v, &c) in &o.buckets {
            *self.buckets.entry(v).or_insert(0) += c;
        }
        self.min = if self.count == 0 { o.min } else { self.min.min(o.min) };
        self.max = self.max.max(o.max);
        self.count += o.count;
        self.sum += o.sum;
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The record's `latency_ns` object (docs/json-schema.md): `kind`, the exact figures, and the
    /// sparse histogram the harness computes the percentiles from.
    pub fn to_json(&self, kind: &str) -> String {
        let values: Vec<String> = self.buckets.keys().map(|v| v.to_string()).collect();
        let counts: Vec<String> = self.buckets.values().map(|c| c.to_string()).collect();
        format!(
            "{{\"kind\":{},\"count\":{},\"mean\":{},\"min\":{},\"max\":{},\"histogram\":{{\"sub_buckets\":{},\"values\":[{}],\"counts\":[{}]}}}}",
            json_str(kind),
            self.count,
            json_f64(self.mean()),
            self.min,
            self.max,
            1u64 << Self::SUB_BITS,
            values.join(","),
            counts.join(",")
        )
    }
}

/// One record of the harness's schema (docs/json-schema.md).
#[derive(Default)]
pub struct Record {
    pub name: String,
    pub ops: u64,
    pub bytes: u64,
    pub wall_s: f64,
    pub cpu: Cpu,
    pub integrity: Integrity,
    pub rates: Vec<(String, f64)>,
    pub extra: Vec<(String, String)>,
    /// `latency_ns`: its kind (batch_mean, io, ...) and histogram; none when empty.
    pub latency: Option<(&'static str, Hist)>,
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(o, "\\u{:04x}", c as u32).unwrap(),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:e}")
    } else {
        "0".to_string()
    }
}

impl Record {
    pub fn extra(&mut self, k: &str, v: impl ToString) -> &mut Self {
        self.extra.push((k.to_string(), v.to_string()));
        self
    }

    pub fn to_json(&self) -> String {
        let i = &self.integrity;
        let c = &self.cpu;
        let mut s = format!(
            "{{\"name\":{},\"ops\":{},\"bytes\":{},\"wall_s\":{},\"cpu\":{{\"user_s\":{},\"sys_s\":{},\"ctx_vol\":{},\"ctx_invol\":{}}},\
             \"integrity\":{{\"sent\":{},\"received\":{},\"lost\":{},\"duplicated\":{},\"corrupt\":{}}}",
            json_str(&self.name),
            self.ops,
            self.bytes,
            json_f64(self.wall_s),
            json_f64(c.user_s),
            json_f64(c.sys_s),
            c.ctx_vol,
            c.ctx_invol,
            i.sent,
            i.received,
            i.lost,
            i.duplicated,
            i.corrupt
        );
        let rates: Vec<String> = self.rates.iter().map(|(k, v)| format!("{}:{}", json_str(k), json_f64(*v))).collect();
        write!(s, ",\"rates\":{{{}}}", rates.join(",")).unwrap();
        if let Some((kind, h)) = self.latency.as_ref().filter(|(_, h)| h.count > 0) {
            write!(s, ",\"latency_ns\":{}", h.to_json(kind)).unwrap();
        }
        let extra: Vec<String> = self.extra.iter().map(|(k, v)| format!("{}:{}", json_str(k), json_str(v))).collect();
        write!(s, ",\"extra\":{{{}}}}}", extra.join(",")).unwrap();
        s
    }

    /// Prints the record as the peer's one line of output.
    pub fn print(&self) {
        println!("{}", self.to_json());
    }
}

/// The cost of one clock read (Instant::now), in ns: the least of a few timed runs of 1000.
pub fn clock_read_ns() -> f64 {
    (0..5)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..1000 {
                std::hint::black_box(Instant::now());
            }
            t0.elapsed().as_nanos() as f64 / 1000.0
        })
        .fold(f64::INFINITY, f64::min)
}

/// The size, in units of `n`, of one timed batch of a count-based body: the smallest power of two
/// (at most `n`) whose run lasts 100 times what timing it costs (a clock read, and starting the
/// body again: the intercept of the runs of 1 and 2 units), so that timing in batches costs the
/// run under 1%, whatever this machine's clock and the body's speed. `time(m)` runs the body on
/// m units, untimed as far as the record goes, and returns its seconds.
pub fn batch_units(n: u64, mut time: impl FnMut(u64) -> f64) -> u64 {
    if n < 2 {
        return 1;
    }
    let least = |time: &mut dyn FnMut(u64) -> f64, m: u64| (0..3).map(|_| time(m)).fold(f64::INFINITY, f64::min);
    let t1 = least(&mut time, 1);
    let t2 = least(&mut time, 2);
    let restart = (2.0 * t1 - t2).max(0.0);
    let target = 100.0 * (clock_read_ns() * 1e-9 + restart);
    let (mut m, mut tm) = (1, t1);
    while tm < target && m < n {
        m = (m * 2).min(n);
        tm = time(m);
    }
    m
}

/// Runs a count-based body like the harness's Session::measure: untimed for `warmup_s` seconds
/// (runs of one step, two, four ...; none at 0), then timed. `body(c)` runs the bench with a count of c (tasks, switches, timers,
/// messages per pair, yields per task) and does `ops_of(c)` operations, which return their indexes
/// 0..ops_of(c)-1. The timed run does the count `n` in batches of batch_units units of `step`
/// (found by untimed runs, counted as warm-up; the last batch takes what is left): a batch
/// restarts the body, so `step` keeps what a count shapes whole — spawn's `batch` of tasks in
/// flight, a channel's `capacity`. One clock read between two batches: each batch's time per op
/// (ns) is one sample of the record's latency, kind batch_mean, and the batches tile the window
/// (their ops-weighted mean is its time per op). Every run's tally is verified:
/// lost/duplicated/corrupt add up over all runs, sent/received are the timed batches'.
pub fn measure_counted(
    rec: &mut Record,
    warmup_s: f64,
    n: u64,
    step: u64,
    ops_of: impl Fn(u64) -> u64,
    mut body: impl FnMut(u64) -> Tally,
) {
    let step = step.clamp(1, n.max(1));
    let mut seen = Integrity::default();
    let fold = |c: u64, got: Tally, seen: &mut Integrity| {
        let ops = ops_of(c);
        let run = verify(ops, index_sum(ops), &got);
        seen.lost += run.lost;
        seen.duplicated += run.duplicated;
        seen.corrupt += run.corrupt;
        (ops, run)
    };
    if warmup_s > 0.0 {
        // Warm-up for --warmup's time, not a whole count: n is grown to fill the window (the
        // harness's fold_peer), and a warm-up of all n doubled every repetition. Runs of one step,
        // two, four ... (at most n), until the time has passed.
        let start = Instant::now();
        let mut c = step.min(n);
        loop {
            let t = body(c);
            fold(c, t, &mut seen);
            if start.elapsed().as_secs_f64() >= warmup_s {
                break;
            }
            c = (c * 2).min(n);
        }
    }
    let k = batch_units((n + step - 1) / step, |m| {
        let c = (m * step).min(n);
        let t0 = Instant::now();
        let t = body(c);
        let dt = t0.elapsed().as_secs_f64();
        fold(c, t, &mut seen);
        dt
    });
    let mut batches = Hist::default();
    let (mut sent, mut received, mut ops, mut done) = (0, 0, 0, 0);
    let c0 = Cpu::now();
    let t0 = Instant::now();
    let mut last = t0;
    while done < n {
        let c = (k * step).min(n - done);
        let t = body(c);
        let now = Instant::now();
        let (o, run) = fold(c, t, &mut seen);
        let ns = now.duration_since(last).as_nanos() as u64;
        batches.record((ns + o / 2) / o.max(1));
        last = now;
        sent += run.sent;
        received += run.received;
        ops += o;
        done += c;
    }
    rec.wall_s = last.duration_since(t0).as_secs_f64();
    rec.cpu = Cpu::now().since(c0);
    seen.sent = sent;
    seen.received = received;
    rec.integrity = seen;
    rec.ops = ops;
    rec.latency = Some(("batch_mean", batches));
    rec.extra("batch_units", k * step);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    Warmup,
    Measure,
    Stop,
}

/// The harness's phase, as the stdin reader thread last saw it: 0 warm-up, 1 measure, 2 stop.
static HARNESS_PHASE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// A duration-driven run's window, bounded by the harness's clock (PeerPhases in
/// src/core/peers/peer.hpp): `new` prints `ready` on stdout, and a thread then reads the harness's lines
/// on stdin — `measure` opens the window, `stop` (or the end of input: a harness that died)
/// closes it. The workers check the phase between operations; the first to see a boundary
/// samples the time and the process's CPU there. Single-threaded (the peers' IO loops run on one
/// thread).
pub struct Window {
    phase: std::cell::Cell<Phase>,
    t0: std::cell::Cell<Option<Instant>>,
    t1: std::cell::Cell<Option<Instant>>,
    c0: std::cell::Cell<Cpu>,
    c1: std::cell::Cell<Cpu>,
}

impl Window {
    pub fn new() -> Window {
        std::thread::spawn(|| {
            use std::io::BufRead;
            let mut lines = std::io::stdin().lock().lines();
            loop {
                let next = match lines.next() {
                    Some(Ok(l)) if l.trim() == "measure" => 1,
                    Some(Ok(l)) if l.trim() != "stop" => continue,
                    _ => 2,
                };
                HARNESS_PHASE.fetch_max(next, std::sync::atomic::Ordering::Release);
                if next == 2 {
                    return;
                }
            }
        });
        println!("ready");
        Window {
            phase: std::cell::Cell::new(Phase::Warmup),
            t0: Default::default(),
            t1: Default::default(),
            c0: Default::default(),
            c1: Default::default(),
        }
    }

    /// The phase now; crossing a boundary is recorded by whoever sees it first.
    #[inline]
    pub fn tick(&self) -> Phase {
        let ph = self.phase.get();
        if ph == Phase::Stop {
            return ph;
        }
        let want = match HARNESS_PHASE.load(std::sync::atomic::Ordering::Acquire) {
            0 => Phase::Warmup,
            1 => Phase::Measure,
            _ => Phase::Stop,
        };
        if want != ph {
            let now = Instant::now();
            if self.t0.get().is_none() {
                self.t0.set(Some(now));
                self.c0.set(Cpu::now());
            }
            if want == Phase::Stop {
                self.t1.set(Some(now));
                self.c1.set(Cpu::now());
            }
            self.phase.set(want);
        }
        want
    }

    /// Wall time and CPU of the measured window (after Stop was seen).
    pub fn measured(&self) -> (f64, Cpu) {
        match (self.t0.get(), self.t1.get()) {
            (Some(a), Some(b)) => ((b - a).as_secs_f64(), self.c1.get().since(self.c0.get())),
            _ => (0.0, Cpu::default()),
        }
    }
}

/// Yields to the scheduler once: wakes itself and returns Pending, so the task goes to the back
/// of the run queue. Monoio and Compio export no yield_now; this is what Tokio's does minus its
/// budget bookkeeping, and what their own examples write by hand.
pub fn yield_now() -> YieldNow {
    YieldNow(false)
}

pub struct YieldNow(bool);

impl std::future::Future for YieldNow {
    type Output = ();
    #[inline]
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        // black_box: the wake stays a real call through the waker's vtable. Inlined into Monoio's
        // block_on, whose root waker is a known constant, LLVM otherwise proved the whole yield
        // loop pure and deleted it (1,048,576 yields "took" 40 ns).
        std::hint::black_box(cx.waker()).wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Name of the channel a runtime bench used, from `--channel` (`native` = the runtime's own
/// fastest, `futures` = futures::channel::mpsc, the reference's choice).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Native,
    Futures,
}

impl ChannelKind {
    pub fn from_args(a: &Args) -> ChannelKind {
        match a.str_or("channel", "native") {
            "native" => ChannelKind::Native,
            "futures" => ChannelKind::Futures,
            other => usage(&format!("--channel={other}: use native or futures")),
        }
    }
}

/// How a runtime bench's body is driven, from `--drive` (issue 20: measured as each runtime's
/// authors measure it). `BlockOn` polls the body as the root future of `block_on`, as condy-bench
/// does; `Spawned` spawns it as a task and awaits its join handle from `block_on`, so the body's
/// wake-ups go through the scheduler's run queue like any task's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Drive {
    BlockOn,
    Spawned,
}

impl Drive {
    pub fn from_args(a: &Args) -> Drive {
        match a.str_or("drive", "block_on") {
            "block_on" => Drive::BlockOn,
            "spawned" => Drive::Spawned,
            other => usage(&format!("--drive={other}: use block_on or spawned")),
        }
    }

    /// The record's `drive` extra.
    pub fn name(self) -> &'static str {
        match self {
            Drive::BlockOn => "block_on",
            Drive::Spawned => "spawned",
        }
    }
}

/// Tasks and yields per task of the many-task switch, from `--tasks` and `--n` (n switches in
/// all, rounded down to a multiple of tasks).
pub fn switch_many_split(a: &Args) -> (u64, u64) {
    let n = a.u64_or("n", 16384);
    let tasks = a.u64_or("tasks", 64);
    if tasks == 0 || tasks > n {
        usage(&format!("--tasks={tasks}: use 1..n (--n={n})"));
    }
    (tasks, n / tasks)
}

/// A peer's main: parses the command line and runs `--bench`, echo and fileio by their own
/// functions, every other name by `runtime` (which rejects what it does not know).
pub fn peer_main(echo: fn(&Args), fileio: fn(&Args), runtime: fn(&Args, &str)) {
    let a = Args::from_env();
    match a.str_or("bench", "") {
        "echo" => echo(&a),
        "fileio" => fileio(&a),
        b => runtime(&a, b),
    }
}

/// The peer's exit path for a benchmark it does not know.
pub fn unknown_bench(bench: &str) -> ! {
    usage(&format!(
        "--bench={bench}: use spawn, switch, switch_many, channel, channel_pairs, timer, echo or fileio"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_counts_loss_duplication_and_corruption() {
        let mut t = Tally::default();
        for i in 0..10 {
            t.take(i, i);
        }
        assert_eq!(verify(10, index_sum(10), &t), Integrity { sent: 10, received: 10, ..Default::default() });
        assert_eq!(verify(11, index_sum(11), &t).lost, 1);
        assert_eq!(verify(9, index_sum(9), &t).duplicated, 1);
        let mut bad = Tally::default();
        bad.take(1, 0);
        assert_eq!(verify(1, 0, &bad).corrupt, 2); // out of order and the wrong sum
    }

    #[test]
    fn record_is_one_json_line() {
        let mut r = Record { name: "runtime/x\"y".into(), ops: 3, wall_s: 0.5, ..Default::default() };
        r.extra("runtime", "tokio");
        let j = r.to_json();
        assert!(!j.contains('\n'));
        assert!(j.starts_with("{\"name\":\"runtime/x\\\"y\",\"ops\":3,"));
        assert!(j.ends_with(",\"extra\":{\"runtime\":\"tokio\"}}"));
    }

    #[test]
    fn hist_keeps_the_harness_buckets_and_exact_figures() {
        // Below 256 a bucket per value; from 256 on, 128 per power of two (2 wide in [256, 512)).
        assert_eq!(Hist::bucket_lowest(255), 255);
        assert_eq!(Hist::bucket_lowest(257), 256);
        assert_eq!(Hist::bucket_lowest(1000), 1000);
        assert_eq!(Hist::bucket_lowest(1001), 1000);
        let mut h = Hist::default();
        for v in [3, 5, 257] {
            h.record(v);
        }
        let mut o = Hist::default();
        o.record(1);
        h.merge(&o);
        assert_eq!((h.count, h.min, h.max), (4, 1, 257));
        assert_eq!(h.mean(), 266.0 / 4.0);
        let j = h.to_json("io");
        assert!(j.starts_with("{\"kind\":\"io\",\"count\":4,"));
        assert!(j.ends_with("\"values\":[1,3,5,256],\"counts\":[1,1,1,1]}}"));
        let mut r = Record { name: "x".into(), latency: Some(("batch_mean", Hist::default())), ..Default::default() };
        assert!(!r.to_json().contains("latency_ns"), "an empty histogram is no latency");
        r.latency = Some(("batch_mean", h));
        assert!(r.to_json().contains(",\"latency_ns\":{\"kind\":\"batch_mean\","));
    }

    #[test]
    fn measured_batches_tile_the_run_and_keep_the_integrity() {
        let mut r = Record::default();
        // Two units of ops each: 0..2m-1 in order.
        let body = |m: u64| {
            let mut t = Tally::default();
            for i in 0..2 * m {
                t.take(std::hint::black_box(i), i);
            }
            t
        };
        measure_counted(&mut r, 0.0, 1000, 1, |m| 2 * m, body);
        assert_eq!(r.ops, 2000);
        assert_eq!(r.integrity, Integrity { sent: 2000, received: 2000, ..Default::default() });
        let (kind, h) = r.latency.as_ref().unwrap();
        assert_eq!(*kind, "batch_mean");
        assert!(h.count >= 1);
        // A body that loses one result per run is caught in every batch.
        let mut bad = Record::default();
        measure_counted(&mut bad, 0.0, 4, 1, |m| m, |m| {
            let mut t = Tally::default();
            for i in 0..m - 1 {
                t.take(i, i);
            }
            t
        });
        assert_eq!(bad.integrity.sent - bad.integrity.received, bad.latency.as_ref().unwrap().1.count);
        // Batches in whole steps, the last one what is left: 1000 in steps of 64, every run's
        // count a multiple of 64 but the whole 1000 or the timed run's last.
        let mut counts = Vec::new();
        let mut r = Record::default();
        measure_counted(&mut r, 0.0, 1000, 64, |c| c, |c| {
            counts.push(c);
            let mut t = Tally::default();
            for i in 0..c {
                t.take(i, i);
            }
            t
        });
        assert_eq!(r.ops, 1000);
        let last = counts.len() - 1;
        assert!(counts[..last].iter().all(|&c| c % 64 == 0 || c == 1000), "{counts:?}");
        assert!(r.integrity.sent == 1000 && r.integrity.received == 1000);
    }

    #[test]
    fn args_parse_and_reject() {
        let a = Args::parse(["--n=5".to_string(), "--cpus=0,1".to_string(), "--flag".to_string()]);
        assert_eq!(a.u64_or("n", 1), 5);
        assert_eq!(a.u64_or("m", 7), 7);
        assert_eq!(a.cpus(), vec![0, 1]);
        assert_eq!(a.str("flag"), Some("true"));
    }

    #[test]
    fn drive_and_switch_many_args() {
        let a = Args::parse(["--drive=spawned".to_string(), "--n=1000".to_string(), "--tasks=64".to_string()]);
        assert_eq!(Drive::from_args(&a), Drive::Spawned);
        assert_eq!(Drive::from_args(&Args::parse([])), Drive::BlockOn);
        // 1000 switches over 64 tasks: 15 each, 960 in all.
        assert_eq!(switch_many_split(&a), (64, 15));
        assert_eq!(switch_many_split(&Args::parse(["--n=7".to_string(), "--tasks=7".to_string()])), (7, 1));
    }

    #[test]
    fn yield_now_is_pending_once() {
        use std::future::Future;
        use std::task::{Context, Poll, Wake, Waker};
        struct Count(std::sync::atomic::AtomicU32);
        impl Wake for Count {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let c = std::sync::Arc::new(Count(Default::default()));
        let w = Waker::from(c.clone());
        let mut cx = Context::from_waker(&w);
        let mut y = std::pin::pin!(yield_now());
        assert!(y.as_mut().poll(&mut cx).is_pending());
        assert_eq!(c.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(y.as_mut().poll(&mut cx), Poll::Ready(()));
    }
}
