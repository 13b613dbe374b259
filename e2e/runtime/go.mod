// The CNI runtime the runtime tests and the demo drive allot with: cnitool (libcni)
// from the official CNI module and the reference plugins, pinned to their newest
// releases. Built by e2e/runtime/build-tools; cmd/cni-gc is a tiny libcni GC caller.
module allot.dev/e2e/runtime

go 1.26.0

tool (
	github.com/containernetworking/cni/cnitool
	github.com/containernetworking/plugins/plugins/ipam/host-local
	github.com/containernetworking/plugins/plugins/main/bridge
	github.com/containernetworking/plugins/plugins/main/loopback
	github.com/containernetworking/plugins/plugins/main/macvlan
)

require github.com/containernetworking/cni v1.3.1

require (
	github.com/alexflint/go-filemutex v1.3.0 // indirect
	github.com/containernetworking/plugins v1.9.1 // indirect
	github.com/coreos/go-iptables v0.8.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/networkplumbing/go-nft v0.4.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/safchain/ethtool v0.6.2 // indirect
	github.com/spf13/cobra v1.9.1 // indirect
	github.com/spf13/pflag v1.0.6 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	go.opentelemetry.io/otel v1.29.0 // indirect
	go.opentelemetry.io/otel/trace v1.29.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	sigs.k8s.io/knftables v0.0.18 // indirect
)
