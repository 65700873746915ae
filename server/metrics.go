package server

import (
	"strconv"
	"sync"

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
	batch      *batchCollector
}

// batchCollector reports each model's continuous-batching scheduler: the sequences of its last
// pass, the steps waiting for one, and the passes and tokens run.
type batchCollector struct {
	mu     sync.Mutex
	scheds map[string]*runner.Batching

	size, queue, passes, tokens *prometheus.Desc
}

func newBatchCollector() *batchCollector {
	return &batchCollector{scheds: map[string]*runner.Batching{},
		size: prometheus.NewDesc("kvlab_batch_size", "Sequences in the model's last forward pass (continuous batching).", []string{"model"}, nil),
		queue: prometheus.NewDesc("kvlab_batch_queue", "Generation steps waiting for the model's next forward pass (decode tokens and prompt chunks).",
			[]string{"model"}, nil),
		passes: prometheus.NewDesc("kvlab_batch_passes_total", "Batched forward passes run.", []string{"model"}, nil),
		tokens: prometheus.NewDesc("kvlab_batch_tokens_total", "Tokens run by batched forward passes.", []string{"model"}, nil),
	}
}

func (c *batchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.queue
	ch <- c.passes
	ch <- c.tokens
}

func (c *batchCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, b := range c.scheds {
		st := b.Stats()
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(st.Batch), name)
		ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(st.Queue), name)
		ch <- prometheus.MustNewConstMetric(c.passes, prometheus.CounterValue, float64(st.Passes), name)
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(st.Tokens), name)
	}
}

// batching reports model's scheduler on /metrics (nil: no more).
func (m *metrics) batching(model string, b *runner.Batching) {
	if m == nil {
		return
	}
	m.batch.mu.Lock()
	defer m.batch.mu.Unlock()
	if b == nil {
		delete(m.batch.scheds, model)
		return
	}
	m.batch.scheds[model] = b
}

func newMetrics() *metrics {
	m := &metrics{
		reg:   prometheus.NewRegistry(),
		batch: newBatchCollector(),
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
	m.reg.MustRegister(m.requests, m.tokens, m.tps, m.tpsHist, m.ttft, m.kv, m.queue, m.active, m.busy, m.abTokens, m.wsSessions, m.batch,
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
