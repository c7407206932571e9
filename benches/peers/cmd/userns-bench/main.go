// Command userns-bench measures the kubelet's user-namespace allocation
// (k8s.io/kubernetes/pkg/kubelet/userns).
//
// Scenarios:
//
//	alloc-near-full      the allocator exactly as UsernsManager uses it: a
//	                     65535-slot AllocationBitmap (the kubelet default
//	                     mapping, 2^32-65536 IDs in 65536-ID blocks) with 99%
//	                     of the slots taken at random (fixed seed); one op is
//	                     AllocateNext() + Release().
//	getorcreate-release  a real UsernsManager over a pods folder on disk: one
//	                     sample calls GetOrCreateUserNamespaceMappings for
//	                     -pods pods with hostUsers=false (each writes
//	                     <dir>/<uid>/userns with upstream's file and directory
//	                     fsyncs), then Release for each of them. One op is one
//	                     pod's create + release; opsPerSample = -pods.
//	                     With -held H, H other pods already hold ranges:
//	                     their files are written first (untimed, without
//	                     fsync) on every slot but an evenly spread free set
//	                     (slot floor(k*slots/free) for k < free, free =
//	                     65535-H), and MakeUserNsManager restores them, so
//	                     the sample runs on a manager holding H..H+pods
//	                     allocations. The held files are synced to disk
//	                     before the manager starts. With -podsdir P the
//	                     pods folder P is used as it is (its -held pods
//	                     must be there already), nothing is written to it
//	                     first, and at the end only the cycled pods'
//	                     folders are removed: the state of 65,000 pods is
//	                     then made once and shared by several runs.
//	                     With -concurrent, one goroutine per pod calls
//	                     GetOrCreateUserNamespaceMappings, all started at
//	                     once, then one goroutine per pod calls Release.
//
// -dir selects the filesystem for getorcreate-release: a fresh folder is
// created inside it (default: the system temp folder) and removed at the end.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/userns"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"kubenode.dev/peers/internal/benchfmt"
)

// kubelet defaults (pkg/kubelet/kubelet_pods.go getKubeletMappings with no
// "kubelet" entry in /etc/subuid): first ID 65536, length 2^32-65536.
const (
	idsPerPod   = 65536
	firstID     = idsPerPod
	mappingLen  = uint32((1 << 32) - uint64(firstID))
	bitmapSlots = int(mappingLen / idsPerPod) // 65535
)

// podsManager is the kubelet side that UsernsManager talks to: pod
// folders live directly under root.
type podsManager struct {
	root    string
	maxPods int
}

func (p *podsManager) HandlerSupportsUserNamespaces(string) (bool, error) { return true, nil }
func (p *podsManager) GetPodDir(uid types.UID) string                     { return filepath.Join(p.root, string(uid)) }
func (p *podsManager) GetKubeletMappings(klog.Logger, uint32) (uint32, uint32, error) {
	return firstID, mappingLen, nil
}
func (p *podsManager) GetMaxPods() int { return p.maxPods }
func (p *podsManager) ListPodsFromDisk() ([]types.UID, error) {
	entries, err := os.ReadDir(p.root)
	if err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids, nil
}

func main() {
	f := benchfmt.Register("userns-bench", 100000, 15)
	dir := flag.String("dir", "", "folder in which getorcreate-release creates its pods folder (default: system temp folder)")
	pods := flag.Int("pods", 110, "pods per getorcreate-release sample (1..65535)")
	held := flag.Int("held", 0, "pods already holding ranges (restored at start) in getorcreate-release")
	podsDir := flag.String("podsdir", "", "existing pods folder to use as it is (instead of a fresh one in -dir)")
	concurrent := flag.Bool("concurrent", false, "getorcreate-release: one goroutine per pod, all started at once (creates, then releases)")
	flag.Parse()
	f.Check()
	if *pods < 1 || *held < 0 || *pods+*held > bitmapSlots {
		benchfmt.Fatalf("-pods must be >= 1 and -pods + -held <= %d (got %d, %d)", bitmapSlots, *pods, *held)
	}

	allocNearFull(f)
	if f.Want("getorcreate-release") {
		getOrCreateRelease(f, *dir, *podsDir, *pods, *held, *concurrent)
	}
	f.Done()
}

func allocNearFull(f *benchfmt.Flags) {
	full := bitmapSlots * 99 / 100
	m := allocator.NewAllocationMap(bitmapSlots, "user namespaces")
	rng := rand.New(rand.NewSource(benchfmt.Seed))
	for _, i := range rng.Perm(bitmapSlots)[:full] {
		if ok, err := m.Allocate(i); err != nil || !ok {
			benchfmt.Fatalf("prefill: Allocate(%d) = %v, %v", i, ok, err)
		}
	}
	f.Bench("alloc-near-full", func(n int) {
		for range n {
			i, ok, err := m.AllocateNext()
			if err != nil || !ok {
				benchfmt.Fatalf("AllocateNext = %d, %v, %v", i, ok, err)
			}
			if err := m.Release(i); err != nil {
				benchfmt.Fatalf("Release(%d): %v", i, err)
			}
		}
	}, benchfmt.KV{Key: "slots", Value: bitmapSlots}, benchfmt.KV{Key: "allocated", Value: full})
}

