/* delayline: a user-space delay line on NFQUEUE.
 *
 * The kernel here has no netem, so one-way latency is injected by holding every
 * packet of an NFQUEUE for D microseconds and then accepting it. Packets leave in
 * arrival order (the delay is constant, so release times are monotonic) and are
 * released with batch verdicts: one verdict accepts every queued packet up to an id,
 * so a burst of due packets costs one message and a lost netlink message cannot
 * strand a packet.
 *
 * Run it under real-time priority (`chrt -f 50 delayline ...`); as an ordinary task
 * the wake-ups are late by ~130 us whenever MPI ranks busy-poll the CPUs.
 *
 *   delayline -q QUEUE -d DELAY_US [-s SPIN_US] [-r READY_FILE]
 *
 * -s: busy-wait the last SPIN_US before a release instead of sleeping (default 0;
 *     spinning at real-time priority takes a CPU away from the ranks). Timed
 *     wake-ups are requested earlier by how late they have been coming (learnt as
 *     the line runs), so the spin only has to cover their jitter. No spinning while
 *     more than SPIN_MAX_HELD packets are held (bulk traffic).
 * -r: file written (with our PID) once the queue is bound, so a caller can wait for
 *     it before steering packets into the queue.
 * SIGTERM/SIGINT: accept what is still held, print statistics to stderr, exit 0.
 * SIGUSR1: print the statistics since the last SIGUSR1 to stderr and start anew.
 * SIGUSR2: hold packets for the base delay (1 us) from now on; SIGHUP: for D again.
 *     A validation run measures its own baseline between launches at D, on the same
 *     path minutes apart from nothing (cluster.sh delay base|nominal).
 */
#define _GNU_SOURCE
#include <arpa/inet.h> /* ntohl */
#include <errno.h>
#include <inttypes.h>
#include <linux/netfilter.h> /* NF_ACCEPT */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define RING_SIZE (1u << 17) /* > kernel queue length, so the ring never overflows */
#define KERNEL_QUEUE_LEN 65536u
#define SPIN_MAX_HELD 2u /* spin (-s) only while at most this many packets are held */
#define SMALL_DATA_MAX 1024 /* bytes of TCP payload: a small message's packet */
#define COPY_BYTES 64u      /* of each packet: its IPv4 and TCP headers */

struct held {
  uint32_t id;
  int small; /* a TCP segment of 1..SMALL_DATA_MAX bytes: part of a small message */
  int64_t due_ns;
};

static struct held ring[RING_SIZE];
static uint32_t head, tail; /* held packets: ring[head .. tail) modulo RING_SIZE */
static int64_t delay_ns;
static volatile sig_atomic_t stop, report, switch_to; /* switch_to: 1 base, 2 nominal */
static int64_t nominal_delay_ns;
#define BASE_DELAY_NS 1000

/* Statistics of how late packets left, relative to arrival + D: since the start and
 * since the last SIGUSR1 report. */
static const int64_t late_edges_us[] = {5, 10, 20, 50, 100, 200, 500};
#define LATE_BINS (sizeof late_edges_us / sizeof late_edges_us[0] + 1)
#define SMALL_BIN_NS 500
#define SMALL_BINS 4096 /* up to ~2 ms late */
struct stats {
  uint64_t released, batches, recv_errors;
  int64_t late_sum_ns, late_max_ns;
  uint64_t late_hist[LATE_BINS];
  /* Small data packets: what a small message's latency is made of. D plus their
   * median lateness is the one-way delay a ping-pong's alpha (a fit of per-size
   * medians) should show. Pure ACKs and full-size segments are left out, and a small
   * one counts whether or not it found the queue empty: a ping-pong's reply often
   * comes right behind the pure ACK of its request and, at D = 50 us, left ~9 us late
   * after it, while the ACKs (and, at a low rate, a bulk transfer's segments, further
   * apart than D) left on time; counted by an empty queue, the median said 51 us
   * applied where the ping-pong met 59. */
  uint64_t small_released;
  int64_t small_late_sum_ns;
  uint64_t small_hist[SMALL_BINS]; /* SMALL_BIN_NS wide; the last holds the rest */
};
static struct stats total, interval;
static int64_t wake_lead_ns; /* how early timed wake-ups are requested (learnt) */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int sig) {
  if (sig == SIGUSR1)
    report = 1;
  else if (sig == SIGUSR2)
    switch_to = 1;
  else if (sig == SIGHUP)
    switch_to = 2;
  else
    stop = 1;
}

