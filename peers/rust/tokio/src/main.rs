//! ipclab-peer-tokio: the runtime, echo and fileio benches on Tokio, `--flavor=ct` (the
//! current_thread runtime) or `--flavor=mt` (multi_thread, one worker per CPU of --cpus).
//! Started by the harness (src/mechanisms/*/peers_rust.cpp) as `--bench=NAME --param=value ...`.
use std::future::Future;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use ipclab_peer_common::bench::{self, Sched};
use ipclab_peer_common::fileio::{AlignedBuf, IoTally, Job};
use ipclab_peer_common::{
    measure_counted, switch_many_split, unknown_bench, usage, Args, ChannelKind, Drive, Phase, Record, Tally,
    Window,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ECHO_MAX: usize = 65536;

struct Rt {
    rt: tokio::runtime::Runtime,
    mt: bool,
}

impl Rt {
    fn new(a: &Args) -> (Rt, &'static str) {
        let (mut b, mt, name) = match a.str_or("flavor", "ct") {
            "ct" => (tokio::runtime::Builder::new_current_thread(), false, "tokio_ct"),
            "mt" => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(a.worker_threads());
                (b, true, "tokio_mt")
            }
            f => usage(&format!("--flavor={f}: use ct (current_thread) or mt (multi_thread)")),
        };
        let rt = b.enable_all().build().unwrap_or_else(|e| usage(&format!("tokio runtime: {e}")));
        (Rt { rt, mt }, name)
    }

    /// Runs `f` as `drive` says: as block_on's root future (polled by block_on's own loop on the
    /// calling thread, for multi_thread too), or as a task joined from block_on (on a worker for
    /// multi_thread). tokio::task::yield_now defers its wake-up until the scheduler has polled its
    /// driver: on current_thread, in both modes, a lone yielding task costs a driver poll
    /// (park_yield) per yield, and N yielding tasks share one per round. Outside a scheduler's
    /// context (multi_thread's block_on thread) it wakes at once, with no driver poll.
    fn run<F: std::future::Future<Output = Tally> + Send + 'static>(&self, drive: Drive, f: F) -> Tally {
        match drive {
            Drive::BlockOn => self.rt.block_on(f),
            Drive::Spawned => self.rt.block_on(async { tokio::spawn(f).await.expect("bench task panicked") }),
        }
    }
}

/// The shared switch and timer benches (ipclab_peer_common::bench) run on Tokio's yield and sleep;
/// spawn and channel stay here, as Tokio's spawn needs Send (see bench::Spawn).
impl Sched for Rt {
    #[inline]
    fn yield_now() -> impl Future<Output = ()> {
        tokio::task::yield_now()
    }
    #[inline]
    fn sleep(d: Duration) -> impl Future<Output = ()> {
        tokio::time::sleep(d)
    }
}

async fn spawn_join(n: u64, batch: u64) -> Tally {
    let mut hs = Vec::with_capacity(n.min(batch) as usize);
    let mut t = Tally::default();
    let mut base = 0;
    while base < n {
        let end = n.min(base + batch);
        for i in base..end {
            hs.push(tokio::spawn(async move { i }));
        }
        for (i, h) in (base..).zip(hs.drain(..)) {
            t.take(h.await.expect("task panicked"), i);
        }
        base = end;
    }
    t
}

/// The many-task switch (bench::switch_many, written again for Tokio's Send spawn): `tasks`
/// tasks yielding `per` times each, task k counting k*per .. k*per+per-1, joined in order.
async fn switch_many(tasks: u64, per: u64) -> Tally {
    let hs: Vec<_> = (0..tasks).map(|k| tokio::spawn(bench::switch_task::<Rt>(k * per, per))).collect();
    let mut all = Tally::default();
    for h in hs {
        all.merge(h.await.expect("task panicked"));
    }
    all
}

/// `pairs` producer/consumer pairs, n messages each; pair p's message i carries p*n + i.
async fn pairs(kind: ChannelKind, pairs: u64, n: u64, cap: usize) -> Tally {
    let mut consumers = Vec::new();
    let mut producers = Vec::new();
    for p in 0..pairs {
        let first = p * n;
        match kind {
            ChannelKind::Native => {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(cap);
                consumers.push(tokio::spawn(async move {
                    let mut t = Tally::default();
                    while let Some(v) = rx.recv().await {
                        t.take(v, first + t.count);
                    }
                    t
                }));
                producers.push(tokio::spawn(async move {
                    for i in 0..n {
                        tx.send(first + i).await.expect("receiver gone");
                    }
                }));
            }
            ChannelKind::Futures => {
                // futures' bounded channel holds buffer + one slot per sender: cap in all.
                let (mut tx, mut rx) = futures_channel::mpsc::channel::<u64>(cap - 1);
                consumers.push(tokio::spawn(async move {
                    let mut t = Tally::default();
                    while let Some(v) = rx.next().await {
                        t.take(v, first + t.count);
                    }
                    t
                }));
                producers.push(tokio::spawn(async move {
                    for i in 0..n {
                        tx.send(first + i).await.expect("receiver gone");
                    }
                }));
            }
        }
    }
    for h in producers {
        h.await.expect("producer panicked");
    }
    let mut all = Tally::default();
    for h in consumers {
        all.merge(h.await.expect("consumer panicked"));
    }
    all
}

