// Command fake-cri serves the CRI RuntimeService on a unix socket with the generated server of
// k8s.io/cri-api, answering Status with the runtime handlers given on the command line; every
// other method is Unimplemented. It stands in for a container runtime in tests of `kubenode
// doctor --cri-socket` where no containerd or CRI-O is available: the protocol is the real one.
//
//	fake-cri --socket /run/x.sock --handler runc=userns --handler kata
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type handlers []string

func (h *handlers) String() string     { return strings.Join(*h, ",") }
func (h *handlers) Set(v string) error { *h = append(*h, v); return nil }

type server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	handlers []*runtimeapi.RuntimeHandler
}

func (s *server) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		RuntimeHandlers: s.handlers,
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"fake": `{"handlers":"` + fmt.Sprint(len(s.handlers)) + `"}`}
	}
	return resp, nil
}

func main() {
	socket := flag.String("socket", "", "unix socket to listen on")
	var hs handlers
	flag.Var(&hs, "handler", "NAME or NAME=userns (repeatable; an empty NAME is the default handler)")
	flag.Parse()
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "fake-cri: --socket is required")
		os.Exit(2)
	}
	s := &server{}
	for _, h := range hs {
		name, feat, _ := strings.Cut(h, "=")
		s.handlers = append(s.handlers, &runtimeapi.RuntimeHandler{
			Name:     name,
			Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: feat == "userns"},
		})
	}
	_ = os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-cri:", err)
		os.Exit(1)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; g.Stop() }()
	fmt.Println("fake-cri: serving on", *socket)
	if err := g.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "fake-cri:", err)
		os.Exit(1)
	}
}
