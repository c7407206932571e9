// Command sysctl-bench measures the kubelet's sysctl admission handler
// (k8s.io/kubernetes/pkg/kubelet/sysctl).
//
// The allowlist is SafeSysctlAllowlist(ctx) (depends on the running kernel's
// version) plus the 20 patterns below, as a node admin would pass with
// --allowed-unsafe-sysctls. One op is Admit() of a pod whose security context
// carries the 8 sysctls below, all of them allowed: three from the safe list,
// two exact unsafe names and three that only match a `*` pattern.
//
// Scenario: admit-pod-8-sysctls. The JSON line lists "safe", "patterns" and
// "sysctls" so another implementation can rebuild the same workload.
package main

import (
	"context"
	"flag"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/sysctl"

	"kubenode.dev/peers/internal/benchfmt"
)

// patterns are the extra allowlist entries: 13 exact names and 7 prefixes.
var patterns = []string{
	"net.core.somaxconn",
	"net.core.rmem_default",
	"net.core.wmem_default",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_tw_reuse",
	"net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.conf.all.rp_filter",
	"kernel.msgmax",
	"kernel.msgmnb",
	"kernel.msgmni",
	"kernel.sem",
	"kernel.shmmax",
	"kernel.shmall",
	"net.ipv6.conf.*",
	"net.ipv4.neigh.*",
	"net.ipv4.route.*",
	"net.netfilter.*",
	"kernel.shm*",
	"kernel.msg*",
	"fs.mqueue.*",
}

// podSysctls are the pod's sysctls, all admitted by the allowlist.
var podSysctls = []v1.Sysctl{
	{Name: "kernel.shm_rmid_forced", Value: "1"},                // safe
	{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}, // safe
	{Name: "net.ipv4.tcp_syncookies", Value: "1"},               // safe
	{Name: "net.core.somaxconn", Value: "1024"},                 // exact pattern
	{Name: "kernel.msgmax", Value: "65536"},                     // exact pattern
	{Name: "net.ipv6.conf.all.disable_ipv6", Value: "0"},        // net.ipv6.conf.*
	{Name: "fs.mqueue.msg_max", Value: "64"},                    // fs.mqueue.*
	{Name: "net.ipv4.neigh.default.gc_thresh1", Value: "256"},   // net.ipv4.neigh.*
}

func main() {
	f := benchfmt.Register("sysctl-bench", 200000, 15)
	flag.Parse()
	f.Check()

	ctx := context.Background()
	safe := sysctl.SafeSysctlAllowlist(ctx)
	allow, err := sysctl.NewAllowlist(append(append([]string{}, safe...), patterns...))
	if err != nil {
		benchfmt.Fatalf("NewAllowlist: %v", err)
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sysctl-pod", Namespace: "default", UID: "9c3b7a52-1f0e-4c55-9d1e-6f2b8e4a0c11"},
		Spec: v1.PodSpec{
			SecurityContext: &v1.PodSecurityContext{Sysctls: podSysctls},
			Containers:      []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	attrs := &lifecycle.PodAdmitAttributes{Pod: pod, Operation: lifecycle.AddOperation}
	admit := admitFunc(allow)
	if admit == nil {
		benchfmt.Fatalf("the sysctl allowlist has no Admit method this program knows")
	}
	if r := admit(attrs); !r.Admit {
		benchfmt.Fatalf("pod not admitted: %s: %s", r.Reason, r.Message)
	}

	names := make([]string, len(podSysctls))
	for i, s := range podSysctls {
		names[i] = s.Name
	}
	f.Bench("admit-pod-8-sysctls", func(n int) {
		for range n {
			if r := admit(attrs); !r.Admit {
				benchfmt.Fatalf("pod not admitted: %s", r.Message)
			}
		}
	},
		benchfmt.KV{Key: "safe", Value: safe},
		benchfmt.KV{Key: "patterns", Value: patterns},
		benchfmt.KV{Key: "sysctls", Value: names},
	)
	f.Done()
}
