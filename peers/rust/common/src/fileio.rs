//! The fileio suite's test file and IO plan, bit for bit those of src/mechanisms/fileio/common.cpp:
//! the harness creates the file (every 4 KiB block holds its offset, a magic word and a pattern
//! derived from the offset) and passes its path; the peer reads it in the same order and checks
//! every block it gets back.
use std::os::unix::fs::OpenOptionsExt;

use crate::{usage, Args, Cpu, Hist, Integrity, Record};

pub const BLOCK: u64 = 4096;
pub const SEQ_SIZE: u64 = 64 * 1024;
pub const RAND_SIZE: u64 = 4096;
const MAGIC: u64 = 0x3176_4f49_4c50_4349; // "ICPLIOv1"
const STEP: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(STEP);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Writes the block at file offset `off` into `buf` (BLOCK bytes). For tests: the harness writes
/// the real file.
pub fn fill_block(buf: &mut [u8], off: u64) {
    let s = mix(off);
    for (i, w) in buf[..BLOCK as usize].chunks_exact_mut(8).enumerate() {
        let v = match i {
            0 => off,
            1 => MAGIC,
            i => s.wrapping_add((i as u64).wrapping_mul(STEP)),
        };
        w.copy_from_slice(&v.to_ne_bytes());
    }
}

/// True when `buf` (BLOCK bytes) holds exactly the block at offset `off`.
pub fn block_ok(buf: &[u8], off: u64) -> bool {
    let s = mix(off);
    let mut diff = 0u64;
    for (i, w) in buf[..BLOCK as usize].chunks_exact(8).enumerate() {
        let v = u64::from_ne_bytes(w.try_into().unwrap());
        let want = match i {
            0 => off,
            1 => MAGIC,
            i => s.wrapping_add((i as u64).wrapping_mul(STEP)),
        };
        diff |= v ^ want;
    }
    diff == 0
}

/// IO n reads `len` bytes at `offset(n)`: sequential 64 KiB, or every 4 KiB block once in a
/// shuffled order (Fisher-Yates over mt19937_64 seeded 42 with a plain modulo, as the harness).
pub struct Plan {
    pub len: u64,
    pub count: u64,
    perm: Vec<u32>,
}

impl Plan {
    pub fn new(file_size: u64, random: bool) -> Plan {
        let len = if random { RAND_SIZE } else { SEQ_SIZE };
        let count = file_size / len;
        let mut perm = Vec::new();
        if random {
            perm = (0..count as u32).collect();
            let mut rng = rand_mt::Mt64::new(42);
            for i in (1..count as usize).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                perm.swap(i, j);
            }
        }
        Plan { len, count, perm }
    }

    #[inline]
    pub fn offset(&self, n: u64) -> u64 {
        let i = n % self.count;
        if self.perm.is_empty() {
            i * self.len
        } else {
            self.perm[i as usize] as u64 * self.len
        }
    }
}

/// What the harness passes a fileio peer: the file it prepared and how to read it.
pub struct Job {
    pub path: String,
    pub file_size: u64,
    pub qd: usize,
    pub direct: bool,
    /// Buffered reads with cache=drop: evict the file at each new pass, as the harness's Cursor.
    pub drop_each_pass: bool,
    pub plan: Plan,
}

impl Job {
    pub fn from_args(a: &Args) -> Job {
        let path = a.str("file").unwrap_or_else(|| usage("--file=PATH is required (the harness prepares it)")).to_string();
        // In bytes, from the harness: its own --file_size may be written with a suffix (1G).
        let file_size = a.u64_or("file_bytes", 0);
        if file_size == 0 || file_size % SEQ_SIZE != 0 {
            usage("--file_bytes must be a positive multiple of 64 KiB");
        }
        let qd = a.u64_or("qd", 32).clamp(1, 4096) as usize;
        let direct = match a.str_or("variant", "direct") {
            "direct" => true,
            "buffered" => false,
            v => usage(&format!("--variant={v}: use buffered or direct")),
        };
        let random = match a.str_or("pattern", "rand") {
            "rand" => true,
            "seq" => false,
            v => usage(&format!("--pattern={v}: use seq or rand")),
        };
        Job {
            path,
            file_size,
            qd,
            direct,
            drop_each_pass: !direct && a.str_or("cache", "drop") == "drop",
            plan: Plan::new(file_size, random),
        }
    }

    /// Opens the file as the harness does (O_DIRECT when asked; fadvise RANDOM or SEQUENTIAL).
    pub fn open_std(&self) -> std::fs::File {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(if self.direct { libc::O_DIRECT } else { 0 })
            .open(&self.path)
            .unwrap_or_else(|e| usage(&format!("cannot open {}: {e}", self.path)));
        self.advise(std::os::fd::AsRawFd::as_raw_fd(&f));
        f
    }

    /// fio's default access hint, as the harness sets it.
    pub fn advise(&self, fd: i32) {
        let hint = if self.plan.perm.is_empty() { libc::POSIX_FADV_SEQUENTIAL } else { libc::POSIX_FADV_RANDOM };
        unsafe { libc::posix_fadvise(fd, 0, 0, hint) };
    }

