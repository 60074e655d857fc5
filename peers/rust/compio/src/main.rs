//! ipclab-peer-compio: the runtime, echo and fileio benches on Compio with its io_uring driver
//! (the `io-uring` feature; the record names the driver the runtime picked). Started by the
//! harness (src/mechanisms/*/peers_rust.cpp) as `--bench=NAME --param=value ...`. Compio ships no
//! channel of its own: the native one here is local-sync's, the fastest !Send bounded channel on
//! crates.io for a thread-per-core runtime; `--channel=futures` takes futures::channel::mpsc.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use ipclab_peer_common::fileio::{AlignedBuf, IoTally, Job};
use ipclab_peer_common::{
    index_sum, measure_counted, unknown_bench, usage, yield_now, Args, ChannelKind, Phase, Record, Tally, Window,
};
use compio::io::{AsyncRead, AsyncReadAt, AsyncWriteExt};
use std::os::fd::{FromRawFd, IntoRawFd};

type Runtime = compio::runtime::Runtime;

const ECHO_MAX: usize = 65536;

fn runtime(entries: u32) -> Runtime {
    let mut pb = compio::driver::ProactorBuilder::new();
    pb.capacity(entries);
    compio::runtime::RuntimeBuilder::new()
        .with_proactor(pb)
        .build()
        .unwrap_or_else(|e| usage(&format!("compio runtime: {e}")))
}

async fn spawn_join(n: u64, batch: u64) -> Tally {
    let mut hs = Vec::with_capacity(n.min(batch) as usize);
    let mut t = Tally::default();
    let mut base = 0;
    while base < n {
        let end = n.min(base + batch);
        for i in base..end {
            hs.push(compio::runtime::spawn(async move { i }));
        }
        for (i, h) in (base..).zip(hs.drain(..)) {
            t.take(h.await.ok().expect("task failed"), i);
        }
        base = end;
    }
    t
}

async fn switch(n: u64) -> Tally {
    let mut t = Tally::default();
    for i in 0..n {
        yield_now().await;
        t.take(i, i);
    }
    t
}

async fn timer(n: u64, delay: Duration) -> Tally {
    let mut t = Tally::default();
    for i in 0..n {
        let t0 = Instant::now();
        compio::time::sleep(delay).await;
        t.take(i, if t0.elapsed() < delay { !i } else { i });
    }
    t
}

/// `pairs` producer/consumer pairs, n messages each; pair p's message i carries p*n + i.
async fn pairs(kind: ChannelKind, pairs: u64, n: u64, cap: usize) -> Tally {
    let mut consumers = Vec::new();
    let mut producers = Vec::new();
    for p in 0..pairs {
        let first = p * n;
        match kind {
            ChannelKind::Native => {
                let (tx, mut rx) = local_sync::mpsc::bounded::channel::<u64>(cap);
                consumers.push(compio::runtime::spawn(async move {
                    let mut t = Tally::default();
                    while let Some(v) = rx.recv().await {
                        t.take(v, first + t.count);
                    }
                    t
                }));
                producers.push(compio::runtime::spawn(async move {
                    for i in 0..n {
                        tx.send(first + i).await.expect("receiver gone");
                    }
                }));
            }
            ChannelKind::Futures => {
                // futures' bounded channel holds buffer + one slot per sender: cap in all.
                let (mut tx, mut rx) = futures_channel::mpsc::channel::<u64>(cap - 1);
                consumers.push(compio::runtime::spawn(async move {
                    let mut t = Tally::default();
                    while let Some(v) = rx.next().await {
                        t.take(v, first + t.count);
                    }
                    t
                }));
                producers.push(compio::runtime::spawn(async move {
                    for i in 0..n {
                        tx.send(first + i).await.expect("receiver gone");
                    }
                }));
            }
        }
    }
    for h in producers {
        h.await.ok().expect("producer failed");
    }
    let mut all = Tally::default();
    for h in consumers {
        all.merge(h.await.ok().expect("consumer failed"));
    }
    all
}

/// Runs `f` as a spawned task joined from block_on: the bench's task then goes through the
/// scheduler's run queue like any task (the block_on future is polled by a loop of its own).
fn run<F: std::future::Future<Output = Tally> + 'static>(rt: &mut Runtime, f: F) -> Tally {
    rt.block_on(async move {
        let h = compio::runtime::spawn(f);
        h.await.ok().expect("bench task failed")
    })
}