/* The median lateness of the small data packets (interpolated within its bin), in us. */
static double small_median_us(const struct stats *st) {
  if (!st->small_released) return 0.0;
  const double half = (double)st->small_released / 2.0;
  double below = 0;
  for (size_t b = 0; b < SMALL_BINS; b++) {
    const double in = (double)st->small_hist[b];
    if (below + in >= half) return ((double)b + (in > 0 ? (half - below) / in : 0.0)) * SMALL_BIN_NS / 1000.0;
    below += in;
  }
  return (double)SMALL_BINS * SMALL_BIN_NS / 1000.0;
}

static void print_stats(const char *what, const struct stats *st) {
  double mean_late = st->released ? (double)st->late_sum_ns / (double)st->released / 1000.0 : 0.0;
  fprintf(stderr,
          "delayline: %s: released %" PRIu64 " packets in %" PRIu64 " batches, late by mean %.1f us, max %.1f us, "
          "lost notifications %" PRIu64 ", timer wake-up lead %.1f us\n",
          what, st->released, st->batches, mean_late, (double)st->late_max_ns / 1000.0, st->recv_errors,
          (double)wake_lead_ns / 1000.0);
  fprintf(stderr, "delayline: %s: lateness histogram (us):", what);
  for (size_t b = 0; b < LATE_BINS; b++) {
    if (b < LATE_BINS - 1)
      fprintf(stderr, " <%" PRId64 ":%" PRIu64, late_edges_us[b], st->late_hist[b]);
    else
      fprintf(stderr, " >=%" PRId64 ":%" PRIu64, late_edges_us[b - 1], st->late_hist[b]);
  }
  fprintf(stderr, "\n");
  const double median = small_median_us(st);
  fprintf(stderr,
          "delayline: %s: small data packets %" PRIu64 ", late by mean %.2f us, median %.2f us, applied delay %.2f us\n",
          what, st->small_released,
          st->small_released ? (double)st->small_late_sum_ns / (double)st->small_released / 1000.0 : 0.0,
          median, (double)delay_ns / 1000.0 + median);
}

static void count_late(int64_t late, int small) {
  size_t b = 0;
  while (b < LATE_BINS - 1 && late >= late_edges_us[b] * 1000) b++;
  struct stats *all[] = {&total, &interval};
  for (int i = 0; i < 2; i++) {
    all[i]->late_sum_ns += late;
    if (late > all[i]->late_max_ns) all[i]->late_max_ns = late;
    all[i]->late_hist[b]++;
    all[i]->released++;
    if (small) {
      all[i]->small_released++;
      all[i]->small_late_sum_ns += late;
      const int64_t bin = late / SMALL_BIN_NS;
      all[i]->small_hist[bin < SMALL_BINS - 1 ? bin : SMALL_BINS - 1]++;
    }
  }
}

/* A TCP segment over IPv4 with 1..SMALL_DATA_MAX bytes of payload. */
static int small_data(struct nfq_data *nfa) {
  unsigned char *p = NULL;
  const int len = nfq_get_payload(nfa, &p);
  if (len < 20 || (p[0] >> 4) != 4 || p[9] != 6) return 0;
  const int ip_header = (p[0] & 0x0f) * 4;
  if (len < ip_header + 13) return 0;
  const int tcp_header = (p[ip_header + 12] >> 4) * 4;
  const int payload = ((p[2] << 8) | p[3]) - ip_header - tcp_header;
  return payload > 0 && payload <= SMALL_DATA_MAX;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)msg;
  (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  if (tail - head >= RING_SIZE) /* cannot happen with KERNEL_QUEUE_LEN < RING_SIZE */
    return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
  ring[tail % RING_SIZE] = (struct held){id, small_data(nfa), now_ns() + delay_ns};
  tail++;
  return 0;
}

