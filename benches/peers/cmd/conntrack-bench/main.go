// Command conntrack-bench runs kube-proxy's stale-UDP-conntrack cleanup
// (k8s.io/kubernetes/pkg/proxy/conntrack CleanStaleEntries) once against the
// real conntrack table of the current network namespace, through upstream's
// netlink conntracker (conntrack.New()). Run it under `ip netns exec` in a
// namespace whose table the caller has filled; it needs CAP_NET_ADMIN.
//
// Services and endpoints are fed through kube-proxy's own change trackers
// (proxy.NewServiceChangeTracker / NewEndpointsChangeTracker) as v1.Service
// and discovery/v1.EndpointSlice objects, so the ServicePortMap and
// EndpointsMap are exactly what the iptables/nftables proxiers hold.
//
// Input (-services FILE -endpoints FILE; both may name the same file):
//
//	{"services": [{"name": "dns", "protocol": "UDP", "clusterIP": "10.96.0.10",
//	               "port": 53, "nodePort": 30053, "externalIPs": ["..."],
//	               "loadBalancerIPs": ["..."]}, ...],
//	 "endpoints": {"dns": [{"ip": "10.244.1.5", "port": 5353, "serving": true}, ...]}}
//
// Each file may also hold the bare array / object. Names are unique, all in
// namespace "default", one port per service. Entries of the other IP family
// are ignored, as kube-proxy's per-family proxier does.
//
// Output: one line, scenario "clean-stale-entries", with "deleted" (flows
// deleted by DeleteEntries), "listed", "wallSeconds" (the CleanStaleEntries
// call), "listSeconds", "deleteSeconds", "maxRssKB" (getrusage) and the usual
// protocol fields with samples=1, opsPerSample=1 (the run is destructive, so
// -iters and -samples are ignored).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/proxy"
	"k8s.io/kubernetes/pkg/proxy/conntrack"

	"kubenode.dev/peers/internal/benchfmt"
)

type serviceIn struct {
	Name            string   `json:"name"`
	Protocol        string   `json:"protocol"`
	ClusterIP       string   `json:"clusterIP"`
	Port            int32    `json:"port"`
	NodePort        int32    `json:"nodePort,omitempty"`
	ExternalIPs     []string `json:"externalIPs,omitempty"`
	LoadBalancerIPs []string `json:"loadBalancerIPs,omitempty"`
}

type endpointIn struct {
	IP      string `json:"ip"`
	Port    int32  `json:"port"`
	Serving bool   `json:"serving"`
}

const namespace = "default"

// maxEndpointsPerSlice is the EndpointSlice controller's default.
const maxEndpointsPerSlice = 100

// counting wraps upstream's netlink conntracker to observe what
// CleanStaleEntries listed and deleted.
type counting struct {
	inner                conntrack.Interface
	listed, deleted      int
	listErr, deleteErr   error
	listTime, deleteTime time.Duration
}

func (c *counting) ListEntries(family uint8) ([]*netlink.ConntrackFlow, error) {
	start := time.Now()
	e, err := c.inner.ListEntries(family)
	c.listTime += time.Since(start)
	c.listed += len(e)
	if err != nil {
		c.listErr = err
	}
	return e, err
}

func (c *counting) DeleteEntries(family uint8, flows []*netlink.ConntrackFlow) (int, error) {
	start := time.Now()
	n, err := c.inner.DeleteEntries(family, flows)
	c.deleteTime += time.Since(start)
	c.deleted += n
	if err != nil {
		c.deleteErr = err
	}
	return n, err
}

// readKey decodes file into out; the file holds either {key: value} or the
// bare value.
func readKey(file, key string, out any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var wrapped map[string]json.RawMessage
	if json.Unmarshal(raw, &wrapped) == nil {
		if v, ok := wrapped[key]; ok {
			return json.Unmarshal(v, out)
		}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: expected {%q: ...} or the bare value: %w", file, key, err)
	}
	return nil
}

