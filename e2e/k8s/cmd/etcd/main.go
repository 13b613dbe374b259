// Command etcd is the upstream etcd server (same version k8s.io/kubernetes
// pins), built for allot's local test harness. It accepts etcd's usual flags
// (--data-dir, --listen-client-urls, --listen-peer-urls, ...).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
