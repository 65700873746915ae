package runner

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/kvlab/kvlab/native/backend"
)

// BatchConfig configures a Batching scheduler.
type BatchConfig struct {
	// MaxSeqs is the most sequences one pass runs (default 16).
	MaxSeqs int
	// PrefillChunk is the prompt tokens of one sequence one pass runs (default 64): a long
	// prompt runs in chunks between the decode steps of the others, so it does not stall them.
	// The chunks of a step are cut at the same places whoever shares its passes.
	PrefillChunk int
	// PrefillTokens is the most prompt tokens one pass runs over all its prefilling sequences
	// (default 128; a pass always takes at least one chunk).
	PrefillTokens int
	// Gather is how long a pass waits for the sequences of the previous one to come back with
	// their next token before it runs without them (default 2 ms).
	Gather time.Duration
	// Arrival is the most a pass started from idle (no pass running, no sequence of the last
	// pass expected back) with only fresh prompt steps queued waits for more prompts, so that
	// prompts sent together share one prompt pass instead of the first running alone while the
	// others queue behind it (0: DefaultArrival; negative: no wait). The wait ends early once
	// no prompt has arrived for ArrivalGap (0: DefaultArrivalGap) while one prompt waits, or
	// for BurstGaps × ArrivalGap once several do (a burst, whose prompts a loaded machine
	// delivers several milliseconds apart), once the queued steps fill a pass (MaxSeqs steps
	// or PrefillTokens prompt tokens), or once the waiting caller's context ends. While a
	// generation announced by Expect has not sent its first step the gap does not end it: a
	// burst whose last sequences are still being taken from the pool (one at a time, each
	// delayed by a descheduled holder on a loaded machine) still shares its first pass. A
	// decode step never waits: a generation alone pays ArrivalGap once, before its first token.
	Arrival, ArrivalGap time.Duration
	// OnPass, when set, is called after each pass with its decode tokens (one per step not
	// marked Prefill) and its prompt tokens (the chunks of Prefill steps), on the goroutine that
	// ran it.
	OnPass func(decode, prefill int)
}

// Defaults of BatchConfig.
const (
	DefaultBatchSeqs     = 16
	DefaultPrefillChunk  = 64
	DefaultPrefillTokens = 128
	// DefaultArrival and DefaultArrivalGap are BatchConfig.Arrival's and ArrivalGap's
	// defaults: a few milliseconds against a prompt pass of tens to hundreds.
	DefaultArrival    = 20 * time.Millisecond
	DefaultArrivalGap = 2 * time.Millisecond
	// BurstGaps is the gap of BatchConfig.Arrival's wait, in ArrivalGaps, once several
	// prompts wait.
	BurstGaps = 4
)

// BatchStats are a Batching scheduler's counters.
type BatchStats struct {
	// Batch is the number of sequences of the last pass; Queue the steps waiting for a pass
	// now (those of the running pass not counted).
	Batch, Queue int
	// Max is the most sequences a pass has run.
	Max int
	// Passes and Tokens count the passes run and the tokens they ran.
	Passes, Tokens int64
	// PromptPass is the last pass that ran prompt steps (Step.Prefill): after a burst of
	// prompts, the pass that gave the last of them its first token's logits (the server's
	// /metrics reports it as the kvlab_batch_prompt_pass_* gauges).
	PromptPass PassTiming
}

// PassTiming describes one pass: its steps, how many of them were prompt steps and their
// tokens, how long the arrival gather before it waited (BatchConfig.Arrival; zero for a pass
// that did not start from idle), and how long the forward pass itself ran. Two clock reads a
// pass, against passes of milliseconds.
type PassTiming struct {
	Seqs, Prompts, PromptTokens int
	Arrival, Run                time.Duration
}

