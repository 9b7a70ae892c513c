// The new PID namespace the engine cross-checks record in, so that the
// recorded program has the same pid in every run (crosscheck_test_util.h,
// native/native_test_util.h).
//
// The program is pid 2, not 1: the namespace's init is a process that only
// waits. A namespace's init gets no signal whose action is the default
// from inside it, and a traced one not even a fatal signal a fault raises
// (the kernel drops it and the faulting instruction runs again forever),
// so a crashing program (tests/programs/crash.c) could not be recorded as
// pid 1.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace backstep::record::test_util {

// Unshares the PID namespace of the caller's future children and starts
// their init (pid 1 there, *init here); the next child is pid 2. The error
// message, "" if none.
inline std::string EnterNewPidNamespace(pid_t* init) {
  *init = -1;
  if (unshare(CLONE_NEWPID) != 0)
    return std::string("unshare(CLONE_NEWPID): ") + std::strerror(errno);
  const pid_t pid = fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    // Ends with its creator, should the test die before EndPidNamespace
    // (getppid() is 0 here: the creator is outside the namespace).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    while (true) pause();  // reaps nothing: the test ends it
  }
  *init = pid;
  return "";
}

// Ends the namespace's init, and so every process left in the namespace.
inline void EndPidNamespace(pid_t init) {
  if (init <= 0) return;
  kill(init, SIGKILL);
  waitpid(init, nullptr, __WALL);
}

}  // namespace backstep::record::test_util
