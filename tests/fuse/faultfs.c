/*
 * faultfs — a tiny read-only FUSE filesystem whose files misbehave on purpose, for iodrift's
 * fault tests (tests/e2e/fault_*_test.py, through tests/lib/iodrift_test/fuse.py). Each file's
 * behaviour is chosen by its name:
 *
 *   ok.dat    SIZE bytes of deterministic data (the same bytes on every mount, see fill());
 *             served through the page cache like a normal file.
 *   hang.dat  SIZE bytes; a read that reaches --hang-after (default 0: every read) blocks in the
 *             read handler until faultfs gets SIGUSR1 (from then on it serves data, for good) or
 *             its connection is aborted. No signal to the reading thread frees it: once the
 *             request is in userspace the kernel waits for the answer (a fatal signal turns the
 *             wait uninterruptible — state D — and the process cannot be reaped until then).
 *   eio.dat   SIZE bytes; a read that reaches --eio-after (default 0: every read) fails with EIO
 *             (a read that starts before it returns the good bytes first, a short read).
 *   slow.dat  SIZE bytes of data; every read first sleeps --slow-ms milliseconds (default 200).
 *             SIGUSR2 pauses the sleep (reads are fast) and the next SIGUSR2 resumes it, so one
 *             mount can be fast for a baseline and slow after (tests/causes: a slow backing store).
 *             With --writable, slow.dat also takes writes: each sleeps the same --slow-ms (paused
 *             by the same SIGUSR2) and its bytes are discarded, so reads keep returning the same
 *             data (tests/causes: another writer on a serialized device).
 *   stats     a text file, always fresh:
 *             "reads=N hung=N hung_total=N eio=N slow=N writes=N released=0|1". `hung` is the
 *             number of reads blocked right now: a test checks with it that no probe piles onto
 *             a stuck target.
 *
 * Every file but ok.dat is opened with direct_io, so every read() reaches faultfs and the page
 * cache never answers for it. O_DIRECT opens are allowed (the FUSE kernel module turns them into
 * ordinary READ requests).
 *
 * Usage: faultfs MOUNTPOINT [-f] [-d] [-o OPT] [--size=BYTES] [--hang-after=BYTES]
 *                [--eio-after=BYTES] [--slow-ms=MS] [--lifetime=SECONDS] [--writable]
 *   BYTES take K/M/G suffixes (powers of 1024, "MiB" also accepted). --lifetime (default 600) is
 *   a watchdog: after that many seconds faultfs releases every hung read and exits, so a test
 *   that died can never leave a reader blocked for good. Without --writable the mount is
 *   read-only and every open for writing fails with EROFS. The fuse loop is multithreaded: a hung
 *   read blocks one worker only.
 *
 * Teardown that never hangs (iodrift_test/fuse.py does it): write 1 to
 * /sys/fs/fuse/connections/<dev>/abort (every pending request fails with ENOTCONN, hung readers
 * return), lazy-unmount, then stop faultfs (SIGTERM; it exits by itself once its connection is
 * gone).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum file_id { FF_OK, FF_HANG, FF_EIO, FF_SLOW, FF_STATS, FF_COUNT };
static const char *const kNames[FF_COUNT] = {"ok.dat", "hang.dat", "eio.dat", "slow.dat", "stats"};

struct options {
  char *size;
  char *hang_after;
  char *eio_after;
  char *slow_ms;
  char *lifetime;
  int writable;
};

static struct {
  uint64_t size;
  uint64_t hang_after;
  uint64_t eio_after;
  unsigned slow_ms;
  unsigned lifetime;
  int writable;
} cfg = {8u << 20, 0, 0, 200, 600, 0};

static int release_pipe[2] = {-1, -1}; /* SIGUSR1 writes a byte; hung reads poll the read end */
static atomic_int released;
static atomic_int slow_paused; /* SIGUSR2 flips it: slow.dat reads skip the sleep */
static atomic_ullong n_reads, n_hung, n_hung_total, n_eio, n_slow, n_writes;
static time_t mount_time;

#define OPT(t, p) \
  { t, offsetof(struct options, p), 0 }
static const struct fuse_opt kOptSpec[] = {OPT("--size=%s", size),
                                           OPT("--hang-after=%s", hang_after),
                                           OPT("--eio-after=%s", eio_after),
                                           OPT("--slow-ms=%s", slow_ms),
                                           OPT("--lifetime=%s", lifetime),
                                           {"--writable", offsetof(struct options, writable), 1},
                                           FUSE_OPT_END};

static int parse_bytes(const char *text, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') {
    shift = 10;
    end++;
  } else if (*end == 'M' || *end == 'm') {
    shift = 20;
    end++;
  } else if (*end == 'G' || *end == 'g') {
    shift = 30;
    end++;
  }
  if (shift != 0 && *end == 'i') end++;
  if (shift != 0 && *end == 'B') end++;
  if (*end != '\0') return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

