//! The runtime benches' bodies (spawn, switch, timer, channel pairs), written once and generic
//! over the runtime: each peer implements [`Sched`] (and [`Spawn`]) with its runtime's calls, and
//! monomorphisation gives each the code it had written out by hand (no boxing, no dyn).
use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};

use crate::{
    measure_counted, switch_many_split, unknown_bench, usage, Args, ChannelKind, Drive, Record, Tally,
};

/// What the switch and timer benches need of a runtime. Tokio implements it too: a future built
/// from these is Send whenever the runtime's own yield and sleep futures are.
pub trait Sched: 'static {
    /// By default the self-waking [`crate::yield_now`] (Monoio and Compio have none of their own).
    #[inline]
    fn yield_now() -> impl Future<Output = ()> {
        crate::yield_now()
    }
    fn sleep(d: Duration) -> impl Future<Output = ()>;
}

/// Spawning on a thread-per-core runtime (Monoio, Compio), whose tasks need only be 'static.
/// Tokio stays out: its spawn also needs Send, which a bound here would force on every task,
/// local-sync's !Send channels included, and which generic code cannot ask of the futures a
/// trait method returns (that needs return-type notation, unstable).
pub trait Spawn: Sched {
    /// Starts `f` now; the returned future is its join (an RPIT rather than the runtime's
    /// JoinHandle, so a runtime whose handle yields a Result unwraps it there).
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + 'static
    where
        F: Future + 'static,
        F::Output: 'static;

    /// Runs `f` as the root future of the runtime's block_on.
    fn block_on<F: Future + 'static>(&mut self, f: F) -> F::Output;

    /// Runs `f` as `drive` says: as block_on's root future (Monoio's and Compio's block_on poll
    /// it in a loop of their own, apart from the run queue, as condy-bench measures them), or as
    /// a spawned task joined from block_on (its wake-ups then go through the run queue, and the
    /// runtime's loop visits the driver between rounds of the queue).
    fn run<F: Future<Output = Tally> + 'static>(&mut self, drive: Drive, f: F) -> Tally {
        match drive {
            Drive::BlockOn => self.block_on(f),
            // Spawned at block_on's first poll: spawning needs the runtime's context.
            Drive::Spawned => self.block_on(async move { Self::spawn(f).await }),
        }
    }
}

/// A bounded channel of u64 for the channel benches.
pub trait Channel: 'static {
    /// The record's `channel` extra.
    const NAME: &'static str;
    type Tx: 'static;
    type Rx: 'static;
    /// A channel holding `cap` (>= 1) messages in all.
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx);
    /// Sends `v`; the receiver going away is a bench failure.
    fn send(tx: &mut Self::Tx, v: u64) -> impl Future<Output = ()>;
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>>;
}

/// local-sync's bounded mpsc (from Monoio's authors): the native channel of Monoio and Compio.
pub struct LocalSync;

impl Channel for LocalSync {
    const NAME: &'static str = "local_sync::mpsc::bounded";
    type Tx = local_sync::mpsc::bounded::Tx<u64>;
    type Rx = local_sync::mpsc::bounded::Rx<u64>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        local_sync::mpsc::bounded::channel(cap)
    }
    #[inline]
    async fn send(tx: &mut Self::Tx, v: u64) {
        tx.send(v).await.expect("receiver gone");
    }
    #[inline]
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().await
    }
}

/// futures::channel::mpsc, the reference's choice (`--channel=futures`).
pub struct FuturesMpsc;

impl Channel for FuturesMpsc {
    const NAME: &'static str = "futures::channel::mpsc";
    type Tx = futures_channel::mpsc::Sender<u64>;
    type Rx = futures_channel::mpsc::Receiver<u64>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        // futures' bounded channel holds buffer + one slot per sender: cap in all.
        futures_channel::mpsc::channel(cap - 1)
    }
    #[inline]
    async fn send(tx: &mut Self::Tx, v: u64) {
        tx.send(v).await.expect("receiver gone");
    }
    #[inline]
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.next().await
    }
}

/// n tasks returning their index, spawned `batch` at a time and joined in order.
pub async fn spawn_join<R: Spawn>(n: u64, batch: u64) -> Tally {
    let mut hs = Vec::with_capacity(n.min(batch) as usize);
    let mut t = Tally::default();
    let mut base = 0;
    while base < n {
        let end = n.min(base + batch);
        for i in base..end {
            hs.push(R::spawn(async move { i }));
        }
        for (i, h) in (base..).zip(hs.drain(..)) {
            t.take(h.await, i);
        }
        base = end;
    }
    t
}

pub async fn switch<R: Sched>(n: u64) -> Tally {
    let mut t = Tally::default();
    for i in 0..n {
        R::yield_now().await;
        // black_box: the count is taken once per yield done, never folded into a closed form.
        t.take(std::hint::black_box(i), i);
    }
    t
}

