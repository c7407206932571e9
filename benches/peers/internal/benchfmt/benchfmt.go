// Package benchfmt is the measurement and output protocol shared by the Go
// peer benchmarks. Every bench binary accepts the same flags and prints one
// line per scenario:
//
//	-iters N      timed operations per sample
//	-samples K    number of timed samples
//	-json         print one JSON object per scenario per line (default: text)
//	-scenario S   comma-separated list of scenarios to run (default: all)
//
// A JSON line looks like
//
//	{"peer":"go-upstream","bench":"bitmap-bench","scenario":"alloc-release-empty",
//	 "medianNsPerOp":51.2,"p25NsPerOp":50.9,"p75NsPerOp":52.0,"samples":15,
//	 "opsPerSample":100000,"upstream":"k8s.io/kubernetes v1.37.2",...extra}
//
// The percentiles are taken over the per-sample ns/op values. One untimed
// warm-up sample runs before the timed samples, and the heap is collected
// before every sample.
package benchfmt

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Peer is the value of the "peer" field of every result.
const Peer = "go-upstream"

// Seed is the fixed seed for every random choice made by the bench programs.
const Seed = 20240613

// KV is one extra field of a result line; extras keep their order.
type KV struct {
	Key   string
	Value any
}

// Flags holds the shared command-line flags of one bench binary.
type Flags struct {
	Name     string
	Iters    int
	Samples  int
	JSON     bool
	Scenario string

	ran int
}

// Register defines the shared flags on flag.CommandLine. Call flag.Parse
// afterwards (bench-specific flags may be defined before that).
func Register(bench string, defIters, defSamples int) *Flags {
	f := &Flags{Name: bench}
	flag.IntVar(&f.Iters, "iters", defIters, "timed operations per sample")
	flag.IntVar(&f.Samples, "samples", defSamples, "number of timed samples")
	flag.BoolVar(&f.JSON, "json", false, "print one JSON object per scenario per line")
	flag.StringVar(&f.Scenario, "scenario", "", "comma-separated scenarios to run (default: all)")
	return f
}

// Check validates the flag values; call it after flag.Parse.
func (f *Flags) Check() {
	if f.Iters < 1 {
		Fatalf("-iters must be >= 1 (got %d)", f.Iters)
	}
	if f.Samples < 1 {
		Fatalf("-samples must be >= 1 (got %d)", f.Samples)
	}
}

// Want reports whether the scenario was selected with -scenario.
func (f *Flags) Want(scenario string) bool {
	if f.Scenario == "" {
		return true
	}
	for _, s := range strings.Split(f.Scenario, ",") {
		if strings.TrimSpace(s) == scenario {
			return true
		}
	}
	return false
}

// Done exits non-zero when -scenario named nothing that ran.
func (f *Flags) Done() {
	if f.ran == 0 {
		Fatalf("no scenario matched -scenario=%q", f.Scenario)
	}
}

// Bench times op(f.Iters) once per sample, after one untimed warm-up call,
// and prints the result. op must perform exactly n operations.
func (f *Flags) Bench(scenario string, op func(n int), extra ...KV) {
	f.BenchCustom(scenario, f.Iters, func() time.Duration {
		start := time.Now()
		op(f.Iters)
		return time.Since(start)
	}, extra...)
}

// BenchCustom is Bench for scenarios that need untimed per-sample set-up:
// sample performs opsPerSample operations and returns the time they took.
// It is called once for warm-up and then once per timed sample.
func (f *Flags) BenchCustom(scenario string, opsPerSample int, sample func() time.Duration, extra ...KV) {
	if !f.Want(scenario) {
		return
	}
	if opsPerSample < 1 {
		Fatalf("%s: opsPerSample must be >= 1", scenario)
	}
	runtime.GC()
	sample() // warm-up
	perOp := make([]float64, 0, f.Samples)
	for i := 0; i < f.Samples; i++ {
		runtime.GC()
		d := sample()
		perOp = append(perOp, float64(d.Nanoseconds())/float64(opsPerSample))
	}
	slices.Sort(perOp)
	f.Emit(scenario, []KV{
		{"medianNsPerOp", round(Quantile(perOp, 0.5))},
		{"p25NsPerOp", round(Quantile(perOp, 0.25))},
		{"p75NsPerOp", round(Quantile(perOp, 0.75))},
		{"samples", f.Samples},
		{"opsPerSample", opsPerSample},
	}, extra...)
}

// Emit prints one result line with the common header fields (peer, bench,
// scenario), then fields, then the upstream module version, then extra.
func (f *Flags) Emit(scenario string, fields []KV, extra ...KV) {
	f.ran++
	kvs := []KV{{"peer", Peer}, {"bench", f.Name}, {"scenario", scenario}}
	kvs = append(kvs, fields...)
	kvs = append(kvs, KV{"upstream", Upstream()}, KV{"go", runtime.Version()})
	kvs = append(kvs, extra...)
	if f.JSON {
		os.Stdout.Write(append(Object(kvs), '\n'))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s:", f.Name, scenario)
	for _, kv := range kvs[3:] {
		switch v := kv.Value.(type) {
		case float64:
			fmt.Fprintf(&b, " %s=%s", kv.Key, strconv.FormatFloat(v, 'f', -1, 64))
		case string, int, int64, uint64, bool:
			fmt.Fprintf(&b, " %s=%v", kv.Key, v)
		default:
			raw, _ := json.Marshal(v)
			if len(raw) > 120 {
				raw = append(raw[:117:117], "..."...)
			}
			fmt.Fprintf(&b, " %s=%s", kv.Key, raw)
		}
	}
	fmt.Println(b.String())
}

// Object encodes kvs as a JSON object whose keys keep their order.
func Object(kvs []KV) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(kv.Value)
		if err != nil {
			Fatalf("encode %s: %v", kv.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Quantile returns the q-quantile of sorted values (linear interpolation).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

func round(v float64) float64 {
	if v >= 100 {
		return float64(int64(v*10+0.5)) / 10
	}
	return float64(int64(v*1000+0.5)) / 1000
}

// Upstream returns "k8s.io/kubernetes vX.Y.Z" as recorded in the binary's
// build information.
func Upstream() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == "k8s.io/kubernetes" {
			return m.Path + " " + m.Version
		}
	}
	return "unknown"
}

// MaxRSSKB returns the peak resident set size of this process in KiB.
func MaxRSSKB() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return int64(ru.Maxrss) // Linux reports KiB
}

// Fatalf prints an error to stderr and exits with status 1.
func Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(1)
}
