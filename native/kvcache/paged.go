package kvcache

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// A paged cache (Config.Pages) holds the K and V rows of its full-context layers in pages of
// PageCells cells taken from a PagePool shared by every cache of one model: a page holds one
// run of PageCells positions for every paged layer and KV head, so a sequence takes a page per
// PageCells cells as it grows and gives them back when truncated, reset or released. Caches
// that start alike share their prefix pages (Cache.ShareFrom): a shared page is never written;
// a write into one copies it first (copy on write), so only the last, partial, page of a shared
// prefix is ever copied. The readers split a range of cells at page boundaries and run the
// row kernels on each run, so attention reads a paged cache as it reads a contiguous one.
// Pages are cut from slabs of several pages whose memory holds each store's rows of the
// slab's pages one after another (pageMem), so the pages a cache took one after another
// from a slab hold its rows of one head in one run in memory.
//
// What is not paged stays in the cache's own memory, reserved at creation and charged to the
// pool's budget as the cache's fixed bytes: sliding-window rings, the FP16 overlay, a group K
// format's (q2k) pool, the staging buffers. A mixed cache (Recent) pages nothing and has no
// pool.

// PageCells is the number of cells of one page.
const PageCells = 64

// ErrNoPages is returned when the pool's budget has no room left for a page or a cache (it
// wraps ErrKVFull: the cache cannot grow).
var ErrNoPages = fmt.Errorf("%w: no free KV pages in the budget", ErrKVFull)

// PagesFor is the number of pages that hold cells cells.
func PagesFor(cells int) int { return (max(cells, 0) + PageCells - 1) / PageCells }

// PagePool is the page store of one model's caches: pages of PageCells cells of every paged
// layer and KV head, handed out as caches grow, shared between caches by reference count, and
// a memory budget that pages, reservations and the caches' fixed bytes are drawn from. It is
// safe for concurrent use.
type PagePool struct {
	cfg       Config
	paged     []bool // per layer
	kPaged    bool   // K rows are paged (false for a group K format)
	rbK, rbV  []int  // per layer: row bytes of K (0 when not paged) and V
	layerOff  []int  // byte offset of each paged layer in a page
	spans     []span // every paged store's span of a page, in page order
	pageBytes int64
	fixed     int64 // one cache's fixed bytes
	budget    int64

	mu   sync.Mutex
	room *sync.Cond // on mu: signalled when fill adds a page to the free pages, and when it ends
	// data is every allocated page: every page of every slab (growLocked), allocated on first
	// use or ahead of it (KeepAhead), and kept.
	data []pageMem
	// slabs are, for HugePages, the slabs whose pages data holds, whole.
	slabs [][]byte
	ref   []int32
	// free marks, by id, the allocated pages no cache holds and fill does not touch; nfree
	// is how many there are.
	free  []bool
	nfree int
	// inflight is the pages fill has counted on and not yet added to data (its slab is being
	// made); pending those in data that fill touches before they join free.
	inflight, pending int
	pagesUsed         int
	fixedUsed         int64
	reserved          int64
	changed           chan struct{} // closed and replaced whenever bytes are given back
	// ahead is KeepAhead's page count; filling is set while its goroutine runs.
	ahead   int
	filling bool
}

// PageStats is a pool's state.
type PageStats struct {
	// Total is the pages the budget holds; Used the pages caches hold (a shared page once);
	// Free the pages not used, reserved or set aside for the caches' fixed bytes.
	Total, Used, Free int
	// ReservedBytes are promised to sequences and not taken yet; FixedBytes held by the live
	// caches outside the pages.
	ReservedBytes, FixedBytes int64
	// PageBytes is one page's memory; BudgetBytes the whole budget.
	PageBytes, BudgetBytes int64
	// Allocated is the pages whose memory the pool holds: the used ones and those kept for
	// reuse or taken ahead of need (KeepAhead). It never exceeds MaxPages. Every page of a
	// slab the pool makes (growLocked) is allocated at once, those no cache takes yet kept
	// free: a slab's pages are spread over all of it (pageMem), so the first write into one
	// touches the whole slab. Allocated × PageBytes is all the memory the pool's slabs hold.
	// Free counts budget, not memory: a free page may have no memory yet.
	Allocated int
}

// NewPagePool makes the pool of budget bytes for caches of cfg (whose Pages is ignored). It
// fails when cfg has nothing to page (a mixed cache). It allocates no cells: a page's layout and
// a cache's fixed bytes follow from cfg's formats (the row sizes of their codecs).
func NewPagePool(cfg Config, budget int64) (*PagePool, error) {
	cfg.Pages = nil
	if cfg.Recent > 0 {
		return nil, fmt.Errorf("kvcache: %w: a mixed cache (f16 window of %d cells) is not paged", kvq.ErrUnsupported, cfg.Recent)
	}
	if budget < 0 {
		return nil, fmt.Errorf("kvcache: KV budget %d bytes must not be negative", budget)
	}
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	p := &PagePool{cfg: cfg, kPaged: !cfg.Pair.K.Grouped(), budget: budget, changed: make(chan struct{})}
	p.room = sync.NewCond(&p.mu)
	// What New would hold outside the pages, per layer and head: a sliding-window ring's rows,
	// a group K format's pool at the full context, the FP16 overlay.
	var fixed int64
	off := 0
	for l := range cfg.Layers {
		ring := cfg.layerWindow(l)
		paged := ring == 0
		lp := cfg.LayerPair(l)
		kRow, err := codecRowBytes(lp.K, cfg.HeadDimK, cfg, l, true)
		if err != nil {
			return nil, fmt.Errorf("kvcache: K: %w", err)
		}
		vRow, err := codecRowBytes(lp.V, cfg.HeadDimV, cfg, l, false)
		if err != nil {
			return nil, fmt.Errorf("kvcache: V: %w", err)
		}
		kb, vb := int64(ring*kRow), int64(ring*vRow)
		if lp.K.Grouped() {
			kb = groupKBytes(cfg.MaxCells, cfg.HeadDimK, 1)
		}
		rbK, rbV := 0, 0
		if paged {
			if p.kPaged {
				rbK, kb = kRow, 0
			}
			rbV, vb = vRow, 0
			if cfg.Window > 0 || cfg.Sinks > 0 {
				slots := min(cfg.Window, cfg.MaxCells) + min(cfg.Sinks, cfg.MaxCells)
				fixed += kvq.OverlayBytes(int64(slots), cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads)
			}
		}
		fixed += int64(cfg.KVHeads) * (kb + vb)
		p.paged = append(p.paged, paged)
		p.layerOff = append(p.layerOff, off)
		p.rbK, p.rbV = append(p.rbK, rbK), append(p.rbV, rbV)
		for range cfg.KVHeads {
			for _, rb := range []int{rbK, rbV} {
				if rb > 0 {
					p.spans = append(p.spans, span{off, PageCells * rb})
					off += PageCells * rb
				}
			}
		}
	}
	if off == 0 {
		return nil, fmt.Errorf("kvcache: %w: every layer is a sliding-window ring: nothing to page", kvq.ErrUnsupported)
	}
	p.pageBytes, p.fixed = int64(off), fixed
	return p, nil
}

