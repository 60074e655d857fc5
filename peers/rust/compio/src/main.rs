//! ipclab-peer-compio: the runtime, echo and fileio benches on Compio with its io_uring driver
//! (the `io-uring` feature; the record names the driver the runtime picked). Started by the
//! harness (src/mechanisms/*/peers_rust.cpp) as `--bench=NAME --param=value ...`. Compio ships no
//! channel of its own: the native one here is local-sync's, the fastest !Send bounded channel on
//! crates.io for a thread-per-core runtime; `--channel=futures` takes futures::channel::mpsc.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::future::Future;
use std::time::Duration;

use ipclab_peer_common::bench::{self, Sched, Spawn};
use ipclab_peer_common::fileio::{AlignedBuf, IoTally, Job};
use ipclab_peer_common::{usage, Args, Phase, Window};
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

/// The runtime the shared benches (ipclab_peer_common::bench) run on.
struct Compio(Runtime);

impl Sched for Compio {
    #[inline]
    fn sleep(d: Duration) -> impl Future<Output = ()> {
        compio::time::sleep(d)
    }
}

impl Spawn for Compio {
    #[inline]
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + 'static
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        // Spawned now (the handle is made here); a dropped JoinHandle cancels its task.
        let h = compio::runtime::spawn(f);
        async move { h.await.ok().expect("task failed") }
    }

    fn block_on<F: Future + 'static>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }
}

fn runtime_bench(a: &Args, bench: &str) {
    let mut rt = Compio(runtime(256));
    let mut rec = bench::runtime_bench(&mut rt, a, bench, "compio");
    rec.extra("driver", format!("{:?}", rt.0.driver_type()));
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
    let win = Rc::new(Window::new());
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
                    let t0 = std::time::Instant::now();
                    let compio::BufResult(res, b) = file.read_at(buf, off).await;
                    t.complete(res, b.0.as_slice(), off, len, t0, ph == Phase::Measure);
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
    let mut rec = total.record("compio", wall, cpu);
    rec.extra("io", format!("File::read_at ({:?})", rt.driver_type())).extra("direct", job.direct);
    rec.print();
}

fn main() {
    ipclab_peer_common::peer_main(echo, fileio, runtime_bench);
}
