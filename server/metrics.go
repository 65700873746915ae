package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/runner"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus series, on a registry of their own (so that servers in
// one process, as in tests, do not collide).
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	tps        *prometheus.GaugeVec
	tpsHist    *prometheus.HistogramVec
	ttft       *prometheus.HistogramVec
	kv         *prometheus.GaugeVec
	queue      prometheus.Gauge
	active     prometheus.Gauge
	busy       prometheus.Counter
	abTokens   prometheus.Counter
	wsSessions *prometheus.GaugeVec
	runners    *runnerCollector
	// decodeRows and prefillRows are, per batched forward pass, its decode tokens (one per
	// generation decoding) and its prompt tokens.
	decodeRows, prefillRows *prometheus.HistogramVec
}

// runnerCollector reports each model's runner: its continuous-batching scheduler (the sequences
// of its last pass, the steps waiting for one, the passes and tokens run, and the last pass that
// ran prompt steps: its steps, prompt steps and prompt tokens, how long the arrival gather
// before it waited and how long it ran) and, when its caches are paged, the pages in use and
// free, how much of their memory is on 2 MiB pages, and the generations waiting for pages.
type runnerCollector struct {
	mu      sync.Mutex
	runners map[string]*runner.Runner
	// hugeRead is each model's last reading of its page pool's huge-page fraction (hugeFraction).
	hugeRead map[string]hugeReading

	size, queue, passes, tokens, pages, huge, reserved, waiting *prometheus.Desc
	// The last prompt pass (runner.BatchStats.PromptPass), reported once one has run.
	ppSteps, ppPrompts, ppTokens, ppGather, ppRun *prometheus.Desc
}

func newRunnerCollector() *runnerCollector {
	model := []string{"model"}
	return &runnerCollector{runners: map[string]*runner.Runner{}, hugeRead: map[string]hugeReading{},
		size: prometheus.NewDesc("kvlab_batch_size", "Sequences in the model's last forward pass (continuous batching).", model, nil),
		queue: prometheus.NewDesc("kvlab_batch_queue", "Generation steps waiting for the model's next forward pass (decode tokens and prompt chunks).",
			model, nil),
		passes: prometheus.NewDesc("kvlab_batch_passes_total", "Batched forward passes run.", model, nil),
		tokens: prometheus.NewDesc("kvlab_batch_tokens_total", "Tokens run by batched forward passes.", model, nil),
		pages: prometheus.NewDesc("kvlab_kv_pages", "KV pages of the model's page pool (--kv-budget): used (held by sequences, a shared page once), "+
			"free (neither used, reserved nor set aside for the caches' fixed bytes), total (the budget's), allocated (whose memory the pool holds: "+
			"the used ones and those made ahead of need, slabs being made whole).", []string{"model", "state"}, nil),
		huge: prometheus.NewDesc("kvlab_kv_pages_huge_fraction", "Fraction of the memory of the KV pages the model's page pool has allocated "+
			"that the system backs with 2 MiB transparent huge pages (Linux, /proc/self/smaps, read at most every 15 s; 1 with none allocated); "+
			"pages on 4 KiB pages decode slower.", model, nil),
		reserved: prometheus.NewDesc("kvlab_kv_reserved_bytes", "KV budget bytes promised to running generations and not yet taken as pages.", model, nil),
		waiting:  prometheus.NewDesc("kvlab_kv_waiting", "Generations waiting for KV pages (admitted by the gate, not yet by the page budget).", model, nil),
		ppSteps: prometheus.NewDesc("kvlab_batch_prompt_pass_steps", "Steps (sequences) of the model's last forward pass that ran prompt tokens: "+
			"after a burst of prompts, the pass that gave the last of them its first token.", model, nil),
		ppPrompts: prometheus.NewDesc("kvlab_batch_prompt_pass_prompts", "Prompt steps (prompt chunks) of the model's last forward pass that ran prompt tokens.", model, nil),
		ppTokens:  prometheus.NewDesc("kvlab_batch_prompt_pass_prompt_tokens", "Prompt tokens of the model's last forward pass that ran prompt tokens.", model, nil),
		ppGather: prometheus.NewDesc("kvlab_batch_prompt_pass_gather_seconds", "How long the arrival gather (--batch-gather) before the model's last forward pass "+
			"that ran prompt tokens waited for more arrivals; 0 for a pass that did not start from idle.", model, nil),
		ppRun: prometheus.NewDesc("kvlab_batch_prompt_pass_run_seconds", "How long the model's last forward pass that ran prompt tokens ran.", model, nil),
	}
}

func (c *runnerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.size, c.queue, c.passes, c.tokens, c.pages, c.huge, c.reserved, c.waiting, c.ppSteps, c.ppPrompts, c.ppTokens, c.ppGather, c.ppRun} {
		ch <- d
	}
}

func (c *runnerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, r := range c.runners {
		if b, ok := r.Scheduler().(*runner.Batching); ok {
			st := b.Stats()
			ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(st.Batch), name)
			ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(st.Queue), name)
			ch <- prometheus.MustNewConstMetric(c.passes, prometheus.CounterValue, float64(st.Passes), name)
			ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(st.Tokens), name)
			if pp := st.PromptPass; pp.Seqs > 0 {
				ch <- prometheus.MustNewConstMetric(c.ppSteps, prometheus.GaugeValue, float64(pp.Seqs), name)
				ch <- prometheus.MustNewConstMetric(c.ppPrompts, prometheus.GaugeValue, float64(pp.Prompts), name)
				ch <- prometheus.MustNewConstMetric(c.ppTokens, prometheus.GaugeValue, float64(pp.PromptTokens), name)
				ch <- prometheus.MustNewConstMetric(c.ppGather, prometheus.GaugeValue, pp.Arrival.Seconds(), name)
				ch <- prometheus.MustNewConstMetric(c.ppRun, prometheus.GaugeValue, pp.Run.Seconds(), name)
			}
		}
		if p := r.Pages(); p != nil {
			st := p.Stats()
			ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(st.Used), name, "used")
			ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(st.Free), name, "free")
			ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(st.Total), name, "total")
			ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(st.Allocated), name, "allocated")
			ch <- prometheus.MustNewConstMetric(c.huge, prometheus.GaugeValue, c.hugeFraction(name, p), name)
			ch <- prometheus.MustNewConstMetric(c.reserved, prometheus.GaugeValue, float64(st.ReservedBytes), name)
			_, _, waiting := r.Pool().Stats()
			ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(waiting), name)
		}
	}
}