// codecRowBytes is the bytes of one cell's row of one head of layer l in format f (0 for a group
// format, which has no rows), from the codec newStore would make (of head 0: a format's rows are
// the same size on every head).
func codecRowBytes(f kvq.Format, d int, cfg Config, l int, isK bool) (int, error) {
	if f.Grouped() {
		if !isK {
			return 0, fmt.Errorf("%w: %s stores K only", kvq.ErrUnsupported, f)
		}
		return 0, nil
	}
	s, err := newStore(f, d, cfg, 0, l, 0, isK)
	if err != nil {
		return 0, err
	}
	return s.(*rowStore).Codec.RowBytes(), nil
}

// PageBytes is the memory of one page.
func (p *PagePool) PageBytes() int64 { return p.pageBytes }

// FixedBytes is the memory one cache holds outside the pages.
func (p *PagePool) FixedBytes() int64 { return p.fixed }

// SessionBytes is what a sequence of cells cells draws from the budget: its pages and its
// fixed bytes.
func (p *PagePool) SessionBytes(cells int) int64 {
	return int64(PagesFor(cells))*p.pageBytes + p.fixed
}

// DrawBytes is what a new cache draws from the budget to grow to cells cells when it starts by
// sharing the first shared cells of another (Cache.ShareFrom): its fixed bytes and the pages it
// will take — every page past the shared full ones (a shared partial page is copied on the
// first write into it). It is SessionBytes(cells) when shared is 0.
func (p *PagePool) DrawBytes(cells, shared int) int64 {
	return p.fixed + int64(max(PagesFor(cells)-max(shared, 0)/PageCells, 0))*p.pageBytes
}

// Shares reports whether the pool's caches can share pages (Cache.ShareFrom): not with a group
// K format, whose K pools are the caches' own.
func (p *PagePool) Shares() bool { return p.kPaged }

// Budget is the pool's budget in bytes.
func (p *PagePool) Budget() int64 { return p.budget }

// Config is the cache configuration the pool's caches have (Pages nil).
func (p *PagePool) Config() Config { return p.cfg }

// Stats is the pool's state now.
func (p *PagePool) Stats() PageStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PageStats{Used: p.pagesUsed, ReservedBytes: p.reserved, FixedBytes: p.fixedUsed, PageBytes: p.pageBytes, BudgetBytes: p.budget, Allocated: len(p.data)}
	st.Total = int(p.budget / p.pageBytes)
	st.Free = int(max(p.availLocked(), 0) / p.pageBytes)
	return st
}

// HugePages is how much of the pages the pool has allocated lies on transparent huge pages now
// (hugemem.CoverageOf; Linux only). It judges the slabs whole (every page of a slab is
// allocated, growLocked), not the pages one by one: a page is mostly smaller than hugemem.Threshold (Llama-3-8B's q4_0 pages hold
// 2.36 MB), and CoverageOf leaves such a buffer out as one that is never advised, which left
// every such pool reading as wholly on huge pages, even with KVLAB_NO_HUGEPAGES set. It reads
// /proc/self/smaps after letting go of the pool's lock: for reports, not for the decode path.
func (p *PagePool) HugePages() hugemem.Coverage {
	p.mu.Lock()
	slabs := slices.Clone(p.slabs)
	p.mu.Unlock()
	return hugemem.CoverageOf(slabs...)
}

// MaxPages is the most pages the budget lets caches hold at once: what is left of it after
// one cache's fixed bytes.
func (p *PagePool) MaxPages() int { return int(max(p.budget-p.fixed, 0) / p.pageBytes) }

// KeepAhead makes the pool hold up to n pages that no cache uses, their memory allocated and
// touched ahead of need by a goroutine of the pool's own, so that new sequences find their
// pages resident instead of allocating, zeroing and page-faulting fresh memory inside a forward
// pass. It returns at once; the pages become free one by one as they are touched. Once caches
// have taken half of them, the pool refills them the next time a cache gives bytes back (a
// generation ends), not while a burst of new sequences takes its pages. The free pages count
// as held ahead, those left over from the slabs caches' pages came from included (growLocked),
// so the pool makes no slab for them while it has them. While n is not 0, the goroutine also
// makes the pool's next slab ahead of need once the pool holds slabBytes' pages and its free
// pages fall under half of that slab (slabWantLocked), a burst of new sequences or a growing
// cache included, so that a cache rarely makes one (touching up to slabMaxBytes) inside a
// forward pass; a cache that needs a page while the goroutine makes a slab waits for its pages.
// The pages taken ahead never make the pool hold more than MaxPages, nor more pages than the
// budget could give caches when they were taken (not used, reserved or fixed), and they draw
// nothing from the budget: only the pages caches use do. 0 takes no more pages ahead (those
// held stay) and makes no slab ahead; the goroutine ends once it has added the slab it makes.
func (p *PagePool) KeepAhead(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ahead = max(n, 0)
	p.fillLocked()
}

// StopAhead is KeepAhead(0), and waits for the goroutine that takes pages ahead to end (once it
// has added the slab it makes, untouched): after it the pool allocates no memory in the
// background. For an owner closing the pool (the runner's Close).
func (p *PagePool) StopAhead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ahead = 0
	for p.filling {
		p.room.Wait()
	}
}

// fillLocked starts the goroutine that tops the pages held ahead up to KeepAhead's count,
// unless it runs or they are there.
func (p *PagePool) fillLocked() {
	if p.filling || p.fillWantLocked() == 0 {
		return
	}
	p.filling = true
	go p.fill()
}

