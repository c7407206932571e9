// Command cidr-bench measures the ServiceCIDR lookups of
// k8s.io/kubernetes/pkg/api/servicecidr the way the ServiceCIDR controller
// (pkg/controller/servicecidrs) runs them: ContainsAddress over a
// ServiceCIDR lister backed by an informer indexer.
//
// Data set (deterministic): 10,000 networking/v1 ServiceCIDR objects named
// cidr-00000 .. cidr-09999. Object i has the IPv4 CIDR 10.<i/256>.<i%256>.0/24;
// every tenth object (i%10 == 0) also has the IPv6 CIDR fd00::<i in hex>:0/112.
//
// Queries: 64 addresses from the fixed seed, cycled through in order: 48 IPv4
// hosts inside one of the /24s, 10 IPv6 addresses inside one of the /112s,
// 6 misses (192.168.x.y and 2001:db8::x). One op is one ContainsAddress call.
//
// Scenario: containing-10k. The JSON line lists "queries" and per-query
// "matches" counts so another implementation can check its answers.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/servicecidr"

	"kubenode.dev/peers/internal/benchfmt"
)

const objects = 10000

func ipv4CIDR(i int) string { return fmt.Sprintf("10.%d.%d.0/24", i/256, i%256) }
func ipv6CIDR(i int) string { return fmt.Sprintf("fd00::%x:0/112", i) }

func buildObjects() []*networkingv1.ServiceCIDR {
	out := make([]*networkingv1.ServiceCIDR, objects)
	for i := range objects {
		cidrs := []string{ipv4CIDR(i)}
		if i%10 == 0 {
			cidrs = append(cidrs, ipv6CIDR(i))
		}
		out[i] = &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cidr-%05d", i), ResourceVersion: "1"},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
		}
	}
	return out
}

func buildQueries() []netip.Addr {
	rng := rand.New(rand.NewSource(benchfmt.Seed))
	var q []netip.Addr
	for range 48 {
		i := rng.Intn(objects)
		q = append(q, netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), byte(1 + rng.Intn(254))}))
	}
	for range 10 {
		i := rng.Intn(objects/10) * 10
		p := netip.MustParsePrefix(ipv6CIDR(i))
		b := p.Addr().As16()
		host := 1 + rng.Intn(65535)
		b[14], b[15] = byte(host>>8), byte(host)
		q = append(q, netip.AddrFrom16(b))
	}
	for range 3 {
		q = append(q, netip.AddrFrom4([4]byte{192, 168, byte(rng.Intn(256)), byte(1 + rng.Intn(254))}))
		q = append(q, netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", 1+rng.Intn(65535))))
	}
	// interleave the three kinds deterministically
	rng.Shuffle(len(q), func(a, b int) { q[a], q[b] = q[b], q[a] })
	return q
}

func main() {
	f := benchfmt.Register("cidr-bench", 200, 15)
	flag.Parse()
	f.Check()

	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range buildObjects() {
		if err := indexer.Add(o); err != nil {
			benchfmt.Fatalf("indexer add: %v", err)
		}
	}
	lister := networkinglisters.NewServiceCIDRLister(indexer)

	queries := buildQueries()
	qs := make([]string, len(queries))
	matches := make([]int, len(queries))
	for i, a := range queries {
		qs[i] = a.String()
		matches[i] = len(servicecidr.ContainsAddress(lister, a))
	}

	next := 0
	f.Bench("containing-10k", func(n int) {
		for range n {
			_ = servicecidr.ContainsAddress(lister, queries[next])
			next++
			if next == len(queries) {
				next = 0
			}
		}
	},
		benchfmt.KV{Key: "objects", Value: objects},
		benchfmt.KV{Key: "queries", Value: qs},
		benchfmt.KV{Key: "matches", Value: matches},
	)
	f.Done()
}
