/*
 * The sandbox ("pause") process of a pod: it holds the pod's namespaces and does nothing else. As
 * PID 1 of a shared PID namespace it must reap orphaned children (else they stay zombies), and it
 * must exit 0 when the runtime stops the sandbox with SIGTERM or SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  int saved = errno;
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(void) {
  struct sigaction on_stop = {0};
  on_stop.sa_handler = stop;
  struct sigaction on_child = {0};
  on_child.sa_handler = reap;
  on_child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGTERM, &on_stop, NULL) < 0 || sigaction(SIGINT, &on_stop, NULL) < 0 ||
      sigaction(SIGCHLD, &on_child, NULL) < 0) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