// fillWantLocked is how many pages KeepAhead still wants taken: no more than the pool may
// still allocate (MaxPages less the pages it holds or fill counts on) nor than the budget can
// give now (roomLocked), and the next slab ahead of need (slabWantLocked) whole or not at all.
// That slab counts the caches' reservations as room, as growLocked counts its caller's: the
// caches will take those pages. Capped by the unreserved room alone, a pool whose caches hold
// reservations (the runner's always do) made slabs of one page on every page a cache took
// (424 slabs for 470 pages, where 5 without the slab ahead), losing the long runs (pageMem)
// and the huge pages.
func (p *PagePool) fillWantLocked() int {
	limit := p.MaxPages() - len(p.data) - p.inflight
	want := min(p.ahead-p.nfree-p.pending-p.inflight, limit, p.roomLocked(0))
	if s := min(p.slabWantLocked(), limit); s > 0 && p.roomLocked(p.reserved) >= s {
		want = max(want, s)
	}
	return max(want, 0)
}

// slabWantLocked is the pages of the next slab where fill should make it ahead of need, else
// 0: while KeepAhead is on, once the pool holds slabBytes' pages or more, when its free pages
// (those fill touches or counts on included) are fewer than half the next slab's, so that the
// caches take half a slab while fill makes one.
// A cache's growLocked then rarely makes a slab (up to slabMaxBytes) inside a decode step (the
// slab made under the pool's lock, its memory touched in full by the first write into one of
// its pages, pageMem): fill makes and touches it outside the lock, and growLocked waits for its
// pages. A cache (a decode step) that outruns it waits for fill's pages no longer than it would
// take to make the slab itself.
func (p *PagePool) slabWantLocked() int {
	if p.ahead == 0 || len(p.data) < p.slabPagesMin() {
		return 0
	}
	n := p.slabPagesLocked()
	if 2*(p.nfree+p.pending+p.inflight) >= n {
		return 0
	}
	return n
}

// fill allocates the pages KeepAhead wants as slabs (growLocked: every page of a slab is
// allocated), touches every memory page of each page and adds it to the free pages, until
// none is wanted, and the next slab ahead of need (slabWantLocked). A page's touch runs
// without the lock; until it joins the free pages it is pending (allocLocked waits for it
// rather than make a slab).
func (p *PagePool) fill() {
	step := os.Getpagesize()
	p.mu.Lock()
	for {
		n := p.fillWantLocked()
		if n == 0 {
			p.filling = false
			p.room.Broadcast() // StopAhead waits for this
			p.mu.Unlock()
			return
		}
		n = min(n, p.slabPagesLocked())
		p.inflight += n
		p.mu.Unlock()
		slab := hugemem.Bytes(int(int64(n) * p.pageBytes)) // outside the lock: a collapse may copy it
		p.mu.Lock()
		p.inflight -= n
		first := p.addSlabLocked(slab, n, false)
		p.pending += n
		for i := range n {
			page := p.data[first+i]
			if p.ahead > 0 {
				p.mu.Unlock()
				for _, sp := range p.spans {
					b := page.span(sp)
					for j := 0; j < len(b); j += step {
						b[j] = 0 // a write: the system maps the memory page now, not in a pass
					}
				}
				p.mu.Lock()
			}
			p.pending--
			p.freeLocked(int32(first + i))
			p.room.Broadcast()
		}
	}
}

// Changed is closed the next time the pool gets bytes back (a page freed, a reservation or a
// cache released): a caller waiting for room waits on it, then tries again.
func (p *PagePool) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Fits reports whether b bytes are free now (not used, reserved or fixed).
func (p *PagePool) Fits(b int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.availLocked() >= b
}

func (p *PagePool) availLocked() int64 {
	return p.budget - int64(p.pagesUsed)*p.pageBytes - p.fixedUsed - p.reserved
}

func (p *PagePool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
	if p.nfree < (p.ahead+1)/2 {
		p.fillLocked()
	}
}

// compatible checks that cfg's caches can hold this pool's pages.
func (p *PagePool) compatible(cfg Config) error {
	a, b := p.cfg, cfg
	same := a.Layers == b.Layers && a.KVHeads == b.KVHeads && a.HeadDimK == b.HeadDimK && a.HeadDimV == b.HeadDimV &&
		a.Pair == b.Pair && a.MaxCells == b.MaxCells && a.Recent == b.Recent && a.Window == b.Window && a.Sinks == b.Sinks &&
		a.Seed == b.Seed && a.KGain == b.KGain && len(a.Windows) == len(b.Windows)
	for l := 0; same && l < len(a.Windows); l++ {
		same = a.Windows[l] == b.Windows[l]
	}
	for l := 0; same && l < a.Layers; l++ {
		same = a.LayerPair(l) == b.LayerPair(l)
	}
	if !same {
		return errors.New("kvcache: the cache's configuration is not its page pool's")
	}
	return nil
}

// pageTable is a paged cache's pages, in position order, and what it draws from the budget.
type pageTable struct {
	pool     *PagePool
	ids      []int32
	data     []pageMem // data[i] is page ids[i]
	reserved int64     // bytes reserved for pages this cache will take
	fixed    int64
	released bool
	// own is how many leading pages are known present and the cache's alone (ref 1): a write
	// into them needs no look at the pool, so the L layers of a step lock it once, not L times.
	// Sharing a page (ShareFrom) sets it to 0 on both sides.
	own int
}

// allocLocked takes a page for t to follow its page prev (-1: none): from its reservation,
// else from the free budget. It takes a free page (takeFreeLocked: prev's next in its slab
// where free), else makes a slab (growLocked); while fill makes a slab or touches pages, it
// waits for one of those. Where the pages left free fall low, it starts fill on the next slab
// (slabWantLocked).
func (t *pageTable) allocLocked(prev int32) (int32, error) {
	p := t.pool
	for {
		if t.reserved < p.pageBytes && p.availLocked() < p.pageBytes {
			return 0, fmt.Errorf("%w (%d pages of %d KiB in use, budget %d KiB)", ErrNoPages, p.pagesUsed, p.pageBytes>>10, p.budget>>10)
		}
		if p.nfree > 0 || p.growLocked(t.reserved) {
			break
		}
		p.room.Wait() // the budget check runs again: the lock was let go
	}
	if t.reserved >= p.pageBytes {
		t.reserved -= p.pageBytes
		p.reserved -= p.pageBytes
	}
	id := p.takeFreeLocked(prev)
	p.ref[id] = 1
	p.pagesUsed++
	if !p.filling && p.slabWantLocked() > 0 {
		p.fillLocked()
	}
	return id, nil
}

