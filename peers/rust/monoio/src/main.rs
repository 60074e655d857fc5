//! ipclab-peer-monoio: the runtime, echo and fileio benches on Monoio with its io_uring driver
//! (IoUringDriver, timer enabled). Started by the harness (src/mechanisms/*/peers_rust.cpp) as
//! `--bench=NAME --param=value ...`. Monoio's own channel is local-sync's (from Monoio's authors,
//! !Send like Monoio's tasks); `--channel=futures` takes futures::channel::mpsc instead.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::future::Future;
use std::time::Duration;

use ipclab_peer_common::bench::{self, Sched, Spawn};
use ipclab_peer_common::fileio::{AlignedBuf, IoTally, Job};
use ipclab_peer_common::{usage, Args, Phase, Window};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};

type Runtime = monoio::Runtime<monoio::time::TimeDriver<monoio::IoUringDriver>>;

const ECHO_MAX: usize = 65536;

fn runtime(entries: u32) -> Runtime {
    monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(entries)
        .enable_timer()
        .build()
        .unwrap_or_else(|e| usage(&format!("monoio io_uring runtime: {e} (io_uring disabled or too old a kernel?)")))
}

/// The runtime the shared benches (ipclab_peer_common::bench) run on.
struct Monoio(Runtime);

impl Sched for Monoio {
    #[inline]
    fn sleep(d: Duration) -> impl Future<Output = ()> {
        monoio::time::sleep(d)
    }
}

impl Spawn for Monoio {
    #[inline]
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + 'static
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        monoio::spawn(f)
    }

    fn block_on<F: Future + 'static>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }
}

fn runtime_bench(a: &Args, bench: &str) {
    let mut rt = Monoio(runtime(256));
    let mut rec = bench::runtime_bench(&mut rt, a, bench, "monoio");
    rec.extra("driver", "IoUringDriver");
    rec.print();
}

/// The echo contract (docs/echo.md): listen on 127.0.0.1:0, print the port, echo until killed.
/// Monoio's IO takes the buffer by value (rent) and gives it back with the result.
fn echo(_a: &Args) {
    let mut rt = runtime(4096);
    rt.block_on(async {
        let l = monoio::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| usage(&format!("bind: {e}")));
        println!("{}", l.local_addr().unwrap().port());
        loop {
            let (mut s, _) = l.accept().await.expect("accept");
            monoio::spawn(async move {
                let mut buf = Vec::with_capacity(ECHO_MAX);
                loop {
                    let (res, b) = s.read(buf).await;
                    match res {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let (res, mut b) = s.write_all(b).await;
                    if res.is_err() {
                        return;
                    }
                    b.clear();
                    buf = b;
                }
            });
        }
    });
}

/// An AlignedBuf lent to Monoio's read_at (O_DIRECT needs 4096-aligned memory).
struct Buf(AlignedBuf, usize);

// SAFETY: the pointer is stable (heap, owned), bytes_init never exceeds the allocation.
unsafe impl monoio::buf::IoBuf for Buf {
    fn read_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.1
    }
}

unsafe impl monoio::buf::IoBufMut for Buf {
    fn write_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.0.len()
    }
    unsafe fn set_init(&mut self, pos: usize) {
        self.1 = pos;
    }
}

/// qd tasks each reading with File::read_at through the ring, verifying every block.
fn fileio(a: &Args) {
    let job = Rc::new(Job::from_args(a));
    let mut rt = runtime((job.qd as u32).next_power_of_two().max(8));
    let win = Rc::new(Window::new());
    let total = rt.block_on(async {
        let file = Rc::new(monoio::fs::File::from_std(job.open_std()).expect("monoio file"));
        let next = Rc::new(Cell::new(0u64));
        let all = Rc::new(RefCell::new(IoTally::default()));
        let mut hs = Vec::new();
        for _ in 0..job.qd {
            let (job, file, win, next, all) = (job.clone(), file.clone(), win.clone(), next.clone(), all.clone());
            hs.push(monoio::spawn(async move {
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
                    let t0 = std::time::Instant::now();
                    let (res, b) = file.read_at(buf, off).await;
                    t.complete(res, b.0.as_slice(), off, len, t0, ph == Phase::Measure);
                    buf = b;
                }
                all.borrow_mut().merge(&t);
            }));
        }
        for h in hs {
            h.await;
        }
        Rc::try_unwrap(all).ok().unwrap().into_inner()
    });
    let (wall, cpu) = win.measured();
    let mut rec = total.record("monoio", wall, cpu);
    rec.extra("io", "File::read_at (IoUringDriver)").extra("direct", job.direct);
    rec.print();
}

fn main() {
    ipclab_peer_common::peer_main(echo, fileio, runtime_bench);
}