// podUIDs returns n distinct UUID-shaped pod UIDs from the fixed seed.
func podUIDs(n int) []types.UID {
	rng := rand.New(rand.NewSource(benchfmt.Seed))
	seen := make(map[types.UID]bool, n)
	uids := make([]types.UID, 0, n)
	for len(uids) < n {
		var b [16]byte
		rng.Read(b[:])
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		u := types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
		if !seen[u] {
			seen[u] = true
			uids = append(uids, u)
		}
	}
	return uids
}

// writeHeld writes the kubelet files of held pods (see -held) straight to
// disk; MakeUserNsManager then restores them.
func writeHeld(root string, held int) {
	free := bitmapSlots - held
	isFree := make([]bool, bitmapSlots)
	for k := 0; k < free; k++ {
		isFree[k*bitmapSlots/free] = true
	}
	k := 0
	for slot := 0; slot < bitmapSlots; slot++ {
		if isFree[slot] {
			continue
		}
		dir := filepath.Join(root, fmt.Sprintf("00000000-0000-4000-8000-%012x", k))
		k++
		if err := os.Mkdir(dir, 0o755); err != nil {
			benchfmt.Fatalf("held pods: %v", err)
		}
		host := (slot + 1) * idsPerPod
		data := fmt.Sprintf(`{"uidMappings":[{"hostId":%d,"containerId":0,"length":%d}],"gidMappings":[{"hostId":%d,"containerId":0,"length":%d}]}`, host, idsPerPod, host, idsPerPod)
		if err := os.WriteFile(filepath.Join(dir, "userns"), []byte(data), 0o600); err != nil {
			benchfmt.Fatalf("held pods: %v", err)
		}
	}
	// Otherwise the first timed fsync would commit all of these to the journal.
	syscall.Sync()
}

func getOrCreateRelease(f *benchfmt.Flags, parent, podsDir string, n, held int, concurrent bool) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.UserNamespacesSupport) {
		if err := utilfeature.DefaultMutableFeatureGate.Set(string(features.UserNamespacesSupport) + "=true"); err != nil {
			benchfmt.Fatalf("enable %s: %v", features.UserNamespacesSupport, err)
		}
	}
	root := podsDir
	if root == "" {
		var err error
		root, err = os.MkdirTemp(parent, "userns-bench-")
		if err != nil {
			benchfmt.Fatalf("create pods folder: %v", err)
		}
		defer os.RemoveAll(root)
		writeHeld(root, held)
	}
	logger := klog.Background()
	kl := &podsManager{root: root, maxPods: held + n}
	mgr, err := userns.MakeUserNsManager(logger, kl, nil)
	if err != nil || mgr == nil {
		benchfmt.Fatalf("MakeUserNsManager: %v (manager %v)", err, mgr)
	}

	hostUsers := false
	podList := make([]*v1.Pod, n)
	if podsDir != "" {
		defer func() {
			for _, pod := range podList {
				os.Remove(filepath.Join(root, string(pod.UID)))
			}
		}()
	}
	for i, uid := range podUIDs(n) {
		podList[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: "default", UID: uid},
			Spec: v1.PodSpec{
				HostUsers:  &hostUsers,
				Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			},
		}
	}

	create := func(pod *v1.Pod) {
		ns, err := mgr.GetOrCreateUserNamespaceMappings(logger, pod, "")
		if err != nil {
			benchfmt.Fatalf("GetOrCreateUserNamespaceMappings(%s): %v", pod.UID, err)
		}
		if len(ns.Uids) != 1 || ns.Uids[0].Length != idsPerPod {
			benchfmt.Fatalf("unexpected mapping for %s: %v", pod.UID, ns)
		}
	}
	release := func(pod *v1.Pod) { mgr.Release(logger, pod.UID) }
	// Each call once per pod: in order on one goroutine, or one goroutine per pod (as pod
	// workers call the manager), waiting for all.
	each := func(call func(*v1.Pod)) {
		if !concurrent {
			for _, pod := range podList {
				call(pod)
			}
			return
		}
		var wg sync.WaitGroup
		for _, pod := range podList {
			wg.Add(1)
			go func() {
				defer wg.Done()
				call(pod)
			}()
		}
		wg.Wait()
	}
	f.BenchCustom("getorcreate-release", n, func() time.Duration {
		start := time.Now()
		each(create)
		each(release)
		return time.Since(start)
	},
		benchfmt.KV{Key: "pods", Value: n},
		benchfmt.KV{Key: "held", Value: held},
		benchfmt.KV{Key: "dir", Value: root},
		benchfmt.KV{Key: "slots", Value: bitmapSlots},
		benchfmt.KV{Key: "concurrent", Value: concurrent},
	)
}