// roomLocked is how many more pages the budget can give now, beyond those the pool holds
// free or pending or fill counts on: what is not used, reserved or fixed (availLocked), plus
// own bytes of a caller's reservation.
func (p *PagePool) roomLocked(own int64) int {
	return int((max(p.availLocked(), 0)+own)/p.pageBytes) - p.nfree - p.pending - p.inflight
}

// slabBytes is the least memory of a slab of growLocked and fill (as many whole pages as it
// holds), unless slabMinPages pages are more.
const slabBytes = 64 << 20

// slabCells is the fewest cells of a slab's pages, unless they are more than slabMaxBytes: a
// cache reads its pages that lie one after another in a slab as one stretch of rows (pageMem),
// which Intel reads in one call of the contiguous kernels when it is long enough (kvq's
// mergeMin, 2048 rows), and caches growing in turn split a slab's free pages between them
// (takeFreeLocked), two caches half a slab each. A served model's page holds every layer's and
// KV head's rows of PageCells cells, 4.25 MiB for 32 layers × 8 KV heads of q8_0 at 128
// values, so 64 MiB slabs held 15 pages (960 cells of a head). Intel Xeon (family 6 model 167,
// 2 vCPUs), TestServedPagedSpeed (32 layers × 8 KV heads × 128, layer 0, one thread, thread
// CPU, best of 10; load 4–8), paged ÷ contiguous at 32768 cells, one session / two sessions
// growing in turn: slabs of 64 MiB (15 pages of q8_0 and fp8, 28–30 of q4_0 and tq4) q8_0
// 1.23 / 1.38, q4_0 1.18 / 1.41, fp8 1.30 / 1.56, tq4 1.21 / 1.48; of 4096 cells (64 pages)
// 1.09 / 1.18, 0.99 / 1.09, 1.11 / 1.16, 0.96 / 1.07; of 8192 cells 1.11 / 1.11, 0.97 / 0.95,
// 1.09 / 1.11, 0.97 / 1.00 (TestPagedDecodeSpeed's one-layer pool then: q8_0 1.09–1.10); of
// 8192 cells reached as the pool grows (slabPagesLocked; 85–89 % of the cells in stretches of
// 2048 or more), alternated twice with 64 MiB slabs (load 8–11): 1.17–1.19 / 1.19–1.22,
// 1.08 / 1.11–1.13, 1.17–1.21 / 1.25–1.27, 1.01–1.07 / 1.06 against 1.17–1.21 / 1.37–1.40,
// 1.14–1.17 / 1.35–1.42, 1.29–1.33 / 1.52–1.53, 1.14–1.17 / 1.42–1.48. At 131072 cells (load
// 5–12): 1.15 / 1.13, 1.17 / 1.20, 1.17 / 1.17, 1.23 / 1.27 against 1.21 / 1.38, 1.34 / 1.58,
// 1.32 / 1.56, 1.38 / 1.64.
const slabCells = 8192

// slabMaxBytes caps the slabs slabCells asks for: 8192 cells of a larger model's pages (80
// layers of f16) would hold several GiB.
const slabMaxBytes = 1 << 30

// slabMinPages is the fewest pages of a slab, unless the budget can give fewer now.
const slabMinPages = 2

// slabPagesMin is the fewest pages of a slab the budget does not cut: slabBytes' whole pages,
// slabMinPages at least.
func (p *PagePool) slabPagesMin() int { return int(max(slabBytes/p.pageBytes, slabMinPages)) }

// slabPagesMax is the most pages of one slab: slabCells' pages within slabMaxBytes, slabBytes'
// where more, slabMinPages at least.
func (p *PagePool) slabPagesMax() int {
	return max(p.slabPagesMin(), int(min(slabCells/PageCells, slabMaxBytes/p.pageBytes)))
}

// slabPagesLocked is the pages of the next slab: as many as the pool has allocated, within
// slabPagesMax, and slabBytes' (slabMinPages) at least. Slabs grow with the pool, so a short
// cache pays for no more memory than before slabCells (a 64 MiB slab, allocated and touched on
// its first write, pageMem), and a long one gets slabs of slabCells after a few. A slab
// growLocked makes (under the pool's lock) costs its memory's first touch in the write into its
// first page, the decode step that took it (0.3–2.6 ms a MiB with the system's huge pages on the Intel Xeon, load 5–8:
// TestServedPageLatency): up to 1 GiB (slabMaxBytes) at a time, once the pool holds as much,
// unless KeepAhead is on: fill then makes and touches it ahead of need, outside the lock
// (slabWantLocked).
func (p *PagePool) slabPagesLocked() int {
	return max(min(len(p.data), p.slabPagesMax()), p.slabPagesMin())
}

// growLocked makes a slab for allocLocked, whose caller holds own bytes of reservation (or
// draws the page from the free budget): a buffer of hugemem.Bytes (2 MiB transparent huge
// pages where the system has them) of slabPagesLocked pages, but of no more than the budget can give now (roomLocked, the caller's reservation
// included) nor than the pool may still allocate (MaxPages less the pages it holds or fill
// counts on); one at least. Every page of the slab is allocated at once and joins the free
// pages: its pages are interleaved (pageMem), so the first write into one page touches the
// whole slab (on 2 MiB pages the system maps most of it), and so the pool counts the whole
// slab as its memory (Allocated), never more than MaxPages. Pages and slabs are kept for as
// long as the pool lives. It reports false, making nothing, while fill makes a slab or
// touches pages (pending, inflight): the caller waits for those rather than make a second
// slab under the lock (fill makes the next slab ahead of need, slabWantLocked).
//
// Making a slab runs under p.mu: where the Go heap hands back memory it has touched already,
// hugemem.Bytes collapses it into huge pages now (MADV_COLLAPSE), so it may copy up to a slab
// (up to slabMaxBytes, or slabMinPages pages where those are larger) while the pool's other callers, a
// decode step's included, wait.
//
// Pages of one slab lie in one buffer on 2 MiB pages, where a page of its own
// (a make of the Go heap) lies on 4 KiB pages: a paged store's rows of one head are runs of
// PageCells rows a page apart, so on 4 KiB pages each run starts on a memory page the TLB and
// the hardware prefetchers have not seen. Zen 4, TestPagedDecodeSpeed (one thread, 32768
// cells, 32/8 heads of 128, thread CPU, best of 12, 3 runs, min; slabs of 16 MiB or 16 pages
// then): paged q4_0 6.63 -> 5.63 ms, q8_0 9.92 -> 8.92, tq4 5.76 -> 5.03, f16 16.2 -> 15.2
// (contiguous: 3.0, 3.4, 2.3, 5.3).
func (p *PagePool) growLocked(own int64) bool {
	if p.pending+p.inflight > 0 {
		return false // fill makes a slab or touches its pages: the caller waits for those
	}
	n := max(min(p.slabPagesLocked(), p.roomLocked(own), p.MaxPages()-len(p.data)), 1)
	p.addSlabLocked(hugemem.Bytes(int(int64(n)*p.pageBytes)), n, true)
	return true
}

