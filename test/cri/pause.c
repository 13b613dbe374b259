/* The process of the cri suite's sandbox image (test/cri/cri_test.sh builds it with gcc -static
 * and packs it as an image: no registry is reachable). As the pod's PID 1 it gets no default
 * signal action, so it says itself that SIGTERM and SIGINT end it; it reaps nothing (the
 * sandbox holds no other process). */
#include <signal.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

int main(void) {
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    for (;;) pause();
}
