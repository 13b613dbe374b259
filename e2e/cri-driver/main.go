// cri-driver: the few CRI calls test/cri/cri_test.sh makes of a real container runtime, through
// the published client (k8s.io/cri-api), so that allot-gc's own client is checked against the
// runtime's answers, not against a fake server. Built by e2e/cri-driver/build.
//
//	cri-driver -a SOCKET [-cgroup-parent DIR] run NAME   RunPodSandbox, host network; prints its ID
//	cri-driver -a SOCKET stop ID                         StopPodSandbox
//	cri-driver -a SOCKET rm ID                           RemovePodSandbox
//	cri-driver -a SOCKET status ID                       prints ready, not_ready or not_found
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	addr := flag.String("a", "", "the runtime's unix socket (a path)")
	cgroupParent := flag.String("cgroup-parent", "", "run: the sandbox's cgroup parent")
	timeout := flag.Duration("t", time.Minute, "the call's timeout")
	flag.Parse()
	if *addr == "" || flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: cri-driver -a SOCKET [-cgroup-parent DIR] run NAME | stop ID | rm ID | status ID")
		os.Exit(2)
	}
	conn, err := grpc.NewClient("unix://"+*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	client := runtime.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	verb, arg := flag.Arg(0), flag.Arg(1)
	switch verb {
	case "run":
		err = run(ctx, client, arg, *cgroupParent)
	case "stop":
		_, err = client.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: arg})
	case "rm":
		_, err = client.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: arg})
	case "status":
		err = printStatus(ctx, client, arg)
	default:
		err = fmt.Errorf("unknown verb %q", verb)
	}
	if err != nil {
		fail(err)
	}
}

// run starts a sandbox in the node's network namespace (no CNI plugin is needed; no hostname
// either: the UTS namespace is the node's too).
func run(ctx context.Context, client runtime.RuntimeServiceClient, name, cgroupParent string) error {
	cfg := &runtime.PodSandboxConfig{
		Metadata: &runtime.PodSandboxMetadata{
			Name: name, Uid: name + "-uid", Namespace: "allot-cri-test",
		},
		Linux: &runtime.LinuxPodSandboxConfig{
			CgroupParent: cgroupParent,
			SecurityContext: &runtime.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtime.NamespaceOption{
					Network: runtime.NamespaceMode_NODE,
					Pid:     runtime.NamespaceMode_POD,
					Ipc:     runtime.NamespaceMode_POD,
				},
			},
		},
	}
	resp, err := client.RunPodSandbox(ctx, &runtime.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return err
	}
	fmt.Println(resp.PodSandboxId)
	return nil
}

func printStatus(ctx context.Context, client runtime.RuntimeServiceClient, id string) error {
	resp, err := client.PodSandboxStatus(ctx, &runtime.PodSandboxStatusRequest{PodSandboxId: id})
	switch {
	case status.Code(err) == codes.NotFound:
		fmt.Println("not_found")
	case err != nil:
		return err
	case resp.GetStatus().GetState() == runtime.PodSandboxState_SANDBOX_READY:
		fmt.Println("ready")
	default:
		fmt.Println("not_ready")
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cri-driver:", err)
	os.Exit(1)
}