func protocol(s string) (v1.Protocol, error) {
	switch strings.ToUpper(s) {
	case "UDP":
		return v1.ProtocolUDP, nil
	case "TCP":
		return v1.ProtocolTCP, nil
	case "SCTP":
		return v1.ProtocolSCTP, nil
	}
	return "", fmt.Errorf("unknown protocol %q", s)
}

func familyOf(ip string) (v1.IPFamily, error) {
	p := net.ParseIP(ip)
	switch {
	case p == nil:
		return "", fmt.Errorf("invalid IP %q", ip)
	case p.To4() != nil:
		return v1.IPv4Protocol, nil
	default:
		return v1.IPv6Protocol, nil
	}
}

func buildService(in serviceIn) (*v1.Service, error) {
	proto, err := protocol(in.Protocol)
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", in.Name, err)
	}
	fam, err := familyOf(in.ClusterIP)
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", in.Name, err)
	}
	if in.Port < 1 || in.Port > 65535 {
		return nil, fmt.Errorf("service %q: port %d out of range", in.Name, in.Port)
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: namespace},
		Spec: v1.ServiceSpec{
			Type:        v1.ServiceTypeClusterIP,
			ClusterIP:   in.ClusterIP,
			ClusterIPs:  []string{in.ClusterIP},
			IPFamilies:  []v1.IPFamily{fam},
			Ports:       []v1.ServicePort{{Protocol: proto, Port: in.Port, NodePort: in.NodePort}},
			ExternalIPs: in.ExternalIPs,
		},
	}
	if in.NodePort != 0 {
		svc.Spec.Type = v1.ServiceTypeNodePort
	}
	if len(in.LoadBalancerIPs) > 0 {
		svc.Spec.Type = v1.ServiceTypeLoadBalancer
		for _, ip := range in.LoadBalancerIPs {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
		}
	}
	return svc, nil
}

// buildSlices turns one service's endpoints into EndpointSlices of the given
// family: one group per target port, at most maxEndpointsPerSlice each.
func buildSlices(svc *v1.Service, eps []endpointIn, fam v1.IPFamily) ([]*discovery.EndpointSlice, int, error) {
	addrType := discovery.AddressTypeIPv4
	if fam == v1.IPv6Protocol {
		addrType = discovery.AddressTypeIPv6
	}
	proto := svc.Spec.Ports[0].Protocol
	byPort := map[int32][]discovery.Endpoint{}
	var ports []int32
	used := 0
	for _, e := range eps {
		f, err := familyOf(e.IP)
		if err != nil {
			return nil, 0, fmt.Errorf("endpoints of %q: %w", svc.Name, err)
		}
		if f != fam {
			continue
		}
		if e.Port < 1 || e.Port > 65535 {
			return nil, 0, fmt.Errorf("endpoints of %q: port %d out of range", svc.Name, e.Port)
		}
		serving := e.Serving
		ready := e.Serving
		terminating := !e.Serving
		if _, ok := byPort[e.Port]; !ok {
			ports = append(ports, e.Port)
		}
		byPort[e.Port] = append(byPort[e.Port], discovery.Endpoint{
			Addresses:  []string{e.IP},
			Conditions: discovery.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		})
		used++
	}
	var slices []*discovery.EndpointSlice
	for _, port := range ports {
		list := byPort[port]
		for start := 0; start < len(list); start += maxEndpointsPerSlice {
			end := min(start+maxEndpointsPerSlice, len(list))
			name, p, pr := "", port, proto
			slices = append(slices, &discovery.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Name:      fmt.Sprintf("%s-p%d-%d", svc.Name, port, start/maxEndpointsPerSlice),
					Namespace: namespace,
					Labels:    map[string]string{discovery.LabelServiceName: svc.Name},
				},
				AddressType: addrType,
				Endpoints:   list[start:end],
				Ports:       []discovery.EndpointPort{{Name: &name, Port: &p, Protocol: &pr}},
			})
		}
	}
	return slices, used, nil
}