fn runtime_bench(a: &Args, bench: &str) {
    let (rt, name) = Rt::new(a);
    let n = a.u64_or("n", 16384);
    let warmup = a.f64_or("warmup", 0.0);
    let drive = Drive::from_args(a);
    let mut rec = Record { name: format!("runtime/{bench}_{name}"), ..Default::default() };
    match bench {
        "spawn" => {
            let batch = a.u64_or("batch", 1024).max(1);
            // Batches of whole `batch`es: the tasks in flight stay `batch`.
            measure_counted(&mut rec, warmup, n, batch, |m| m, |m| rt.run(drive, spawn_join(m, batch)));
        }
        "switch" => measure_counted(&mut rec, warmup, n, 1, |m| m, |m| rt.run(drive, bench::switch::<Rt>(m))),
        "switch_many" => {
            let (tasks, per) = switch_many_split(a);
            // A unit is one yield of every task.
            measure_counted(&mut rec, warmup, per, 1, |m| tasks * m, |m| rt.run(drive, switch_many(tasks, m)));
            rec.extra("tasks", tasks);
        }
        "timer" => {
            let d = Duration::from_micros(a.u64_or("delay_us", 0));
            measure_counted(&mut rec, warmup, n, 1, |m| m, |m| rt.run(drive, bench::timer::<Rt>(m, d)));
        }
        "channel" | "channel_pairs" => {
            let kind = ChannelKind::from_args(a);
            let p = if bench == "channel" { 1 } else { a.u64_or("pairs", 4).max(1) };
            let cap = a.u64_or("capacity", 1024) as usize;
            if cap == 0 {
                usage("--capacity=0: Tokio's and futures' channels need at least 1");
            }
            // A unit is one message of every pair; batches of whole `capacity`s, so that a batch
            // fills and drains its channels as the steady state does.
            measure_counted(&mut rec, warmup, n, cap as u64, |m| p * m, |m| rt.run(drive, pairs(kind, p, m, cap)));
            rec.extra("channel", if kind == ChannelKind::Native { "tokio::sync::mpsc" } else { "futures::channel::mpsc" });
        }
        _ => unknown_bench(bench),
    }
    rec.extra("runtime", name).extra("drive", drive.name());
    rec.extra("tokio_workers", if rt.mt { a.worker_threads() } else { 1 });
    rec.print();
}

/// The echo contract (docs/echo.md): listen on 127.0.0.1:0, print the port, echo until killed.
fn echo(a: &Args) {
    let (rt, _) = Rt::new(a);
    rt.rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| usage(&format!("bind: {e}")));
        println!("{}", l.local_addr().unwrap().port());
        loop {
            let (mut s, _) = l.accept().await.expect("accept");
            tokio::spawn(async move {
                let mut buf = vec![0u8; ECHO_MAX];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
}

/// qd tasks on the runtime, each handing pread(2) to Tokio's blocking pool (tokio::fs is that
/// too; Tokio has no io_uring file IO) and verifying what comes back.
fn fileio(a: &Args) {
    let (rt, name) = Rt::new(a);
    let job = std::sync::Arc::new(Job::from_args(a));
    let file = std::sync::Arc::new(job.open_std());
    let win = Window::new();
    let win = std::sync::Arc::new(std::sync::Mutex::new(win));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = rt.rt.block_on(async {
        let mut hs = Vec::new();
        for _ in 0..job.qd {
            let (job, file, win, next) = (job.clone(), file.clone(), win.clone(), next.clone());
            hs.push(tokio::spawn(async move {
                let mut t = IoTally::default();
                let mut buf = Some(AlignedBuf::new(job.plan.len as usize));
                loop {
                    let ph = win.lock().unwrap().tick();
                    if ph == Phase::Stop {
                        return t;
                    }
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    job.maybe_evict(n);
                    let off = job.plan.offset(n);
                    let (mut b, f, len) = (buf.take().unwrap(), file.clone(), job.plan.len);
                    let t0 = std::time::Instant::now();
                    let (res, b) = tokio::task::spawn_blocking(move || {
                        let r = std::os::unix::fs::FileExt::read_at(&*f, &mut b.as_mut_slice()[..len as usize], off);
                        (r, b)
                    })
                    .await
                    .expect("read task panicked");
                    t.complete(res, b.as_slice(), off, len, t0, ph == Phase::Measure);
                    buf = Some(b);
                }
            }));
        }
        let mut all = IoTally::default();
        for h in hs {
            all.merge(&h.await.expect("reader panicked"));
        }
        all
    });
    let (wall, cpu) = win.lock().unwrap().measured();
    let mut rec = total.record(name, wall, cpu);
    rec.extra("io", "spawn_blocking(pread)").extra("direct", job.direct);
    rec.print();
}

fn main() {
    ipclab_peer_common::peer_main(echo, fileio, runtime_bench);
}