// hugeEvery is how long a reading of a page pool's huge-page fraction serves the scrapes
// after it.
const hugeEvery = 15 * time.Second

// hugeReading is one reading of a page pool's huge-page fraction.
type hugeReading struct {
	pool *kvcache.PagePool
	at   time.Time
	frac float64
}

// hugeFraction is model's page pool's huge-page fraction (PagePool.HugePages), read again only
// when the last reading is hugeEvery old or of another pool: a reading walks the process's
// page tables (/proc/self/smaps), too costly for every scrape, and a fraction hugeEvery old
// serves a dashboard as well. c.mu is held.
func (c *runnerCollector) hugeFraction(model string, p *kvcache.PagePool) float64 {
	now := time.Now()
	if h, ok := c.hugeRead[model]; ok && h.pool == p && now.Sub(h.at) < hugeEvery {
		return h.frac
	}
	h := hugeReading{pool: p, at: now, frac: p.HugePages().Fraction()}
	c.hugeRead[model] = h
	return h.frac
}

// watch reports model's runner on /metrics (nil: no more).
func (m *metrics) watch(model string, r *runner.Runner) {
	if m == nil {
		return
	}
	m.runners.mu.Lock()
	defer m.runners.mu.Unlock()
	delete(m.runners.hugeRead, model)
	if r == nil {
		delete(m.runners.runners, model)
		return
	}
	m.runners.runners[model] = r
}

// passes returns what records one batched forward pass of model (its decode steps and prompt
// tokens), the model's two observers looked up once rather than on every pass.
func (m *metrics) passes(model string) func(decode, prefill int) {
	if m == nil {
		return func(int, int) {}
	}
	dec, pre := m.decodeRows.WithLabelValues(model), m.prefillRows.WithLabelValues(model)
	return func(decode, prefill int) {
		dec.Observe(float64(decode))
		pre.Observe(float64(prefill))
	}
}

func newMetrics() *metrics {
	m := &metrics{
		reg:     prometheus.NewRegistry(),
		runners: newRunnerCollector(),
		decodeRows: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kvlab_batch_decode_tokens", Help: "Decode tokens per batched forward pass: the generations it advanced by one token.",
			Buckets: []float64{0, 1, 2, 4, 8, 12, 16, 24, 32, 64},
		}, []string{"model"}),
		prefillRows: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kvlab_batch_prefill_tokens", Help: "Prompt tokens per batched forward pass (chunked prefill).",
			Buckets: []float64{0, 1, 8, 16, 32, 64, 128, 256, 512, 1024},
		}, []string{"model"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvlab_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvlab_tokens_total", Help: "Tokens processed, by model and kind (prompt: prefilled, generated: sampled).",
		}, []string{"model", "kind"}),
		tps: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kvlab_decode_tokens_per_second", Help: "Decode speed of the model's last finished generation.",
		}, []string{"model"}),
		tpsHist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kvlab_generation_decode_tokens_per_second", Help: "Decode speed of finished generations.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kvlab_time_to_first_token_seconds", Help: "Time from accepting a generation to its first token, queueing included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"model"}),
		kv: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kvlab_kv_bytes", Help: "Bytes held by KV caches (in use and kept for prefix reuse), by model and format.",
		}, []string{"model", "format"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kvlab_queue_depth", Help: "Generations waiting for a slot.",
		}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kvlab_generations_active", Help: "Generations running.",
		}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvlab_busy_rejections_total", Help: "Generations refused because every slot and the queue were full.",
		}),
		abTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvlab_ab_tokens_total", Help: "Tokens compared by live A/B runs.",
		}),
		wsSessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kvlab_websockets_open", Help: "Open websocket connections by endpoint.",
		}, []string{"endpoint"}),
	}
	m.reg.MustRegister(m.requests, m.tokens, m.tps, m.tpsHist, m.ttft, m.kv, m.queue, m.active, m.busy, m.abTokens, m.wsSessions, m.runners, m.decodeRows, m.prefillRows,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) request(route string, code int) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

func (m *metrics) promptTokens(model string, n int) {
	if m != nil && n > 0 {
		m.tokens.WithLabelValues(model, "prompt").Add(float64(n))
	}
}

func (m *metrics) generated(model string, n int, tps float64) {
	if m == nil {
		return
	}
	if n > 0 {
		m.tokens.WithLabelValues(model, "generated").Add(float64(n))
	}
	if tps > 0 {
		m.tps.WithLabelValues(model).Set(tps)
		m.tpsHist.WithLabelValues(model).Observe(tps)
	}
}

func (m *metrics) firstToken(model string, seconds float64) {
	if m != nil {
		m.ttft.WithLabelValues(model).Observe(seconds)
	}
}

func (m *metrics) kvBytes(e *Engine) {
	if m != nil {
		m.kv.WithLabelValues(e.Info.Name, e.Decision.Format).Set(float64(e.KVBytes()))
	}
}