/* Accept, with one batch verdict, every held packet that is due at `now`. */
static void release_due(struct nfq_q_handle *qh, int64_t now, int all) {
  uint32_t n = head;
  while (n != tail && (all || ring[n % RING_SIZE].due_ns <= now)) {
    int64_t late = now - ring[n % RING_SIZE].due_ns;
    count_late(late < 0 ? 0 : late, ring[n % RING_SIZE].small);
    n++;
  }
  if (n == head) return;
  if (nfq_set_verdict_batch(qh, ring[(n - 1) % RING_SIZE].id, NF_ACCEPT) < 0)
    fprintf(stderr, "delayline: batch verdict failed: %s\n", strerror(errno));
  total.batches++;
  interval.batches++;
  head = n;
}

/* Read every queued packet notification without blocking. */
static void drain(struct nfq_handle *h, int fd) {
  static char buf[1 << 16] __attribute__((aligned));
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) {
      nfq_handle_packet(h, buf, (int)r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    /* ENOBUFS: the socket overflowed and notifications were lost. The packets are
     * still queued in the kernel; the next batch verdict accepts them too. */
    if (r < 0 && errno == ENOBUFS) {
      total.recv_errors++;
      interval.recv_errors++;
      continue;
    }
    return; /* EAGAIN, or an error poll will report again */
  }
}