// addSlabLocked adds the n pages of slab to the allocated pages, to the free ones where free
// is set, and returns the first's id.
func (p *PagePool) addSlabLocked(slab []byte, n int, free bool) int {
	first := len(p.data)
	p.slabs = append(p.slabs, slab)
	for i := range n {
		p.data = append(p.data, pageMem{slab, i, n})
		p.ref = append(p.ref, 0)
		p.free = append(p.free, false)
	}
	if free {
		for i := range n {
			p.freeLocked(int32(first + i))
		}
	}
	return first
}

// pageMem is where a page's rows lie: page idx of a slab of n pages, whose memory holds each
// store's spans (span) of its n pages one after another in page order, the stores one after
// another in the order of a page's spans (PagePool.spans): a store's span of page idx at
// off·n + idx·len in the slab, off and len the span's in-page offset and length. A store's
// rows of pages idx and idx+1 of a slab are then one run in memory, so a cache whose pages
// were cut one after another from a slab (a prompt's pages; a sequence that grows alone)
// reads its rows in runs of many pages, not of one.
//
// Each page's rows in a buffer of its own (one page after another in the slab) left a
// store's rows in runs of PageCells rows (16 KiB of f16 rows of 128 values) with other
// stores' rows between them, and the Intel Xeon (2 vCPUs, KVM, family 6 model 167) streams
// such runs ~30% slower than contiguous rows whatever the kernels prefetch: f16 scores of 8
// heads × 32768 rows, 4 queries, through the runs kernels (a scratch harness over kvq's
// kernels, not kept; thread CPU, min of 9, load 5–8): runs 16 KiB apart from each other by 256 KiB 6.6–7.0
// ms, 16 KiB apart 6.3–6.6, in pages of 128, 256, 1024 and 4096 cells (runs of 32, 64, 256
// and 1024 KiB) 6.5, 6.3–6.4, 5.1–5.7, 4.7–5.0, the runs one after another 4.9–5.5; with
// the pages 16 KiB or 64 KiB further apart (so that one head's runs do not share L2 sets)
// the same. Neither the runs kernels' prefetches (kvq's runs flavours) nor the hardware's
// make up for it: no software prefetch at all took 9 ms over runs one after another.
type pageMem struct {
	slab   []byte
	idx, n int
}

// span is the in-page offset and length of one store's rows of a page: the bytes it would
// have in a page laid out store after store.
type span struct{ off, n int }

// span is sp's bytes of page m.
func (m pageMem) span(sp span) []byte {
	b := m.spanOn(sp)
	return b[:len(b):len(b)]
}

// spanOn is span with the capacity of the rest of the slab: the rows of the same store in the
// slab's next pages follow (kvq.DotManyMultiRuns takes runs that do as one).
func (m pageMem) spanOn(sp span) []byte {
	o := sp.off*m.n + m.idx*sp.n
	return m.slab[o : o+sp.n]
}

// copyPage copies page src's rows into page dst.
func (p *PagePool) copyPage(dst, src pageMem) {
	for _, sp := range p.spans {
		copy(dst.span(sp), src.span(sp))
	}
}

// freeLocked adds page id to the free pages.
func (p *PagePool) freeLocked(id int32) {
	p.free[id] = true
	p.nfree++
}

// takeFreeLocked takes a free page (there must be one) for a cache whose page before it is
// prev (-1: none). It takes prev's next page in its slab where that is free, so that the
// cache's rows of the two pages are one run in memory (pageMem) and kvq reads them as one
// stretch. Else it starts the cache on the longest run of free pages of one slab (the lowest
// of the longest): at the run's first page where that is its slab's first, else (the page
// before the run is held, most likely the last of a cache that grows into the run) at the
// run's middle, so that both caches grow into a half of it. So caches that grow in turn
// (sessions decoding together take a page each every PageCells cells) take their pages in
// runs of half a slab (two caches), a quarter (four), not every other page; a cache that
// grows alone takes a slab's pages one after another, and a cache given back frees its runs
// whole for the next. Before, the pool handed out the free page of the lowest id: two caches
// growing in turn each took every other page, their stores' rows in runs of PageCells rows.
// The scan for the longest run reads every page's mark, only when a cache starts a run (its
// first page, or prev's next page is held).
func (p *PagePool) takeFreeLocked(prev int32) int32 {
	if next := int(prev) + 1; prev >= 0 && next < len(p.data) && p.free[next] && p.data[next].idx == p.data[prev].idx+1 {
		return p.takeLocked(int32(next))
	}
	best, bestLen, bestFirst := -1, 0, false
	for i := 0; i < len(p.data); {
		if !p.free[i] {
			i++
			continue
		}
		j := i + 1
		for j < len(p.data) && p.free[j] && p.data[j].idx != 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen, bestFirst = i, j-i, p.data[i].idx == 0
		}
		i = j
	}
	if !bestFirst {
		best += bestLen / 2
	}
	return p.takeLocked(int32(best))
}

// takeLocked takes free page id.
func (p *PagePool) takeLocked(id int32) int32 {
	p.free[id] = false
	p.nfree--
	return id
}

func (p *PagePool) decrefLocked(id int32) {
	if p.ref[id]--; p.ref[id] == 0 {
		p.freeLocked(id)
		p.pagesUsed--
	}
}

