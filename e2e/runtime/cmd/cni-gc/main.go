// Command cni-gc asks libcni for a garbage collection the way a container runtime
// does (containerd calls the same GCNetworkList): with the list of attachments that
// are still valid. cnitool's own "gc" passes no list (cnitool/cmd/gc.go), so the
// runtime tests use this instead.
//
//	cni-gc [--cache-dir DIR] NETWORK [CONTAINERID/IFNAME ...]
//
// NETCONFPATH and CNI_PATH are read as cnitool reads them. libcni first DELs
// every cached attachment of NETWORK not in the list, then (CNI 1.1.0 and
// later) sends GC with "cni.dev/valid-attachments" to each plugin of the list.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

func main() {
	cacheDir := flag.String("cache-dir", "", "libcni's result cache (default /var/lib/cni)")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: cni-gc [--cache-dir DIR] NETWORK [CONTAINERID/IFNAME ...]")
		os.Exit(2)
	}
	netdir := os.Getenv("NETCONFPATH")
	if netdir == "" {
		netdir = "/etc/cni/net.d"
	}
	list, err := libcni.LoadNetworkConf(netdir, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	valid := []types.GCAttachment{}
	for _, a := range flag.Args()[1:] {
		id, ifname, ok := strings.Cut(a, "/")
		if !ok || id == "" || ifname == "" {
			fmt.Fprintf(os.Stderr, "cni-gc: %q is not CONTAINERID/IFNAME\n", a)
			os.Exit(2)
		}
		valid = append(valid, types.GCAttachment{ContainerID: id, IfName: ifname})
	}
	cni := libcni.NewCNIConfigWithCacheDir(filepath.SplitList(os.Getenv("CNI_PATH")), *cacheDir, nil)
	if err := cni.GCNetworkList(context.Background(), list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