func main() {
	f := benchfmt.Register("conntrack-bench", 1, 1)
	servicesFile := flag.String("services", "", "JSON file with the services (required)")
	endpointsFile := flag.String("endpoints", "", "JSON file with the endpoints (default: the -services file)")
	familyFlag := flag.String("family", "ipv4", "IP family to clean: ipv4 or ipv6")
	flag.Parse()
	if *servicesFile == "" {
		benchfmt.Fatalf("-services FILE is required")
	}
	if *endpointsFile == "" {
		*endpointsFile = *servicesFile
	}
	var fam v1.IPFamily
	switch *familyFlag {
	case "ipv4":
		fam = v1.IPv4Protocol
	case "ipv6":
		fam = v1.IPv6Protocol
	default:
		benchfmt.Fatalf("-family must be ipv4 or ipv6 (got %q)", *familyFlag)
	}

	var services []serviceIn
	if err := readKey(*servicesFile, "services", &services); err != nil {
		benchfmt.Fatalf("read services: %v", err)
	}
	endpoints := map[string][]endpointIn{}
	if err := readKey(*endpointsFile, "endpoints", &endpoints); err != nil {
		benchfmt.Fatalf("read endpoints: %v", err)
	}

	setupStart := time.Now()
	sct := proxy.NewServiceChangeTracker(fam, nil, nil)
	ect := proxy.NewEndpointsChangeTracker(fam, "", nil, nil)
	seen := map[string]bool{}
	nEndpoints := 0
	for _, in := range services {
		if seen[in.Name] {
			benchfmt.Fatalf("duplicate service name %q (one port per service)", in.Name)
		}
		seen[in.Name] = true
		svc, err := buildService(in)
		if err != nil {
			benchfmt.Fatalf("%v", err)
		}
		sct.Update(nil, svc)
		slices, used, err := buildSlices(svc, endpoints[in.Name], fam)
		if err != nil {
			benchfmt.Fatalf("%v", err)
		}
		nEndpoints += used
		for _, s := range slices {
			ect.EndpointSliceUpdate(s, false)
		}
	}
	for name := range endpoints {
		if !seen[name] {
			fmt.Fprintf(os.Stderr, "warning: endpoints for unknown service %q ignored\n", name)
		}
	}
	svcPortMap := make(proxy.ServicePortMap)
	svcPortMap.Update(sct)
	endpointsMap := make(proxy.EndpointsMap)
	endpointsMap.Update(ect)
	setup := time.Since(setupStart)

	ct := &counting{inner: conntrack.New()}
	start := time.Now()
	conntrack.CleanStaleEntries(ct, fam, svcPortMap, endpointsMap)
	wall := time.Since(start)

	if ct.listErr != nil && !errors.Is(ct.listErr, unix.EINTR) {
		benchfmt.Fatalf("listing conntrack entries failed (needs CAP_NET_ADMIN and nf_conntrack): %v", ct.listErr)
	}
	if ct.deleteErr != nil {
		benchfmt.Fatalf("deleting conntrack entries failed after %d deletions: %v", ct.deleted, ct.deleteErr)
	}
	ns := float64(wall.Nanoseconds())
	f.Emit("clean-stale-entries", []benchfmt.KV{
		{Key: "medianNsPerOp", Value: ns},
		{Key: "p25NsPerOp", Value: ns},
		{Key: "p75NsPerOp", Value: ns},
		{Key: "samples", Value: 1},
		{Key: "opsPerSample", Value: 1},
	},
		benchfmt.KV{Key: "family", Value: *familyFlag},
		benchfmt.KV{Key: "services", Value: len(svcPortMap)},
		benchfmt.KV{Key: "endpoints", Value: nEndpoints},
		benchfmt.KV{Key: "listed", Value: ct.listed},
		benchfmt.KV{Key: "deleted", Value: ct.deleted},
		benchfmt.KV{Key: "partialList", Value: ct.listErr != nil},
		benchfmt.KV{Key: "wallSeconds", Value: wall.Seconds()},
		benchfmt.KV{Key: "listSeconds", Value: ct.listTime.Seconds()},
		benchfmt.KV{Key: "deleteSeconds", Value: ct.deleteTime.Seconds()},
		benchfmt.KV{Key: "setupSeconds", Value: setup.Seconds()},
		benchfmt.KV{Key: "maxRssKB", Value: benchfmt.MaxRSSKB()},
	)
}
