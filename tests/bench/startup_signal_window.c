// How long after exec a signal still kills iodriftd: starts it (posix_spawn: returns once the
// execve has succeeded, so t = 0 is the new image's first instant, before the dynamic loader
// runs), sends SIGHUP t µs later and counts the starts that die of it. A start that survives
// took the signal as a reload (blocked, then sigwait'ed); it is then stopped with SIGTERM.
//
//   cc -O2 -o /tmp/startup_signal_window tests/bench/startup_signal_window.c
//   /tmp/startup_signal_window TRIALS DELAYS_US IODRIFTD ARGS...
//   e.g. /tmp/startup_signal_window 40 0,100,500,1000,2000,5000,10000,25000 build/iodriftd
//          --config c.yaml --listen 127.0.0.1:0 --dbus none --state-dir /var/tmp/s
//
// Prints, per delay, the deaths by SIGHUP out of TRIALS, and the largest delay with a death.
// The spawning process's own signal mask is emptied first (as systemd does for a service).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static void sleep_until(const struct timespec* t) {
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR) {
  }
}

static struct timespec after(struct timespec t, long us) {
  t.tv_nsec += (us % 1000000) * 1000;
  t.tv_sec += us / 1000000 + t.tv_nsec / 1000000000;
  t.tv_nsec %= 1000000000;
  return t;
}

// Waits up to `ms` for pid; 1 and *status when it ended.
static int wait_ms(pid_t pid, int ms, int* status) {
  for (int i = 0; i < ms; ++i) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return 1;
    usleep(1000);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TRIALS DELAYS_US IODRIFTD ARGS...\n", argv[0]);
    return 2;
  }
  const int trials = atoi(argv[1]);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  long largest = -1;
  char* delays = strdup(argv[2]);
  for (char* tok = strtok(delays, ","); tok; tok = strtok(NULL, ",")) {
    const long us = atol(tok);
    int deaths = 0, other = 0;
    for (int i = 0; i < trials; ++i) {
      pid_t pid;
      struct timespec t0;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      if (posix_spawn(&pid, argv[3], &actions, NULL, argv + 3, environ) != 0) {
        perror("posix_spawn");
        return 1;
      }
      const struct timespec at = after(t0, us);
      sleep_until(&at);
      kill(pid, SIGHUP);
      int status = 0;
      int ended = wait_ms(pid, 300, &status);
      if (!ended) {
        kill(pid, SIGTERM);
        ended = wait_ms(pid, 20000, &status);
        if (!ended) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
        }
      }
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP) {
        ++deaths;
      } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        ++other;
      }
    }
    printf("t=%6ld us: %d/%d killed by SIGHUP%s\n", us, deaths, trials,
           other ? " (and other failures)" : "");
    fflush(stdout);
    if (deaths > 0 && us > largest) largest = us;
  }
  printf("largest delay with a death: %ld us\n", largest);
  return 0;
}