/// `tasks` tasks yielding `per` times each, round-robin through the run queue, joined in order.
/// Task k counts its yields as k*per .. k*per+per-1, so the sum over all tasks is index_sum of
/// the switches done: a lost task comes short, a duplicated one over, a misplaced one off in sum.
pub async fn switch_many<R: Spawn>(tasks: u64, per: u64) -> Tally {
    let hs: Vec<_> = (0..tasks).map(|k| R::spawn(switch_task::<R>(k * per, per))).collect();
    let mut all = Tally::default();
    for h in hs {
        all.merge(h.await);
    }
    all
}

/// One task of the many-task switch: `per` yields, counted from `first`.
pub async fn switch_task<R: Sched>(first: u64, per: u64) -> Tally {
    let mut t = Tally::default();
    for i in first..first + per {
        R::yield_now().await;
        t.take(std::hint::black_box(i), i); // as in switch
    }
    t
}

pub async fn timer<R: Sched>(n: u64, delay: Duration) -> Tally {
    let mut t = Tally::default();
    for i in 0..n {
        let t0 = Instant::now();
        R::sleep(delay).await;
        // A timer that fired early counts as out of order.
        t.take(i, if t0.elapsed() < delay { !i } else { i });
    }
    t
}

/// `pairs` producer/consumer pairs, n messages each; pair p's message i carries p*n + i.
pub async fn pairs<R: Spawn, C: Channel>(pairs: u64, n: u64, cap: usize) -> Tally {
    let mut consumers = Vec::new();
    let mut producers = Vec::new();
    for p in 0..pairs {
        let first = p * n;
        let (mut tx, mut rx) = C::bounded(cap);
        consumers.push(R::spawn(async move {
            let mut t = Tally::default();
            while let Some(v) = C::recv(&mut rx).await {
                t.take(v, first + t.count);
            }
            t
        }));
        producers.push(R::spawn(async move {
            for i in 0..n {
                C::send(&mut tx, first + i).await;
            }
        }));
    }
    for h in producers {
        h.await;
    }
    let mut all = Tally::default();
    for h in consumers {
        all.merge(h.await);
    }
    all
}

/// The runtime benches of a thread-per-core runtime (native channel: local-sync's), measured on
/// `rt`; the caller adds its driver's extras and prints the record.
pub fn runtime_bench<R: Spawn>(rt: &mut R, a: &Args, bench: &str, runtime: &str) -> Record {
    let n = a.u64_or("n", 16384);
    let warmup = a.f64_or("warmup", 0.0);
    let drive = Drive::from_args(a);
    let mut rec = Record { name: format!("runtime/{bench}_{runtime}"), ..Default::default() };
    match bench {
        "spawn" => {
            let batch = a.u64_or("batch", 1024).max(1);
            // Batches of whole `batch`es: the tasks in flight stay `batch`.
            measure_counted(&mut rec, warmup, n, batch, |m| m, |m| rt.run(drive, spawn_join::<R>(m, batch)));
        }
        "switch" => measure_counted(&mut rec, warmup, n, 1, |m| m, |m| rt.run(drive, switch::<R>(m))),
        "switch_many" => {
            let (tasks, per) = switch_many_split(a);
            // A unit is one yield of every task.
            measure_counted(&mut rec, warmup, per, 1, |m| tasks * m, |m| rt.run(drive, switch_many::<R>(tasks, m)));
            rec.extra("tasks", tasks);
        }
        "timer" => {
            let d = Duration::from_micros(a.u64_or("delay_us", 0));
            measure_counted(&mut rec, warmup, n, 1, |m| m, |m| rt.run(drive, timer::<R>(m, d)));
        }
        "channel" | "channel_pairs" => {
            let kind = ChannelKind::from_args(a);
            let p = if bench == "channel" { 1 } else { a.u64_or("pairs", 4).max(1) };
            let cap = a.u64_or("capacity", 1024) as usize;
            if cap == 0 {
                usage("--capacity=0: local-sync's and futures' bounded channels need at least 1");
            }
            // A unit is one message of every pair; batches of whole `capacity`s, so that a batch
            // fills and drains its channels as the steady state does.
            let name = match kind {
                ChannelKind::Native => {
                    measure_counted(&mut rec, warmup, n, cap as u64, |m| p * m, |m| rt.run(drive, pairs::<R, LocalSync>(p, m, cap)));
                    LocalSync::NAME
                }
                ChannelKind::Futures => {
                    measure_counted(&mut rec, warmup, n, cap as u64, |m| p * m, |m| rt.run(drive, pairs::<R, FuturesMpsc>(p, m, cap)));
                    FuturesMpsc::NAME
                }
            };
            rec.extra("channel", name);
        }
        _ => unknown_bench(bench),
    }
    rec.extra("runtime", runtime).extra("drive", drive.name());
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    /// futures' channel holds `cap` messages in all, as local-sync's does (futures' counts a slot
    /// per sender on top of its buffer), so a capacity means the same on both.
    #[test]
    fn futures_channel_holds_capacity_messages() {
        let (mut tx, _rx) = FuturesMpsc::bounded(3);
        for i in 0..3 {
            tx.try_send(i).expect("room for cap messages");
        }
        assert!(tx.try_send(3).is_err());
    }
}
