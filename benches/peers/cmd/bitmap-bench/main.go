// Command bitmap-bench measures the upstream allocation bitmap
// (k8s.io/kubernetes/pkg/registry/core/service/allocator), the structure
// behind Service IP/port allocation and the kubelet's user-namespace manager.
//
// Scenarios:
//
//	alloc-release-99full  65536-slot map, 99% of the slots allocated at
//	                      random positions (fixed seed); one op is
//	                      AllocateNext() followed by Release() of the result.
//	alloc-release-empty   the same op on an empty 65536-slot map.
package main

import (
	"flag"
	"math/rand"

	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"kubenode.dev/peers/internal/benchfmt"
)

const slots = 65536

func main() {
	f := benchfmt.Register("bitmap-bench", 100000, 15)
	flag.Parse()
	f.Check()

	full := slots * 99 / 100
	m := allocator.NewAllocationMap(slots, "user namespaces")
	prefill(m, slots, full)
	f.Bench("alloc-release-99full", func(n int) { allocRelease(m, n) },
		benchfmt.KV{Key: "slots", Value: slots}, benchfmt.KV{Key: "allocated", Value: full})

	e := allocator.NewAllocationMap(slots, "user namespaces")
	f.Bench("alloc-release-empty", func(n int) { allocRelease(e, n) },
		benchfmt.KV{Key: "slots", Value: slots}, benchfmt.KV{Key: "allocated", Value: 0})

	f.Done()
}

// prefill allocates count distinct random slots of m with Allocate.
func prefill(m *allocator.AllocationBitmap, size, count int) {
	rng := rand.New(rand.NewSource(benchfmt.Seed))
	for _, i := range rng.Perm(size)[:count] {
		ok, err := m.Allocate(i)
		if err != nil || !ok {
			benchfmt.Fatalf("prefill: Allocate(%d) = %v, %v", i, ok, err)
		}
	}
	if m.Free() != size-count {
		benchfmt.Fatalf("prefill: %d free slots, want %d", m.Free(), size-count)
	}
}

// allocRelease performs n AllocateNext+Release pairs.
func allocRelease(m *allocator.AllocationBitmap, n int) {
	for range n {
		i, ok, err := m.AllocateNext()
		if err != nil || !ok {
			benchfmt.Fatalf("AllocateNext = %d, %v, %v", i, ok, err)
		}
		if err := m.Release(i); err != nil {
			benchfmt.Fatalf("Release(%d): %v", i, err)
		}
	}
}
