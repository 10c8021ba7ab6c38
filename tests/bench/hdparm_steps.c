/* hdparm -t's timing of buffered device reads (hdparm.c time_device()), each step switchable,
 * in the order strace shows Debian's hdparm 9.65 taking them; for tests/bench/hdparm_steps.py.
 *
 *   hdparm_steps DEV [direct] [nonblock] [lock] [sync] [sleep|spin] [drop] [touch] [itimer]
 *
 * direct: open with O_DIRECT (not hdparm -t: the device path without the page cache);
 * nonblock: open with O_NONBLOCK; lock: mlock the buffer, then mlockall(MCL_CURRENT|MCL_FUTURE);
 * sync: sync(); sleep: 3 s idle before the timing; spin: 3 s on the CPU instead; drop: BLKFLSBUF
 * right before the timing (hdparm does not: see below); touch: one write every 512 bytes of the
 * buffer after each read; itimer: time with getitimer(ITIMER_REAL) (else CLOCK_MONOTONIC). Always:
 * 2 MiB read()s into one mmap'd buffer, for 3 s or to the end of the device. hdparm drops the
 * device's cache (BLKFLSBUF) after its timing, not before: the caller drops it before each run.
 * Prints bytes/s. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#define BUF (2u << 20)
static int has(int argc, char **argv, const char *w) {
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], w)) return 1;
  return 0;
}
int main(int argc, char **argv) {
  int fd = open(argv[1], O_RDONLY | (has(argc, argv, "nonblock") ? O_NONBLOCK : 0) |
                             (has(argc, argv, "direct") ? O_DIRECT : 0));
  if (fd < 0) {
    perror("open");
    return 1;
  }
  uint64_t size = 0;
  ioctl(fd, BLKGETSIZE64, &size);
  unsigned max_it = size / BUF;
  char *buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  for (unsigned i = 0; i < BUF; i += 4096) buf[i] = 0;
  if (has(argc, argv, "lock")) {
    mlock(buf, BUF);
    mlockall(MCL_CURRENT | MCL_FUTURE);
  }
  if (has(argc, argv, "sync")) sync();
  if (has(argc, argv, "sleep")) sleep(3);
  if (has(argc, argv, "spin")) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < 3.0);
  }
  if (has(argc, argv, "drop") && ioctl(fd, BLKFLSBUF, NULL) != 0) {
    perror("BLKFLSBUF");
    return 1;
  }
  int touch = has(argc, argv, "touch"), itimer = has(argc, argv, "itimer");
  struct itimerval e1, e2, big = {{1000, 0}, {1000, 0}};
  struct timespec t0, t1;
  setitimer(ITIMER_REAL, &big, NULL);
  getitimer(ITIMER_REAL, &e1);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned it = 0;
  double el;
  do {
    ++it;
    if (read(fd, buf, BUF) != (ssize_t)BUF) {
      fprintf(stderr, "short read\n");
      return 1;
    }
    if (touch)
      for (unsigned i = 0; i < BUF; i += 512) buf[i] &= 1;
    if (itimer) {
      getitimer(ITIMER_REAL, &e2);
      el = (e1.it_value.tv_sec - e2.it_value.tv_sec) +
           (e1.it_value.tv_usec - e2.it_value.tv_usec) / 1e6;
    } else {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
  } while (el < 3.0 && it < max_it);
  printf("%.1f\n", it * (double)BUF / el);
  return 0;
}
