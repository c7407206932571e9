// Command kube-apiserver is the upstream Kubernetes API server, built from the
// k8s.io/kubernetes module pinned in ../../go.mod. It contains no code of its
// own: it exists so integration tests can run a real API server.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