static enum file_id lookup(const char *path) {
  if (path[0] != '/') return FF_COUNT;
  for (int i = 0; i < FF_COUNT; i++)
    if (strcmp(path + 1, kNames[i]) == 0) return (enum file_id)i;
  return FF_COUNT;
}

/* splitmix64 of the 8-byte word index: byte `pos` of every data file is byte pos % 8 (little
 * endian) of word_at(pos / 8). */
static uint64_t word_at(uint64_t index) {
  uint64_t z = index + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void fill(char *buf, size_t n, uint64_t off) {
  for (size_t i = 0; i < n;) {
    uint64_t pos = off + i;
    uint64_t w = word_at(pos / 8);
    unsigned shift = (unsigned)(pos % 8);
    size_t take = 8 - shift;
    if (take > n - i) take = n - i;
    for (size_t k = 0; k < take; k++) buf[i + k] = (char)(w >> (8 * (shift + k)));
    i += take;
  }
}

static int stats_text(char *buf, size_t cap) {
  return snprintf(buf, cap,
                  "reads=%llu hung=%llu hung_total=%llu eio=%llu slow=%llu writes=%llu "
                  "released=%d\n",
                  (unsigned long long)n_reads, (unsigned long long)n_hung,
                  (unsigned long long)n_hung_total, (unsigned long long)n_eio,
                  (unsigned long long)n_slow, (unsigned long long)n_writes, atomic_load(&released));
}

static int ffs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  memset(st, 0, sizeof *st);
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_atime = st->st_mtime = st->st_ctime = mount_time;
  if (strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
    return 0;
  }
  enum file_id id = lookup(path);
  if (id == FF_COUNT) return -ENOENT;
  st->st_mode = S_IFREG | (id == FF_SLOW && cfg.writable ? 0644 : 0444);
  st->st_nlink = 1;
  st->st_size = id == FF_STATS ? 4096 : (off_t)cfg.size;
  st->st_blksize = 4096;
  st->st_blocks = (st->st_size + 511) / 512;
  return 0;
}

static int ffs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)off;
  (void)fi;
  (void)flags;
  if (strcmp(path, "/") != 0) return -ENOENT;
  filler(buf, ".", NULL, 0, 0);
  filler(buf, "..", NULL, 0, 0);
  for (int i = 0; i < FF_COUNT; i++) filler(buf, kNames[i], NULL, 0, 0);
  return 0;
}

static int ffs_open(const char *path, struct fuse_file_info *fi) {
  enum file_id id = lookup(path);
  if (id == FF_COUNT) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY && !(id == FF_SLOW && cfg.writable)) return -EROFS;
  fi->direct_io = id != FF_OK; /* fault files: every read reaches faultfs */
  fi->keep_cache = 0;
  return 0;
}

/* Blocks until SIGUSR1 releases the hang (returns 0) or the session ends (returns -EIO; nobody
 * waits for that answer any more). Wakes every 200 ms to notice the end of the session, so that
 * faultfs exits by itself once its connection was aborted. */
static int hang(void) {
  struct fuse_session *se = fuse_get_session(fuse_get_context()->fuse);
  int ret = 0;
  n_hung++;
  n_hung_total++;
  while (!atomic_load(&released)) {
    if (fuse_session_exited(se)) {
      ret = -EIO;
      break;
    }
    struct pollfd p = {.fd = release_pipe[0], .events = POLLIN};
    poll(&p, 1, 200);
  }
  n_hung--;
  return ret;
}