// ensure makes the pages holding cells [lo, hi) present and the cache's own (copying a shared
// one), taking pages as needed.
func (t *pageTable) ensure(lo, hi int) error {
	if hi <= lo {
		return nil
	}
	if t.released {
		return errors.New("kvcache: the cache was released")
	}
	first, last := lo/PageCells, (hi-1)/PageCells
	if last < t.own {
		return nil
	}
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := first; i <= last; i++ {
		prev := int32(-1)
		if i > 0 {
			prev = t.ids[i-1]
		}
		if i < len(t.ids) {
			old := t.ids[i]
			if p.ref[old] == 1 {
				continue
			}
			id, err := t.allocLocked(prev)
			if err != nil {
				return err
			}
			p.copyPage(p.data[id], p.data[old])
			p.decrefLocked(old)
			t.ids[i], t.data[i] = id, p.data[id]
			continue
		}
		id, err := t.allocLocked(prev)
		if err != nil {
			return err
		}
		t.ids, t.data = append(t.ids, id), append(t.data, p.data[id])
	}
	if first <= t.own {
		t.own = last + 1
	}
	return nil
}

// truncate gives back the pages past the first cells cells.
func (t *pageTable) truncate(cells int) {
	keep := PagesFor(cells)
	if keep >= len(t.ids) {
		return
	}
	t.own = min(t.own, keep)
	p := t.pool
	p.mu.Lock()
	for _, id := range t.ids[keep:] {
		p.decrefLocked(id)
	}
	p.notifyLocked()
	p.mu.Unlock()
	clear(t.data[keep:])
	t.ids, t.data = t.ids[:keep], t.data[:keep]
}

// reserve makes the cache's reservation cover growing to cells cells.
func (t *pageTable) reserve(cells, held int) error {
	if t.released {
		return errors.New("kvcache: the cache was released")
	}
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	need := PagesFor(cells) - len(t.ids)
	// A shared last page is copied on the next write into it.
	if i := held / PageCells; held%PageCells != 0 && i < len(t.ids) && p.ref[t.ids[i]] > 1 {
		need++
	}
	want := int64(max(need, 0))*p.pageBytes - t.reserved
	if want <= 0 {
		return nil
	}
	if p.availLocked() < want {
		return fmt.Errorf("%w: %d cells need %d KiB more, %d KiB free of %d KiB", ErrNoPages, cells, want>>10, max(p.availLocked(), 0)>>10, p.budget>>10)
	}
	t.reserved += want
	p.reserved += want
	return nil
}

// release gives back every page, the reservation and the fixed bytes.
func (t *pageTable) release() {
	if t.released {
		return
	}
	p := t.pool
	p.mu.Lock()
	for _, id := range t.ids {
		p.decrefLocked(id)
	}
	p.reserved -= t.reserved
	p.fixedUsed -= t.fixed
	p.notifyLocked()
	p.mu.Unlock()
	clear(t.data)
	t.ids, t.data, t.reserved, t.fixed, t.released, t.own = nil, nil, 0, 0, true, 0
}

// newPageTable charges a new cache's fixed bytes to the pool.
func newPageTable(p *PagePool) (*pageTable, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.availLocked() < p.fixed {
		return nil, fmt.Errorf("%w: a cache's %d KiB outside the pages do not fit (%d KiB free of %d KiB)", ErrNoPages, p.fixed>>10, max(p.availLocked(), 0)>>10, p.budget>>10)
	}
	p.fixedUsed += p.fixed
	return &pageTable{pool: p, fixed: p.fixed}, nil
}

// pagedStore is one KV head's K or V rows of a paged layer: cell i is row i%PageCells of the
// store's span in page i/PageCells. Its rowStore carries the codec and the length (no Data).
type pagedStore struct {
	*rowStore
	pt *pageTable
	sp span // the store's span of a page: its offset in a page laid out store after store, PageCells × row bytes
}

// page is a row store over page i's rows of this store: a copy of the store's own RowStore
// (which keeps what NewRowStore found out about the codec) over the page's rows.
func (s *pagedStore) page(i int) attn.RowStore {
	rs := *s.RowStore
	rs.Data, rs.N = s.pt.data[i].span(s.sp), PageCells
	return rs
}

// rowData is cell r's packed row.
func (s *pagedStore) rowData(r int) []byte {
	rb := s.Codec.RowBytes()
	o := r % PageCells * rb
	return s.pt.data[r/PageCells].span(s.sp)[o : o+rb]
}

// runs splits m cells from lo at page boundaries: f gets each run's page, the run's first cell
// in that page, its offset from lo and its length.
func (s *pagedStore) runs(lo, m int, f func(rs attn.RowStore, o, off, n int)) {
	for off := 0; off < m; {
		c := lo + off
		o := c % PageCells
		n := min(PageCells-o, m-off)
		f(s.page(c/PageCells), o, off, n)
		off += n
	}
}

func (s *pagedStore) Scores(pq []float32, lo int, out []float32) {
	s.runs(lo, len(out), func(rs attn.RowStore, o, off, n int) { rs.Scores(pq, o, out[off:off+n]) })
}

// ScoresMulti is attn.MultiKeys. The pages' rows go to kvq.DotManyMultiRuns up to runBatch
// pages a call (the codec's multi-query kernels, or DotMany per query), so kernels that round
// the queries first (the VNNI ones) round them once a batch rather than once a page, and
// those that take the runs (q8_0's, q4_0's and f16's on Zen 4) prefetch the next page's rows rather
// than the memory after a page's; on Intel, pages whose rows follow one another in a slab
// (pageMem.spanOn) go to the contiguous kernels as one stretch. Every score is the one a call
// per page gives.
func (s *pagedStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	if n <= 0 {
		return // no queries: nothing to score (and no division by n)
	}
	q := pq[:n*s.Codec.Dim()]
	s.batches(lo, len(out)/n, func(runs [][]byte, first, end int) {
		kvq.DotManyMultiRuns(s.Codec, q, n, runs, out[first*n:end*n])
	})
}

