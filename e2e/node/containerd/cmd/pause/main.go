// Command pause is the process of a pod sandbox on the harness's nodes: it holds the
// pod's namespaces, reaps orphaned children (it is PID 1 of the pod when the pod
// shares its PID namespace), and exits on SIGINT or SIGTERM. Written for allot's
// real-node harness, which has no image registry to pull the usual pause image from.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