/* slow.dat's --slow-ms sleep, unless SIGUSR2 paused it. */
static void slow_sleep(void) {
  if (atomic_load(&slow_paused)) return;
  struct timespec ts = {cfg.slow_ms / 1000, (long)(cfg.slow_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int ffs_read(const char *path, char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  (void)fi;
  enum file_id id = lookup(path);
  if (id == FF_COUNT) return -ENOENT;
  n_reads++;
  if (id == FF_STATS) {
    char text[256];
    int len = stats_text(text, sizeof text);
    if (off >= len) return 0;
    size_t n = (size_t)(len - off) < size ? (size_t)(len - off) : size;
    memcpy(buf, text + off, n);
    return (int)n;
  }
  if ((uint64_t)off >= cfg.size) return 0;
  if ((uint64_t)off + size > cfg.size) size = (size_t)(cfg.size - (uint64_t)off);
  switch (id) {
    case FF_HANG:
      if ((uint64_t)off + size > cfg.hang_after && !atomic_load(&released)) {
        int err = hang();
        if (err != 0) return err;
      }
      break;
    case FF_EIO:
      if ((uint64_t)off + size > cfg.eio_after) {
        n_eio++;
        if ((uint64_t)off >= cfg.eio_after) return -EIO;
        size = (size_t)(cfg.eio_after - (uint64_t)off); /* a short read up to the bad spot */
      }
      break;
    case FF_SLOW:
      n_slow++;
      slow_sleep();
      break;
    default:
      break;
  }
  fill(buf, size, (uint64_t)off);
  return (int)size;
}

/* Only slow.dat with --writable is ever open for writing (ffs_open): the write sleeps like a
 * read and its bytes are discarded (within the file's size; past it, ENOSPC). */
static int ffs_write(const char *path, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  (void)buf;
  (void)fi;
  if (lookup(path) != FF_SLOW || !cfg.writable) return -EROFS;
  if ((uint64_t)off >= cfg.size) return -ENOSPC;
  if ((uint64_t)off + size > cfg.size) size = (size_t)(cfg.size - (uint64_t)off);
  n_writes++;
  slow_sleep();
  return (int)size;
}

static int ffs_statfs(const char *path, struct statvfs *sv) {
  (void)path;
  memset(sv, 0, sizeof *sv);
  sv->f_bsize = sv->f_frsize = 4096;
  sv->f_blocks = (cfg.size * 4 + 4095) / 4096;
  sv->f_files = FF_COUNT;
  sv->f_namemax = 255;
  return 0;
}

static void on_sigusr1(int sig) {
  (void)sig;
  atomic_store(&released, 1);
  char c = 1;
  ssize_t r = write(release_pipe[1], &c, 1);
  (void)r;
}

static void on_sigusr2(int sig) {
  (void)sig;
  atomic_store(&slow_paused, !atomic_load(&slow_paused));
}

static void *watchdog(void *arg) {
  (void)arg;
  unsigned left = cfg.lifetime;
  while (left > 0) left = sleep(left);
  static const char msg[] = "faultfs: lifetime over: releasing hung reads and exiting\n";
  ssize_t r = write(2, msg, sizeof msg - 1);
  (void)r;
  on_sigusr1(SIGUSR1);
  kill(getpid(), SIGTERM); /* libfuse's handler ends the loop; fuse_main unmounts */
  sleep(5);
  _exit(3);
}

static void *ffs_init(struct fuse_conn_info *conn, struct fuse_config *fc) {
  (void)conn;
  /* Started here, not in main(): without -f fuse_main() forks, and threads do not survive. */
  pthread_t dog;
  if (pthread_create(&dog, NULL, watchdog, NULL) == 0) pthread_detach(dog);
  fc->kernel_cache = 0;
  fc->entry_timeout = fc->attr_timeout = fc->negative_timeout = 1.0;
  return NULL;
}

static const struct fuse_operations kOps = {
    .getattr = ffs_getattr,
    .readdir = ffs_readdir,
    .open = ffs_open,
    .read = ffs_read,
    .write = ffs_write,
    .statfs = ffs_statfs,
    .init = ffs_init,
};

int main(int argc, char *argv[]) {
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  struct options o = {0};
  if (fuse_opt_parse(&args, &o, kOptSpec, NULL) == -1) return 2;
  uint64_t v = 0;
  if (o.size && parse_bytes(o.size, &cfg.size) != 0) goto bad;
  if (o.hang_after && parse_bytes(o.hang_after, &cfg.hang_after) != 0) goto bad;
  if (o.eio_after && parse_bytes(o.eio_after, &cfg.eio_after) != 0) goto bad;
  if (o.slow_ms) {
    if (parse_bytes(o.slow_ms, &v) != 0) goto bad;
    cfg.slow_ms = (unsigned)v;
  }
  if (o.lifetime) {
    if (parse_bytes(o.lifetime, &v) != 0 || v == 0) goto bad;
    cfg.lifetime = (unsigned)v;
  }
  cfg.writable = o.writable;
  mount_time = time(NULL);

  if (pipe2(release_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    perror("faultfs: pipe2");
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_sigusr2;
  sigaction(SIGUSR2, &sa, NULL);

  /* Read-only unless --writable; fsname/subtype make the mount recognisable in
   * /proc/self/mountinfo. (libfuse 3.14 prints "Ignoring invalid max threads value 4294967295":
   * harmless, its own default.) */
  fuse_opt_add_arg(&args, cfg.writable ? "-orw,fsname=faultfs,subtype=faultfs"
                                       : "-oro,fsname=faultfs,subtype=faultfs");
  int ret = fuse_main(args.argc, args.argv, &kOps, NULL);
  fuse_opt_free_args(&args);
  return ret;

bad:
  fprintf(stderr,
          "faultfs: bad option value\n"
          "usage: faultfs MOUNTPOINT [-f] [-o OPT] [--size=BYTES] [--hang-after=BYTES]\n"
          "               [--eio-after=BYTES] [--slow-ms=MS] [--lifetime=SECONDS]\n"
          "               [--writable]\n");
  fuse_opt_free_args(&args);
  return 2;
}
