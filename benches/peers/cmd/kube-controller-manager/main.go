// Command kube-controller-manager is the upstream Kubernetes controller
// manager, built from the k8s.io/kubernetes module pinned in ../../go.mod. It
// contains no code of its own: the servicecidr bench runs it with
// --controllers=service-cidr-controller as the upstream side of the
// ServiceCIDR controller comparison.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	command := app.NewControllerManagerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
