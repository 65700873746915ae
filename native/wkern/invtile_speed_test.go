//go:build linux && amd64 && !purego

package wkern

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestInvTileSpeed reports (KVLAB_SPEED_REPORT set) where a 16-token Q4_0 product's time goes
// — a batched pass's first step of 16 chats — as thread CPU time per tile step (16 rows × one
// 32-value block × 16 tokens), best of many passes: the weights in cache (products of 64 rows of
// 2048 values, four row groups, so a product's own setup shows), streamed from memory (a TinyLlama layer's seven matrices, eight layers of them in
// huge pages as a mapped model file's weights are), and streamed with each matrix's rows in the
// eight ranges a two-thread pool cuts, taken in order ("in order": one thread going through
// every range) or every other one first ("alternating": what each of two threads sees when
// they take turns, every range starting cold, its rows neither cached nor prefetched). The
// last line is the median, over the passes, of the alternating pass's time over the in-order
// one's of the same round.
func TestInvTileSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(5, 6))
	const n = 16
	typ := gguf.Q4_0
	k, _ := KernelOf(typ)
	if !invTiled(typ) {
		t.Skip("no tile kernels on this CPU")
	}
	acts := map[int]*Act{}
	for _, c := range []int{2048, 5632} {
		var a Act
		a.Quantize(k.Format(), randomVec(r, n*c), n, c)
		acts[c] = &a
	}
	rb := func(cols int) int { return int(typ.RowBytes(uint64(cols))) }
	y := make([]float32, n*5632)

	hot := randomRows(r, typ, 64, 2048)
	bestHot := time.Hour
	for range 200 {
		t0 := cputime.Thread()
		for range 16 {
			k.MulInvariant(y, 64, hot, rb(2048), acts[2048], 0, 64)
		}
		bestHot = min(bestHot, cputime.Thread()-t0)
	}
	t.Logf("in cache, 64 rows a product: %.2f ns a step", float64(bestHot.Nanoseconds())/float64(16*64/16*2048/32))

	type mat struct {
		rows, cols int
		data       []byte
	}
	shapes := [][2]int{{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}}
	total := 0
	for _, sh := range shapes {
		total += 8 * sh[0] * rb(sh[1])
	}
	const huge = 2 << 20
	mem, err := syscall.Mmap(-1, 0, total+huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	buf := mem[(huge-int(uintptr(unsafe.Pointer(&mem[0]))%huge))%huge:][:total]
	_ = syscall.Madvise(buf, 14) // MADV_HUGEPAGE; without it the pages are 4 KiB
	var mats []mat
	var steps float64
	for range 8 {
		for _, sh := range shapes {
			d := buf[: sh[0]*rb(sh[1]) : sh[0]*rb(sh[1])]
			buf = buf[len(d):]
			copy(d, randomRows(r, typ, sh[0], sh[1]))
			mats = append(mats, mat{sh[0], sh[1], d})
			steps += float64(sh[0] / 16 * sh[1] / 32)
		}
	}
	// pass multiplies every matrix, its rows in ranges of 1/ranges of its 16-row groups: in
	// order, or the even ranges and then the odd ones.
	pass := func(ranges int, alternate bool) time.Duration {
		t0 := cputime.Thread()
		for _, m := range mats {
			groups := m.rows / 16
			step := (groups + ranges - 1) / ranges
			for parity := range 2 {
				for c := 0; c*step < groups; c++ {
					if alternate && c%2 != parity || !alternate && parity == 1 {
						continue
					}
					lo, hi := 16*c*step, 16*min((c+1)*step, groups)
					k.MulInvariant(y, m.rows, m.data, rb(m.cols), acts[m.cols], lo, hi)
				}
			}
		}
		return cputime.Thread() - t0
	}
	names := []string{"streamed, one range a matrix:", "streamed, 8 ranges in order: ", "streamed, 8 ranges alternating:"}
	best := []time.Duration{time.Hour, time.Hour, time.Hour}
	var ratios []float64
	for range 20 {
		d := []time.Duration{pass(1, false), pass(8, false), pass(8, true)}
		for i := range d {
			best[i] = min(best[i], d[i])
		}
		ratios = append(ratios, float64(d[2])/float64(d[1]))
	}
	for i, name := range names {
		t.Logf("%s %.2f ns a step", name, float64(best[i].Nanoseconds())/steps)
	}
	slices.Sort(ratios)
	t.Logf("alternating over in order: median %.3f (quartiles %.3f–%.3f)", ratios[len(ratios)/2], ratios[len(ratios)/4], ratios[3*len(ratios)/4])
}
