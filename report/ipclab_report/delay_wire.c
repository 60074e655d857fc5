// delay_wire: a point-to-point link between two network namespaces that holds every packet for a
// set delay each way — what `tc netem delay` does on a veth pair, for kernels built without netem
// (CONFIG_NET_SCH_NETEM; a microVM's kernel often lacks it, and no library or packaged tool offers
// a packet delay outside the kernel, hence this small program).
//
//   delay_wire NS_A DEV_A NS_B DEV_B DELAY_US
//
// Creates the TUN device DEV_A in network namespace NS_A and DEV_B in NS_B (ip netns names), prints
// "ready" once both exist, and then moves each IP packet one end sends to the other end after
// DELAY_US microseconds, in order: it sleeps until a margin before a packet is due and spins the
// rest (the margin: the 99th percentile of this machine's wake-up lateness, measured at start), so
// that the delay holds within a few µs however late a sleeping thread wakes here. A line on stdin
// with a number sets a new delay (µs) for the packets read from then on; "NUMBER spin" also keeps
// the wire polling without ever sleeping (a CPU of its own), so that no packet waits for it to
// wake: the link's own cost is then the same at every delay, and a delay is all a change adds.
// The devices are the program's own (not persistent): they go when it ends — on SIGTERM, SIGINT,
// the end of stdin, or its death — so nothing is left behind. The caller gives the devices their
// addresses and brings them up.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum { kMaxPacket = 65536, kQueue = 4096 };

struct packet {
  uint64_t due;
  size_t len;
  unsigned char data[kMaxPacket];
};

// One direction: packets read from `in`, written to `out` when due (a ring of kQueue packets; a
// full ring drops, as a full netem queue does).
struct way {
  int in, out;
  struct packet* ring;
  size_t head, tail;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char* what) {
  fprintf(stderr, "delay_wire: %s: %s\n", what, strerror(errno));
  exit(1);
}

// Opens a new TUN device `name` (IP packets, no header) in network namespace `ns`.
static int tun_in(const char* ns, const char* name) {
  char path[256];
  snprintf(path, sizeof path, "/var/run/netns/%s", ns);
  int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) die(path);
  if (setns(nsfd, CLONE_NEWNET) != 0) die("setns");
  close(nsfd);
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) die("/dev/net/tun");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("TUNSETIFF");
  return fd;
}

// The 99th percentile of how late a 100 µs sleep wakes here (at most 1 ms).
static uint64_t wake_lateness(void) {
  enum { n = 200 };
  uint64_t late[n];
  for (int i = 0; i < n; ++i) {
    const uint64_t t = now_ns();
    const struct timespec d = {0, 100000};
    nanosleep(&d, NULL);
    const uint64_t took = now_ns() - t;
    late[i] = took > 100000 ? took - 100000 : 0;
  }
  for (int i = 1; i < n; ++i)  // insertion sort: 200 values
    for (int j = i; j > 0 && late[j - 1] > late[j]; --j) {
      const uint64_t x = late[j];
      late[j] = late[j - 1];
      late[j - 1] = x;
    }
  const uint64_t p99 = late[n * 99 / 100];
  return p99 < 1000000 ? p99 : 1000000;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: delay_wire NS_A DEV_A NS_B DEV_B DELAY_US\n");
    return 2;
  }
  uint64_t delay = strtoull(argv[5], NULL, 10) * 1000;
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake when due, not up to 50 µs later
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  const uint64_t margin = wake_lateness();
  const int a = tun_in(argv[1], argv[2]), b = tun_in(argv[3], argv[4]);
  struct way ways[2] = {{a, b, calloc(kQueue, sizeof(struct packet)), 0, 0},
                        {b, a, calloc(kQueue, sizeof(struct packet)), 0, 0}};
  if (!ways[0].ring || !ways[1].ring) die("calloc");
  printf("ready (wake-up margin %llu ns)\n", (unsigned long long)margin);
  fflush(stdout);
  char line[64];
  size_t line_len = 0;
  int spin = 0;
  const struct timespec zero = {0, 0};
  while (!stop) {
    // Until the first packet due, or a packet to read, or a line on stdin.
    uint64_t next = UINT64_MAX;
    for (int w = 0; w < 2; ++w)
      if (ways[w].head != ways[w].tail && ways[w].ring[ways[w].head].due < next)
        next = ways[w].ring[ways[w].head].due;
    struct pollfd p[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {0, POLLIN, 0}};
    struct timespec wait;
    const struct timespec* tw = spin ? &zero : NULL;
    // Asleep until the margin before the next packet is due, then polled without sleeping.
    if (next != UINT64_MAX && !spin) {
      const uint64_t t = now_ns(), left = next > t + margin ? next - t - margin : 0;
      wait.tv_sec = (time_t)(left / 1000000000u);
      wait.tv_nsec = (long)(left % 1000000000u);
      tw = &wait;
    }
    if (ppoll(p, 3, tw, NULL) < 0 && errno != EINTR) die("ppoll");
    if (p[2].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(0, line + line_len, sizeof line - 1 - line_len);
      if (n <= 0) break;  // the caller is gone: so are we
      line_len += (size_t)n;
      line[line_len] = '\0';
      char* nl;
      while ((nl = strchr(line, '\n'))) {
        *nl = '\0';
        char* end;
        delay = strtoull(line, &end, 10) * 1000;
        spin = strstr(end, "spin") != NULL;
        memmove(line, nl + 1, line_len - (size_t)(nl + 1 - line) + 1);
        line_len = strlen(line);
      }
      if (line_len >= sizeof line - 1) line_len = 0;
    }
    for (int w = 0; w < 2; ++w) {
      struct way* y = &ways[w];
      if (p[w].revents & POLLIN)
        for (;;) {
          struct packet* k = &y->ring[y->tail];
          const ssize_t n = read(y->in, k->data, sizeof k->data);
          if (n <= 0) break;
          if ((y->tail + 1) % kQueue == y->head) continue;  // full: dropped
          k->len = (size_t)n;
          k->due = now_ns() + delay;
          y->tail = (y->tail + 1) % kQueue;
        }
      for (const uint64_t t = now_ns(); y->head != y->tail && y->ring[y->head].due <= t;) {
        const struct packet* k = &y->ring[y->head];
        if (write(y->out, k->data, k->len) < 0 && errno != EAGAIN && errno != EIO) die("write");
        y->head = (y->head + 1) % kQueue;
      }
    }
  }
  return 0;
}
