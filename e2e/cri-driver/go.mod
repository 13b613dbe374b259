// cri-driver: a CRI client for test/cri/cri_test.sh, on the published CRI API and the gRPC
// version that API's go.mod requires. Built by e2e/cri-driver/build.
module allot.dev/e2e/cri-driver

go 1.26.0

require (
	google.golang.org/grpc v1.79.3
	k8s.io/cri-api v0.36.3
)

require (
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260128011058-8636f8732409 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
)
