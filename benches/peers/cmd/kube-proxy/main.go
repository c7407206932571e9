// Command kube-proxy is the upstream Kubernetes network proxy, built from the
// k8s.io/kubernetes module pinned in ../../go.mod. It contains no code of its
// own: the fleet bench runs one per node network namespace (nftables mode)
// beside kubenode's conntrack reconciler, to compare their memory.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// The registrations the release binary links in, so its memory is the release's.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