    /// Evicts the file from the page cache at the start of each new pass (buffered, cache=drop).
    pub fn maybe_evict(&self, n: u64) {
        if self.drop_each_pass && n != 0 && n % self.plan.count == 0 {
            if let Ok(f) = std::fs::File::open(&self.path) {
                unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
        }
    }
}

/// Completed reads of one run: every block verified; ops and bytes only inside the window.
#[derive(Default)]
pub struct IoTally {
    pub ops: u64,
    pub bytes: u64,
    pub integrity: Integrity,
    /// Every measured read's latency, from its submission to its completion (ns): kind `io`, as
    /// the C++ engines record theirs (src/mechanisms/fileio/common.cpp, Tally::complete).
    pub hist: Hist,
}

impl IoTally {
    /// The record of a run on `engine` measured over `wall` seconds and `cpu`: every completed
    /// read counts as sent and received, corrupt blocks as counted; the caller adds its extras.
    pub fn record(&self, engine: &str, wall: f64, cpu: Cpu) -> Record {
        let mut rec = Record { name: format!("fileio/{engine}"), ops: self.ops, bytes: self.bytes, wall_s: wall, cpu, ..Default::default() };
        rec.integrity = self.integrity;
        rec.integrity.sent = self.integrity.received;
        rec.latency = Some(("io", self.hist.clone()));
        rec.rates.push(("iops".into(), self.ops as f64 / wall.max(1e-9)));
        rec.rates.push(("MB_per_s".into(), self.bytes as f64 / wall.max(1e-9) / 1e6));
        rec.extra("engine", engine);
        rec
    }

    /// Accounts one read of `len` bytes at `off` that returned `res` into `buf`. A failed read
    /// is fatal, as in the harness; a short read counts all its blocks corrupt.
    /// Accounts one completed read: `res` its result, `t0` when it was submitted.
    pub fn complete(
        &mut self,
        res: std::io::Result<usize>,
        buf: &[u8],
        off: u64,
        len: u64,
        t0: std::time::Instant,
        measuring: bool,
    ) {
        let n = res.unwrap_or_else(|e| {
            eprintln!("ipclab-peer: read at offset {off}: {e}");
            std::process::exit(1)
        });
        let blocks = len / BLOCK;
        let bad = if n as u64 != len {
            blocks
        } else {
            (0..blocks).filter(|&i| !block_ok(&buf[(i * BLOCK) as usize..], off + i * BLOCK)).count() as u64
        };
        self.integrity.received += blocks;
        self.integrity.corrupt += bad;
        if measuring {
            self.ops += 1;
            self.bytes += len;
            self.hist.record(t0.elapsed().as_nanos() as u64);
        }
    }

    pub fn merge(&mut self, o: &IoTally) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.integrity.received += o.integrity.received;
        self.integrity.corrupt += o.integrity.corrupt;
        self.hist.merge(&o.hist);
    }
}

/// A zeroed, 4096-aligned buffer, as O_DIRECT needs (Vec<u8> has no alignment to give). Each
/// runtime crate wraps it to implement its own buffer traits.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), 4096).unwrap()
    }

    pub fn new(len: usize) -> AlignedBuf {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(Self::layout(len)) };
        AlignedBuf { ptr: std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout(len))), len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: len bytes were allocated and zeroed.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_verify_only_at_their_offset() {
        let mut b = AlignedBuf::new(BLOCK as usize);
        fill_block(b.as_mut_slice(), 8192);
        assert!(block_ok(b.as_slice(), 8192));
        assert!(!block_ok(b.as_slice(), 4096));
        b.as_mut_slice()[100] ^= 1;
        assert!(!block_ok(b.as_slice(), 8192));
    }

    #[test]
    fn random_plan_is_a_permutation() {
        let p = Plan::new(1 << 20, true);
        let mut seen: Vec<u64> = (0..p.count).map(|n| p.offset(n)).collect();
        seen.sort();
        assert_eq!(seen, (0..p.count).map(|i| i * RAND_SIZE).collect::<Vec<_>>());
        assert_ne!(p.offset(0), 0); // shuffled
        assert_eq!(p.offset(p.count), p.offset(0)); // wraps
    }

    #[test]
    fn mt64_matches_the_cpp_standard() {
        // The C++ standard fixes std::mt19937_64's 10000th output for the default seed 5489.
        let mut r = rand_mt::Mt64::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = r.next_u64();
        }
        assert_eq!(v, 9981545732273789042);
    }

    #[test]
    fn aligned_buffer_is_aligned() {
        let b = AlignedBuf::new(65536);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }

    #[test]
    fn short_read_counts_every_block_corrupt() {
        let b = AlignedBuf::new(SEQ_SIZE as usize);
        let mut t = IoTally::default();
        t.complete(Ok(4096), b.as_slice(), 0, SEQ_SIZE, std::time::Instant::now(), true);
        assert_eq!(t.integrity.corrupt, SEQ_SIZE / BLOCK);
    }

    #[test]
    fn measured_reads_carry_their_latency_of_kind_io() {
        let mut b = AlignedBuf::new(BLOCK as usize);
        fill_block(b.as_mut_slice(), 0);
        let mut t = IoTally::default();
        let t0 = std::time::Instant::now();
        t.complete(Ok(4096), b.as_slice(), 0, BLOCK, t0, false); // warm-up: no latency
        t.complete(Ok(4096), b.as_slice(), 0, BLOCK, t0, true);
        let mut all = IoTally::default();
        all.merge(&t);
        let rec = all.record("monoio", 1.0, Cpu::default());
        let (kind, h) = rec.latency.as_ref().unwrap();
        assert_eq!((*kind, h.count, rec.ops), ("io", 1, 1));
        assert!(rec.to_json().contains("\"latency_ns\":{\"kind\":\"io\",\"count\":1,"));
    }
}