// Batching is continuous batching: the steps of every generation are queued, and one caller
// at a time runs them in shared forward passes — each pass the decode token of every waiting sequence
// (up to MaxSeqs) plus a bounded chunk of pending prompt tokens. Generations join and leave
// between passes; a cancelled one leaves at the next pass (its step is dropped, or its
// prefill stops between chunks). The scheduler starts no goroutine of its own.
//
// On a backend.Batcher model a pass is one ForwardBatch; on another model each step of a pass
// runs as its cache's own Forward.
type Batching struct {
	model backend.Batcher // nil: steps run one by one
	cfg   BatchConfig
	vocab int

	mu      sync.Mutex
	queue   []*request
	running bool
	// back are the sequences of the last pass not yet back with a step nor gone (Leave).
	back map[*Sequence]bool
	// coming counts the generations announced by Expect whose first step has not come.
	coming int
	kick   chan struct{}
	stats  BatchStats
	// prompts is pick's scratch: the queued prompt steps in the order they take chunks.
	prompts []*request
}

type request struct {
	ctx  context.Context
	step Step
	call *call
	// done is the number of the step's tokens run; inPass is set while a pass runs it, ended
	// once it has run or failed.
	done          int
	inPass, ended bool
	err           error
}

// NewBatching returns a batching scheduler over m's caches, of vocab logits per row.
func NewBatching(m backend.Model, vocab int, cfg BatchConfig) *Batching {
	if cfg.MaxSeqs <= 0 {
		cfg.MaxSeqs = DefaultBatchSeqs
	}
	if cfg.PrefillChunk <= 0 {
		cfg.PrefillChunk = DefaultPrefillChunk
	}
	if cfg.PrefillTokens <= 0 {
		cfg.PrefillTokens = max(DefaultPrefillTokens, cfg.PrefillChunk)
	}
	if cfg.Gather <= 0 {
		cfg.Gather = 2 * time.Millisecond
	}
	if cfg.Arrival == 0 {
		cfg.Arrival = DefaultArrival
	}
	if cfg.ArrivalGap <= 0 {
		cfg.ArrivalGap = DefaultArrivalGap
	}
	b := &Batching{cfg: cfg, vocab: vocab, back: map[*Sequence]bool{}, kick: make(chan struct{}, 1)}
	b.model, _ = m.(backend.Batcher)
	return b
}

// Stats returns the scheduler's counters.
func (b *Batching) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Queue = 0
	for _, r := range b.queue {
		if !r.inPass {
			s.Queue++
		}
	}
	return s
}

// Forward queues the steps and waits until they have run, failed, or ctx is done: a step no
// pass has taken yet is then dropped at once; one a pass is running ends after that pass (its
// remaining prompt chunks are not run) and Forward returns ctx's error.
//
// The passes run on the callers' goroutines: the caller that finds no pass running runs them
// until its own steps are done, then hands the passes to the caller of the oldest queued step.
// A generation alone so runs its passes itself, with no goroutine switch per token.
func (b *Batching) Forward(ctx context.Context, batch []Step) error {
	if err := ctx.Err(); err != nil {
		b.unexpect(batch)
		return err
	}
	for _, st := range batch {
		if len(st.Tokens) == 0 {
			b.unexpect(batch)
			return errors.New("runner: a step of no tokens")
		}
	}
	if len(batch) == 0 {
		return nil
	}
	c := &call{lead: make(chan struct{}, 1), done: make(chan struct{}), pending: len(batch)}
	b.mu.Lock()
	for _, st := range batch {
		if st.Expected {
			b.coming--
		}
		r := &request{ctx: ctx, step: st, call: c}
		c.reqs = append(c.reqs, r)
		b.queue = append(b.queue, r)
		delete(b.back, st.Seq)
	}
	lead := !b.running
	idle := lead // this call starts the passes, not one handed them by a caller before it
	b.running = true
	b.mu.Unlock()
	b.poke()
	cancelled := ctx.Done()
	for !lead {
		select {
		case <-c.done:
			select {
			case <-c.lead: // handed the passes before the end: run them on (drive hands them over)
				lead, idle = true, false
			default:
				return c.err()
			}
		case <-c.lead:
			lead, idle = true, false
		case <-cancelled:
			cancelled = nil
			b.mu.Lock()
			for _, r := range c.reqs {
				if !r.inPass && !r.ended {
					b.remove(r)
					b.finish(r, ctx.Err())
				}
			}
			b.mu.Unlock()
		}
	}
	b.drive(ctx, c, idle)
	return c.err()
}