// batches hands f the packed rows of the m cells from lo, split at page boundaries, runBatch
// runs (pages) a call: the runs, the first and the end cell (counted from lo) they cover, and
// after them, as one more run, the rows that follow the batch's, to prefetch only (the outputs
// and weights f takes end with the batch's cells): the first run of the next batch, and with
// the last the store's rows in the page after the range (after), which the next call of a
// decode's work items reads (attn.Decode takes a head's chunks in order), none where there
// are none. So the kernels prefetch past the batch's rows as a contiguous store's kernels
// prefetch past a chunk's rows into the next one's: Zen 4, TestPagedDecodeSpeed (one thread, 32768 cells,
// thread CPU, 5 alternated runs, load 12–14, min) paged q8_0 4.33 → 4.01 ms, q4_0 3.57 →
// 3.34, f16 6.86 → 6.68, tq4 4.56 → 4.32 (before, the values' next batch alone was
// prefetched, by kvq.Prefetch as the batch started).
func (s *pagedStore) batches(lo, m int, f func(runs [][]byte, first, end int)) {
	rb := s.Codec.RowBytes()
	buf := runBufs.Get().(*[runBatch + 1][]byte)
	k, first := 0, 0 // the batch's pages and its first cell
	pages, sp := s.pt.data, s.sp
	for off := 0; off < m; {
		c := lo + off
		o := c % PageCells
		n := min(PageCells-o, m-off)
		pg := &pages[c/PageCells]
		at := sp.off*pg.n + pg.idx*sp.n + o*rb
		rows := pg.slab[at : at+n*rb] // pg.spanOn(sp)[o*rb : (o+n)*rb]: its capacity the rest of the slab
		if k == runBatch {
			f(append(buf[:k:runBatch+1], rows), first, off) // the next run in buf's spare slot
			k, first = 0, off
		}
		buf[k] = rows
		k++
		off += n
	}
	if k > 0 {
		runs := buf[: k : runBatch+1]
		if next := s.after(lo + m); next != nil {
			runs = append(runs, next)
		}
		f(runs, first, m)
	}
	clear(buf[:]) // the pool holds no page
	runBufs.Put(buf)
}

// runBatch is the most pages one kvq.DotManyMultiRuns call of a paged store takes: a chunk of
// attention in one, the longer chunks of long contexts too (up to 4× attn.DefaultChunk, 16384
// cells: attn's defaultChunk), so that on Intel a chunk whose pages follow one another in a slab
// is one stretch, one call of the contiguous kernels as over a contiguous store's chunk (kvq's
// runStretches). Before, 64 pages (a 4096-cell chunk) took four calls of those chunks: Intel Xeon
// (family 6 model 167, 2 vCPUs), a scratch copy of TestPagedDecodeSpeed at 131072 cells
// (16384-cell chunks; best of 8 rounds, 4 alternations, load 4–6), paged ms (÷ contiguous):
// q4_0 13.44–15.23 (1.17–1.19) → 13.17–13.93 (1.10–1.12), tq4 12.60–13.42 (1.16–1.18) →
// 11.78–12.48 (1.11), fp8 25.73–26.42 (1.10–1.18) → 23.92–24.61 (1.04–1.06), q8_0 22.4–25.1
// (1.08–1.09) → 22.9–24.2 (1.08–1.10). Elsewhere (runs taken apart) the same runs kernels over
// the same runs, a quarter of the calls (and of the VNNI kernels' query roundings). batches
// walks the pages itself, not through s.runs (a RowStore made a page): at 32768 cells that
// measured as noise (TestPagedDecodeSpeed, 3 alternations, load 3.3–6.4: paged q4_0 3.23–3.81
// → 3.40–3.48 ms, turbo2 2.31–2.49 → 2.33–2.41, q8_0 5.42–5.99 → 5.61–5.70), but it is 20.2 →
// 3.8 ns a page (a scratch loop of batches alone over 131072 cells × 8 heads of a served
// model's pool, thread CPU: 0.33 → 0.06 ms a phase), and on the Intel Xeon
// TestServedPagedSpeed at 131072 cells, one session (2 alternations, load 6–11), paged ÷
// contiguous went tq4 1.21–1.23 → 1.12, q8_0 1.12–1.13 → 1.09; TestPagedDecodeSpeed (32768
// cells, 2 alternations) paged q4_0 3.74–3.83 → 3.43–3.53 ms, tq4 3.22–3.28 → 3.09, q8_0
// 6.07 → 5.82–6.15.
const runBatch = 256

var runBufs = sync.Pool{New: func() any { return new([runBatch + 1][]byte) }}

// after is the store's rows from cell end to the end of its page, nil where the store holds
// none (end at or past its length, or the page not held).
func (s *pagedStore) after(end int) []byte {
	p := end / PageCells
	if end >= s.N || p >= len(s.pt.data) {
		return nil
	}
	rb := s.Codec.RowBytes()
	o := end % PageCells
	n := min(PageCells-o, s.N-end)
	return s.pt.data[p].spanOn(s.sp)[o*rb : (o+n)*rb]
}

func (s *pagedStore) Accumulate(acc []float32, w []float32, lo int) {
	s.runs(lo, len(w), func(rs attn.RowStore, o, off, n int) { rs.Accumulate(acc, w[off:off+n], o) })
}

// AccumulateMulti is attn.MultiValues. The pages' rows go to kvq.AccumulateManyMultiRuns up to
// runBatch pages a call: f16's AVX-512 kernel (and q8_0's and q4_0's integer kernels on Zen 4)
// then prefetches the next pages' rows rather than the memory that follows a page's rows
// (another head's), and other codecs get each page's rows prefetched (kvq.Prefetch) as the
// page before starts; on Intel, pages whose rows follow one another in a slab go to the
// contiguous kernels as one stretch, as for ScoresMulti. Every sum is the one a call per page
// gives, bit for bit.
func (s *pagedStore) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	if n <= 0 {
		return
	}
	s.batches(lo, len(w)/n, func(runs [][]byte, first, end int) {
		kvq.AccumulateManyMultiRuns(s.Codec, acc, n, w[first*n:end*n], runs)
	})
}

func (s *pagedStore) Row(dst []float32, i int) {
	rs := s.page(i / PageCells)
	rs.Row(dst, i%PageCells)
}

// write encodes rows into their pages, which Cache.Write made present and the cache's own.
func (s *pagedStore) write(pos int, rows []float32, n int) {
	d := s.Codec.Dim()
	s.firstWrite(pos, rows, n)
	for i := 0; i < n; i++ {
		s.Codec.Encode(s.rowData(pos+i), rows[i*d:(i+1)*d])
	}
}

