/* Signals that interrupt blocking system calls, and fork/vfork with the
 * parent recorded (the native engine's cross-check with the ptrace engine,
 * recorder/native/native_crosscheck_test.cc): SIGALRM wakes pause()
 * (-EINTR); a handler without SA_RESTART interrupts a read() of an empty
 * pipe (-EINTR); one with SA_RESTART interrupts it again and the kernel
 * restarts it (the handler wrote the byte the restarted read returns);
 * SIGALRM interrupts nanosleep() (-EINTR). Each SIGALRM comes from a fork
 * child that sends it once the program waits in the call (its state in
 * /proc is S), so it arrives there in every run however slowly the program
 * runs. SIGCHLD stays blocked: it never reaches the program. Then a vfork
 * child exits at once. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile sig_atomic_t alarms;

static void on_alarm(int sig) { alarms += sig; }

static void on_alarm_fill(int sig) {
  alarms += sig;
  if (write(fds[1], "x", 1) != 1) alarms = -1;
}

static void handle(void (*handler)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigaction(SIGALRM, &sa, NULL);
}

/* A child that sends SIGALRM to the program once it waits in a system call. */
static pid_t alarm_when_waiting(void) {
  const pid_t child = fork();
  if (child != 0) return child;
  /* The program's pid as /proc knows it (it may be another PID namespace's:
   * the recorder's tests run the program as pid 1 of its own): the parent
   * in /proc/self/stat, "pid (comm) state ppid ...". */
  char path[64], self[512];
  const int self_fd = open("/proc/self/stat", O_RDONLY);
  const ssize_t self_n = self_fd < 0 ? -1 : read(self_fd, self, sizeof self - 1);
  if (self_n <= 0) _exit(1);
  self[self_n] = 0;
  const char *after_comm = strrchr(self, ')');
  int parent = 0;
  if (!after_comm || sscanf(after_comm + 2, "%*c %d", &parent) != 1) _exit(1);
  snprintf(path, sizeof path, "/proc/%d/stat", parent);
  for (;;) {
    char stat[512];
    const int fd = open(path, O_RDONLY);
    const ssize_t n = fd < 0 ? -1 : read(fd, stat, sizeof stat - 1);
    if (fd >= 0) close(fd);
    if (n <= 0) _exit(1);
    stat[n] = 0;
    const char *state = strrchr(stat, ')'); /* "pid (comm) S ..." */
    if (state && state[1] == ' ' && state[2] == 'S') break;
    usleep(1000);
  }
  kill(getppid(), SIGALRM);
  _exit(0);
}

static void reap(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
}

int main(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  if (pipe(fds) != 0) return 1;
  handle(on_alarm, 0);
  pid_t child = alarm_when_waiting();
  const int paused = pause();
  const int pause_errno = errno;
  reap(child);
  char c = 0;
  child = alarm_when_waiting();
  const ssize_t interrupted = read(fds[0], &c, 1);
  const int read_errno = errno;
  reap(child);
  handle(on_alarm_fill, SA_RESTART);
  child = alarm_when_waiting();
  const ssize_t restarted = read(fds[0], &c, 1);
  reap(child);
  handle(on_alarm, 0);
  child = alarm_when_waiting();
  const struct timespec ten_seconds = {10, 0};
  const int slept = nanosleep(&ten_seconds, NULL);
  const int sleep_errno = errno;
  reap(child);
  const pid_t vchild = vfork();
  if (vchild == 0) _exit(4);
  int vstatus = 0;
  waitpid(vchild, &vstatus, 0);
  printf("pause %d %s, read %zd %s, restarted read %zd '%c', nanosleep %d %s, alarms %d, "
         "vfork %d\n",
         paused, strerror(pause_errno), interrupted, strerror(read_errno), restarted, c, slept,
         strerror(sleep_errno), alarms, WEXITSTATUS(vstatus));
  return 0;
}