// Expect announces a generation whose first step (marked Step.Expected) comes soon: its
// sequence is being taken from the pool. Until that step is queued, an arrival gather
// (BatchConfig.Arrival) waits for it within Arrival instead of ending at the arrival gap. A
// generation that ends before it sends that step calls the returned func (once).
func (b *Batching) Expect() (withdraw func()) {
	b.mu.Lock()
	b.coming++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.coming--
		b.mu.Unlock()
		b.poke()
	}
}

// unexpect ends the expectations of a batch Forward refuses before queueing it.
func (b *Batching) unexpect(batch []Step) {
	n := 0
	for _, st := range batch {
		if st.Expected {
			n++
		}
	}
	if n > 0 {
		b.mu.Lock()
		b.coming -= n
		b.mu.Unlock()
		b.poke()
	}
}

// call is one Forward call: its requests, and the channel that hands it the passes.
type call struct {
	reqs    []*request
	lead    chan struct{}
	pending int
	done    chan struct{}
}

// err is the first error of the call's steps.
func (c *call) err() error {
	for _, r := range c.reqs {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// Leave tells the scheduler that seq sends no more steps (its generation ended), so the next
// pass does not wait for it.
func (b *Batching) Leave(seq *Sequence) {
	b.mu.Lock()
	delete(b.back, seq)
	b.mu.Unlock()
	b.poke()
}

func (b *Batching) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// remove drops r from the queue (b.mu held).
func (b *Batching) remove(r *request) {
	for i, x := range b.queue {
		if x == r {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// finish ends r with err (b.mu held).
func (b *Batching) finish(r *request, err error) {
	r.err, r.ended = err, true
	if r.call.pending--; r.call.pending == 0 {
		close(r.call.done)
	}
}

// handoff gives the passes to the caller of the oldest queued step, or ends them (b.mu held):
// the sequences of the last pass stay expected, so the next caller, who runs the passes again,
// gathers them into its first.
func (b *Batching) handoff() {
	if len(b.queue) == 0 {
		b.running = false
		return
	}
	select {
	case b.queue[0].call.lead <- struct{}{}:
	default: // it holds the passes already (unreachable: one caller runs them at a time)
	}
}

// chunk is one request's share of a pass.
type chunk struct {
	r      *request
	tokens []int32
	logits []float32
}

// drive runs passes until c's steps are done, then hands them on. When idle (the passes start
// with this call, not handed over), its first pass waits for arrivals (BatchConfig.Arrival).
func (b *Batching) drive(ctx context.Context, c *call, idle bool) {
	var chunks []chunk
	var steps []backend.BatchStep
	for first := true; ; first = false {
		b.mu.Lock()
		if c.pending == 0 {
			b.handoff()
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.gather()
		var arrival time.Duration
		if first && idle {
			t0 := time.Now()
			b.arrivals(ctx)
			arrival = time.Since(t0)
		}
		b.mu.Lock()
		// Cancelled steps leave before the pass.
		for i := 0; i < len(b.queue); {
			r := b.queue[i]
			if err := r.ctx.Err(); err != nil {
				b.queue = append(b.queue[:i], b.queue[i+1:]...)
				b.finish(r, err)
				continue
			}
			i++
		}
		if c.pending == 0 {
			b.handoff()
			b.mu.Unlock()
			return
		}
		chunks = b.pick(chunks[:0])
		b.mu.Unlock()

		steps = steps[:0]
		for _, c := range chunks {
			steps = append(steps, backend.BatchStep{Cache: c.r.step.Seq.cache, Tokens: c.tokens, Logits: c.logits})
		}
		t0 := time.Now()
		errs := b.run(steps)
		run := time.Since(t0)
		decode, prefill, prompts := 0, 0, 0
		for _, c := range chunks {
			if c.r.step.Prefill {
				prefill += len(c.tokens)
				prompts++
			} else {
				decode += len(c.tokens)
			}
		}
		if b.cfg.OnPass != nil {
			b.cfg.OnPass(decode, prefill)
		}

		b.mu.Lock()
		if prompts > 0 {
			b.stats.PromptPass = PassTiming{Seqs: len(chunks), Prompts: prompts, PromptTokens: prefill, Arrival: arrival, Run: run}
		}
		b.stats.Batch = len(chunks)
		b.stats.Max = max(b.stats.Max, len(chunks))
		b.stats.Passes++
		for i, c := range chunks {
			r := c.r
			r.inPass = false
			if errs[i] == nil {
				r.done += len(c.tokens)
				r.step.Seq.tokens = append(r.step.Seq.tokens, c.tokens...)
				b.stats.Tokens += int64(len(c.tokens))
			}
			switch {
			case errs[i] != nil:
				b.remove(r)
				b.finish(r, errs[i])
			case r.done == len(r.step.Tokens):
				b.remove(r)
				b.back[r.step.Seq] = true
				b.finish(r, nil)
			}
		}
		b.mu.Unlock()
		clear(steps)
		clear(chunks)
	}
}

// gather waits, at most Gather, for the sequences of the last pass to come back with their
// next step (or leave), so that a pass is not split in two by the order the generations wake.
func (b *Batching) gather() {
	var timer *time.Timer
	for {
		b.mu.Lock()
		waiting := len(b.back) > 0 && len(b.queue) < b.cfg.MaxSeqs
		b.mu.Unlock()
		if !waiting {
			break
		}
		if timer == nil {
			timer = time.NewTimer(b.cfg.Gather)
		}
		select {
		case <-b.kick:
			continue
		case <-timer.C:
		}
		break
	}
	if timer != nil {
		timer.Stop()
	}
	b.mu.Lock()
	clear(b.back)
	b.mu.Unlock()
}

// arrivals waits for more prompts while the queue holds only fresh prompt steps (Prefill, none
// of their tokens run) that do not fill a pass: until no prompt has arrived for ArrivalGap
// (BurstGaps × ArrivalGap once several wait) and none is expected (Expect), Arrival has
// passed, or ctx (the waiting caller's) ends. A step that arrives meanwhile wakes it (Forward
// pokes kick, as a withdrawn expectation does).
func (b *Batching) arrivals(ctx context.Context) {
	if b.cfg.Arrival <= 0 {
		return
	}
	start := time.Now()
	deadline, last, queued := start.Add(b.cfg.Arrival), start, -1
	var timer *time.Timer
	for {
		b.mu.Lock()
		waiting, n, coming := b.onlyFreshPrompts(), len(b.queue), b.coming > 0
		b.mu.Unlock()
		if !waiting {
			break
		}
		now := time.Now()
		if queued >= 0 && n > queued {
			last = now // a prompt arrived: the gap starts again
		}
		queued = n
		gap := b.cfg.ArrivalGap
		if n > 1 {
			gap *= BurstGaps
		}
		end := last.Add(gap)
		if coming || deadline.Before(end) {
			end = deadline
		}
		wait := end.Sub(now)
		if wait <= 0 {
			break
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-b.kick:
			continue
		case <-timer.C:
			continue // the gap or the deadline: the next round ends the wait
		case <-ctx.Done():
		}
		break
	}
}

// onlyFreshPrompts reports whether the queue holds only fresh prompt steps, fewer than fill a
// pass: MaxSeqs steps, or PrefillTokens prompt tokens counted as pick takes them (b.mu held).
func (b *Batching) onlyFreshPrompts() bool {
	if len(b.queue) == 0 || len(b.queue) >= b.cfg.MaxSeqs {
		return false
	}
	tokens := 0
	for _, r := range b.queue {
		if !r.step.Prefill || r.done > 0 || r.inPass {
			return false
		}
		n := len(r.step.Tokens)
		if len(r.step.Logits) <= b.vocab {
			n = min(n, b.cfg.PrefillChunk)
		}
		tokens += n
	}
	return tokens < b.cfg.PrefillTokens
}

// pick chooses the next pass (b.mu held): the queued decode steps (one token) in order, then
// prompt steps by their next chunk of PrefillChunk tokens while the pass's PrefillTokens last
// (the first chunk always fits; a step that wants every row's logits runs whole), MaxSeqs
// steps in all, one of them kept for a waiting prompt so that decoding never starves it. The
// decode steps come first, so their rows are contiguous: one product for all of them.
//
// The oldest prompt step takes the first chunk (every prompt is so served in turn), the others
// follow by fewest tokens left: a short prompt that arrives behind long ones starts at the next
// pass instead of waiting for their whole prompts. A step's chunks are cut at the same places
// whatever the order.
func (b *Batching) pick(out []chunk) []chunk {
	decoders, prompts := 0, 0
	for _, r := range b.queue {
		if len(r.step.Tokens)-r.done == 1 {
			decoders++
		} else {
			prompts++
		}
	}
	maxDecode := b.cfg.MaxSeqs
	if prompts > 0 {
		maxDecode = max(b.cfg.MaxSeqs-1, 1)
	}
	take := func(r *request, n int) {
		c := chunk{r: r, tokens: r.step.Tokens[r.done : r.done+n]}
		if r.done+n == len(r.step.Tokens) {
			c.logits = r.step.Logits
		}
		r.inPass = true
		out = append(out, c)
	}
	for _, r := range b.queue {
		if len(out) == maxDecode {
			break
		}
		if len(r.step.Tokens)-r.done == 1 {
			take(r, 1)
		}
	}
	b.prompts = b.prompts[:0]
	for _, r := range b.queue {
		if len(r.step.Tokens)-r.done > 1 {
			b.prompts = append(b.prompts, r)
		}
	}
	if len(b.prompts) > 2 {
		left := func(r *request) int { return len(r.step.Tokens) - r.done }
		slices.SortStableFunc(b.prompts[1:], func(x, y *request) int { return cmp.Compare(left(x), left(y)) })
	}
	budget, taken := b.cfg.PrefillTokens, 0
	for _, r := range b.prompts {
		if len(out) >= b.cfg.MaxSeqs {
			break
		}
		n := len(r.step.Tokens) - r.done
		if len(r.step.Logits) <= b.vocab {
			n = min(n, b.cfg.PrefillChunk)
		}
		if taken > 0 && n > budget {
			continue
		}
		budget -= n
		taken++
		take(r, n)
	}
	clear(b.prompts)
	return out
}

// run runs one pass and returns each step's error. On a Batcher the pass is one ForwardBatch,
// and when it fails (a step that does not fit, say) each step runs alone, still through
// ForwardBatch (the same arithmetic), so that the error goes to its own generation. Otherwise
// each step is its cache's Forward.
func (b *Batching) run(steps []backend.BatchStep) []error {
	errs := make([]error, len(steps))
	if b.model != nil {
		err := b.model.ForwardBatch(steps)
		if err == nil {
			return errs
		}
		if len(steps) == 1 {
			errs[0] = err
			return errs
		}
		for i := range steps {
			errs[i] = b.model.ForwardBatch(steps[i : i+1])
		}
		return errs
	}
	for i, st := range steps {
		errs[i] = st.Cache.Forward(st.Tokens, st.Logits)
	}
	return errs
}