// bytes is the store's share of the pages the cache holds.
func (s *pagedStore) bytes() int64 { return int64(len(s.pt.ids) * s.sp.n) }

// rowHolder is a store of packed rows, plain or paged (snapshots read and write them).
type rowHolder interface {
	base() *rowStore
	// rowData is row r's bytes, to read or write in place.
	rowData(r int) []byte
	// capRows is the most rows the store can hold.
	capRows() int
}

func (s *rowStore) base() *rowStore { return s }

func (s *rowStore) capRows() int { return len(s.Data) / s.Codec.RowBytes() }

func (s *pagedStore) capRows() int { return s.pt.pool.cfg.MaxCells }

func (s *rowStore) rowData(r int) []byte {
	rb := s.Codec.RowBytes()
	return s.Data[r*rb : (r+1)*rb]
}

// Paged reports whether the cache takes its pages from a pool.
func (c *Cache) Paged() bool { return c.pt != nil }

// Pool is the page pool of a paged cache, else nil.
func (c *Cache) Pool() *PagePool {
	if c.pt == nil {
		return nil
	}
	return c.pt.pool
}

// PagesHeld is the number of pages a paged cache holds (its own and shared ones).
func (c *Cache) PagesHeld() int {
	if c.pt == nil {
		return 0
	}
	return len(c.pt.ids)
}

// Reserve promises a paged cache the pages to grow to cells cells, so that its writes up to
// there cannot fail for want of pages; ErrNoPages when the budget has not that much room now.
// A contiguous cache holds its capacity already: Reserve only checks cells against it.
func (c *Cache) Reserve(cells int) error {
	if cells > c.cfg.MaxCells {
		return fmt.Errorf("%w: %d cells > capacity %d", ErrKVFull, cells, c.cfg.MaxCells)
	}
	if c.pt == nil {
		return nil
	}
	return c.pt.reserve(cells, c.n)
}

// Release gives a paged cache's pages, reservation and fixed bytes back to its pool; the cache
// is not used again. It does nothing to a contiguous cache.
func (c *Cache) Release() {
	if c.pt != nil {
		c.pt.release()
	}
}

// ShareFrom makes the empty paged cache c hold the first n cells of src, a paged cache of the
// same pool: their pages are shared (a write into a shared page copies it first), the
// sliding-window rings and the overlay copied, and every store's codec state (rotation choice,
// K calibration) taken from src, so c reads and continues those cells exactly as src would.
// It fails, leaving c empty, for caches that cannot share (a group K format, a mixed cache)
// or when a ring of src cannot go back to n.
func (c *Cache) ShareFrom(src *Cache, n int) error {
	switch {
	case c.pt == nil || src.pt == nil || c.pt.pool != src.pt.pool:
		return fmt.Errorf("kvcache: %w: sharing needs two paged caches of one pool", kvq.ErrUnsupported)
	case c.cfg.Pair.K.Grouped():
		return fmt.Errorf("kvcache: %w: %s K groups are not shared", kvq.ErrUnsupported, c.cfg.Pair.K)
	case c.cfg.Recent > 0:
		return fmt.Errorf("kvcache: %w: a mixed cache is not shared", kvq.ErrUnsupported)
	case c.pt.released || src.pt.released:
		return errors.New("kvcache: sharing a released cache")
	case n < 0 || n > src.n:
		return fmt.Errorf("kvcache: sharing %d cells of a cache holding %d", n, src.n)
	}
	for l, ly := range src.layers {
		if ly.written != src.n {
			return fmt.Errorf("kvcache: sharing a cache with uncommitted cells (layer %d holds %d, %d committed)", l, ly.written, src.n)
		}
		if w := c.cfg.layerWindow(l); w > 0 {
			if err := ringTruncatable(ly.written, n, w); err != nil {
				return err
			}
		}
	}
	c.Reset()
	if n == 0 {
		return nil
	}
	p := c.pt.pool
	keep := PagesFor(n)
	p.mu.Lock()
	for _, id := range src.pt.ids[:keep] {
		p.ref[id]++
	}
	p.mu.Unlock()
	c.pt.own, src.pt.own = 0, 0
	c.pt.ids = append(c.pt.ids[:0], src.pt.ids[:keep]...)
	c.pt.data = append(c.pt.data[:0], src.pt.data[:keep]...)
	for l, ly := range c.layers {
		sl := src.layers[l]
		for h := range ly.k {
			for _, st := range [][2]store{{ly.k[h], sl.k[h]}, {ly.v[h], sl.v[h]}} {
				if err := copyStore(st[0], st[1]); err != nil {
					c.Reset()
					return err
				}
			}
		}
		if ly.ov != nil {
			ly.ov.copyFrom(sl.ov)
		}
		ly.written = sl.written
		for h := range ly.k {
			ly.k[h].setLen(ly.written)
			ly.v[h].setLen(ly.written)
		}
	}
	c.n = src.n
	if err := c.Truncate(n); err != nil {
		c.Reset()
		return err
	}
	return nil
}

// copyStore gives dst src's codec state, and a ring's slots.
func copyStore(dst, src store) error {
	var d, s *rowStore
	switch x := dst.(type) {
	case *pagedStore:
		d, s = x.rowStore, src.(*pagedStore).rowStore
	case *ringStore:
		y := src.(*ringStore)
		d, s = x.rowStore, y.rowStore
		copy(d.Data, s.Data)
	case *rowStore:
		d, s = x, src.(*rowStore)
		copy(d.Data, s.Data)
	default:
		return fmt.Errorf("kvcache: %w: %T stores are not shared", kvq.ErrUnsupported, dst)
	}
	return kvq.SetState(d.Codec, kvq.StateOf(s.Codec))
}

// copyFrom makes o a copy of src (same geometry).
func (o *overlay) copyFrom(src *overlay) {
	copy(o.k, src.k)
	copy(o.v, src.v)
	copy(o.owner, src.owner)
}

// Unreserve gives back the reservation a paged cache has not used (its pages stay).
func (c *Cache) Unreserve() {
	if c.pt == nil || c.pt.reserved == 0 {
		return
	}
	p := c.pt.pool
	p.mu.Lock()
	p.reserved -= c.pt.reserved
	c.pt.reserved = 0
	p.notifyLocked()
	p.mu.Unlock()
}