static void usage(void) {
  fprintf(stderr, "usage: delayline -q QUEUE -d DELAY_US [-s SPIN_US] [-r READY_FILE]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long queue = -1;
  double delay_us = -1, spin_us = 0;
  const char *ready_file = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "q:d:s:r:h")) != -1) {
    char *end = NULL;
    switch (opt) {
      case 'q': queue = strtol(optarg, &end, 10); break;
      case 'd': delay_us = strtod(optarg, &end); break;
      case 's': spin_us = strtod(optarg, &end); break;
      case 'r': ready_file = optarg; break;
      default: usage();
    }
    if (end && *end) usage();
  }
  if (queue < 0 || queue > 65535 || delay_us < 0 || spin_us < 0 || optind != argc) usage();
  delay_ns = nominal_delay_ns = (int64_t)(delay_us * 1000.0 + 0.5);
  const int64_t spin_ns = (int64_t)(spin_us * 1000.0 + 0.5);

  int policy = sched_getscheduler(0);
  if (policy != SCHED_FIFO && policy != SCHED_RR)
    fprintf(stderr, "delayline: warning: not real-time; expect releases late by ~100 us under load "
                    "(run under chrt -f 50)\n");
  mlockall(MCL_CURRENT | MCL_FUTURE); /* best effort: no page faults on the hot path */

  struct nfq_handle *h = nfq_open();
  if (!h) {
    perror("delayline: nfq_open");
    return 1;
  }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!qh) {
    fprintf(stderr, "delayline: cannot bind queue %ld: %s (root? another listener?)\n", queue, strerror(errno));
    return 1;
  }
  /* The headers only (small_data reads them); GSO super-packets stay whole; a long
   * queue. */
  if (nfq_set_mode(qh, NFQNL_COPY_PACKET, COPY_BYTES) < 0) {
    perror("delayline: nfq_set_mode");
    return 1;
  }
  if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0)
    fprintf(stderr, "delayline: warning: kernel does not take NFQA_CFG_F_GSO: %s\n", strerror(errno));
  if (nfq_set_queue_maxlen(qh, KERNEL_QUEUE_LEN) < 0)
    fprintf(stderr, "delayline: warning: cannot set queue length: %s\n", strerror(errno));
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16u << 20);
  int fd = nfq_fd(h);

  sigset_t block, during_wait;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  sigaddset(&block, SIGHUP);
  sigprocmask(SIG_BLOCK, &block, &during_wait); /* signals arrive only inside ppoll */
  sigdelset(&during_wait, SIGTERM);
  sigdelset(&during_wait, SIGINT);
  sigdelset(&during_wait, SIGUSR1);
  sigdelset(&during_wait, SIGUSR2);
  sigdelset(&during_wait, SIGHUP);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  if (ready_file) {
    FILE *f = fopen(ready_file, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
      fprintf(stderr, "delayline: cannot write %s: %s\n", ready_file, strerror(errno));
      return 1;
    }
  }
  fprintf(stderr, "delayline: queue %ld, delay %.1f us, spin %.1f us, pid %d\n", queue, delay_us, spin_us,
          (int)getpid());

  /* Timer wake-ups come late by a roughly constant amount (~27 us on a VM): learn it
   * (a running mean of how late the timed wake-ups were) and ask to be woken that
   * much earlier, so that only the remaining jitter has to be spun away. */
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  while (!stop) {
    int64_t now = now_ns();
    release_due(qh, now, 0);
    struct timespec ts, *timeout = NULL; /* nothing held: sleep until a packet comes */
    int64_t target = 0;
    if (head != tail) {
      /* Spin only for a sparse queue (latency-bound traffic, where a few us matter);
       * under bulk load the line would otherwise spin all the time on a CPU that the
       * receiving rank needs, and a few us of jitter do not change a bandwidth. */
      int64_t spin = tail - head <= SPIN_MAX_HELD ? spin_ns : 0;
      int64_t wait = ring[head % RING_SIZE].due_ns - now - spin - wake_lead_ns;
      if (wait < 0) wait = 0; /* spinning: poll without sleeping */
      if (wait > 0) target = now + wait;
      ts.tv_sec = wait / 1000000000;
      ts.tv_nsec = wait % 1000000000;
      timeout = &ts;
    }
    int r = ppoll(&pfd, 1, timeout, &during_wait);
    if (r == 0 && target) {
      int64_t late = now_ns() - target;
      if (late > 500000) late = 500000; /* one long preemption must not dominate */
      if (late < 0) late = 0;
      wake_lead_ns += (late - wake_lead_ns) / 16;
      /* At most half of what a hold leaves after the spin: every hold then starts with a
       * timed sleep, which keeps the lead learning. Unbounded, a burst of late wake-ups
       * under bulk traffic took it past D - spin, after which no hold slept, nothing was
       * learnt, and the line busy-polled every packet's whole D at real-time priority on
       * the CPU of its host's rank (stuck at 198 us with D = 200: the rank's kernels and
       * small collectives slowed, bulk packets released ms late). */
      const int64_t lead_max = (delay_ns - spin_ns) / 2;
      if (wake_lead_ns > lead_max) wake_lead_ns = lead_max > 0 ? lead_max : 0;
    }
    if (switch_to) {
      /* Held packets keep their due times; the next ones get the new delay. */
      delay_ns = switch_to == 1 ? BASE_DELAY_NS : nominal_delay_ns;
      switch_to = 0;
      fprintf(stderr, "delayline: delay now %.1f us\n", (double)delay_ns / 1000.0);
    }
    if (report) {
      report = 0;
      print_stats("since last report", &interval);
      memset(&interval, 0, sizeof interval);
    }
    if (r < 0 && errno != EINTR) {
      perror("delayline: ppoll");
      break;
    }
    if (r > 0) {
      if (pfd.revents & (POLLERR | POLLNVAL)) {
        /* POLLERR on a netlink socket is an overflow (ENOBUFS): drain clears it. */
        if (pfd.revents & POLLNVAL) break;
      }
      drain(h, fd);
    }
  }

  drain(h, fd);
  release_due(qh, now_ns(), 1); /* do not let the kernel drop what we still hold */
  print_stats("in total", &total);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
