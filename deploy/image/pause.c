/*
 * The pause process of the test tier's pod sandbox image (deploy/image/test-images.sh): it holds the pod's
 * namespaces and does nothing else. As PID 1 of the sandbox it reaps whatever children are reparented to
 * it, and it exits 0 on SIGTERM or SIGINT (PID 1 gets no default action for them, only what it handles).
 *
 * Built static (gcc -static), so the image needs no C library: FROM scratch and this one file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) {
    stop_signal = sig;
}

static void on_child(int sig) {
    (void) sig;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

static int handle(int sig, void (*handler)(int), int flags) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = flags;
    sigfillset(&action.sa_mask);
    return sigaction(sig, &action, NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        if (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0) {
            puts("blocknode-test pause 1");
            return 0;
        }
        fprintf(stderr, "usage: %s [-v|--version]\n", argv[0]);
        return 2;
    }
    if (getpid() != 1) {
        fprintf(stderr, "pause: warning: not PID 1, children of others will not be reaped here\n");
    }
    /* Block the three signals except inside sigsuspend, so that one arriving between the test of
     * stop_signal and the wait is not lost until the next. */
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &blocked, &waiting) != 0
            || handle(SIGTERM, on_stop, 0) != 0 || handle(SIGINT, on_stop, 0) != 0
            || handle(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) != 0) {
        perror("pause: signals");
        return 1;
    }
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGINT);
    sigdelset(&waiting, SIGCHLD);
    while (!stop_signal) {
        sigsuspend(&waiting);
    }
    fprintf(stderr, "pause: exiting on signal %d\n", (int) stop_signal);
    return 0;
}