fn runtime_bench(a: &Args, bench: &str) {
    let mut rt = runtime(256);
    let n = a.u64_or("n", 16384);
    let warmup = a.f64_or("warmup", 0.0);
    let mut rec = Record { name: format!("runtime/{bench}_compio"), ..Default::default() };
    match bench {
        "spawn" => {
            let batch = a.u64_or("batch", 1024).max(1);
            measure_counted(&mut rec, warmup, n, n, index_sum(n), || run(&mut rt, spawn_join(n, batch)));
        }
        "switch" => measure_counted(&mut rec, warmup, n, n, index_sum(n), || run(&mut rt, switch(n))),
        "timer" => {
            let d = Duration::from_micros(a.u64_or("delay_us", 0));
            measure_counted(&mut rec, warmup, n, n, index_sum(n), || run(&mut rt, timer(n, d)));
        }
        "channel" | "channel_pairs" => {
            let kind = ChannelKind::from_args(a);
            let p = if bench == "channel" { 1 } else { a.u64_or("pairs", 4).max(1) };
            let cap = a.u64_or("capacity", 1024) as usize;
            if cap == 0 {
                usage("--capacity=0: local-sync's and futures' bounded channels need at least 1");
            }
            let total = p * n;
            measure_counted(&mut rec, warmup, total, total, index_sum(total), || run(&mut rt, pairs(kind, p, n, cap)));
            rec.extra("channel", if kind == ChannelKind::Native { "local_sync::mpsc::bounded" } else { "futures::channel::mpsc" });
        }
        _ => unknown_bench(bench),
    }
    rec.extra("runtime", "compio").extra("driver", format!("{:?}", rt.driver_type()));
    rec.print();
}

/// The echo contract (docs/echo.md): listen on 127.0.0.1:0, print the port, echo until killed.
/// Compio's IO takes the buffer by value and gives it back with the result.
fn echo(_a: &Args) {
    let rt = runtime(4096);
    rt.block_on(async {
        let l = compio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| usage(&format!("bind: {e}")));
        println!("{}", l.local_addr().unwrap().port());
        loop {
            let (mut s, _) = l.accept().await.expect("accept");
            compio::runtime::spawn(async move {
                let mut buf = Vec::with_capacity(ECHO_MAX);
                loop {
                    let compio::BufResult(res, b) = s.read(buf).await;
                    match res {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let compio::BufResult(res, mut b) = s.write_all(b).await;
                    if res.is_err() {
                        return;
                    }
                    b.clear();
                    buf = b;
                }
            })
            .detach(); // a dropped JoinHandle cancels its task in Compio
        }
    });
}

/// An AlignedBuf lent to Compio's read_at (O_DIRECT needs 4096-aligned memory); .1 = bytes filled.
struct Buf(AlignedBuf, usize);

impl compio::buf::IoBuf for Buf {
    fn as_init(&self) -> &[u8] {
        &self.0.as_slice()[..self.1]
    }
}

impl compio::buf::SetLen for Buf {
    unsafe fn set_len(&mut self, len: usize) {
        self.1 = len;
    }
}

impl compio::buf::IoBufMut for Buf {
    fn as_uninit(&mut self) -> &mut [std::mem::MaybeUninit<u8>] {
        let s = self.0.as_mut_slice();
        // SAFETY: initialised bytes are valid MaybeUninit<u8>; the length is unchanged.
        unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len()) }
    }
}

/// qd tasks each reading with File::read_at (AsyncReadAt) through the ring, verifying every block.
fn fileio(a: &Args) {
    let job = Rc::new(Job::from_args(a));
    let rt = runtime((job.qd as u32).next_power_of_two().max(8));
    let win = Rc::new(Window::new(a.f64_or("warmup", 0.0), a.f64_or("duration", 1.0)));
    let total = rt.block_on(async {
        // SAFETY: the descriptor comes from a File this hands over.
        let file = Rc::new(unsafe { compio::fs::File::from_raw_fd(job.open_std().into_raw_fd()) });
        let next = Rc::new(Cell::new(0u64));
        let all = Rc::new(RefCell::new(IoTally::default()));
        let mut hs = Vec::new();
        for _ in 0..job.qd {
            let (job, file, win, next, all) = (job.clone(), file.clone(), win.clone(), next.clone(), all.clone());
            hs.push(compio::runtime::spawn(async move {
                let mut t = IoTally::default();
                let len = job.plan.len;
                let mut buf = Buf(AlignedBuf::new(len as usize), 0);
                loop {
                    let ph = win.tick();
                    if ph == Phase::Stop {
                        break;
                    }
                    let n = next.get();
                    next.set(n + 1);
                    job.maybe_evict(n);
                    let off = job.plan.offset(n);
                    buf.1 = 0;
                    let compio::BufResult(res, b) = file.read_at(buf, off).await;
                    t.complete(res, b.0.as_slice(), off, len, ph == Phase::Measure);
                    buf = b;
                }
                all.borrow_mut().merge(&t);
            }));
        }
        for h in hs {
            h.await.ok().expect("reader failed");
        }
        Rc::try_unwrap(all).ok().unwrap().into_inner()
    });
    let (wall, cpu) = win.measured();
    let mut rec = Record { name: "fileio/compio".into(), ops: total.ops, bytes: total.bytes, wall_s: wall, cpu, ..Default::default() };
    rec.integrity = total.integrity;
    rec.integrity.sent = total.integrity.received;
    rec.rates.push(("iops".into(), total.ops as f64 / wall.max(1e-9)));
    rec.rates.push(("MB_per_s".into(), total.bytes as f64 / wall.max(1e-9) / 1e6));
    rec.extra("engine", "compio").extra("io", format!("File::read_at ({:?})", rt.driver_type())).extra("direct", job.direct);
    rec.print();
}

fn main() {
    let a = Args::from_env();
    match a.str_or("bench", "") {
        "echo" => echo(&a),
        "fileio" => fileio(&a),
        b => runtime_bench(&a, b),
    }
}
