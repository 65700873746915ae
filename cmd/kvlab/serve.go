package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/history"
	"github.com/kvlab/kvlab/server"
	"github.com/kvlab/kvlab/web"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `kvlab serve`.
type serveOptions struct {
	addr          string
	models        []string
	kv            string
	ctx           int
	apiKey        string
	dataDir       string
	sessionBytes  int64
	noPersist     bool
	maxConcurrent int
	batch         int
	batchGather   time.Duration
	kvBudgetMiB   int64
	maxQueue      int
	threads       int
	device        string
	noDiscover    bool
	verbose       bool
	kvWindow      int
	kvSinks       int
	kvResident    int
	allowHosts    []string
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the dashboard (plan, chat, lab, runs, system), the OpenAI-compatible API and metrics",
		Long: `Serve kvlab over HTTP:

  /plan     the size ladder, spill cliff and auto KV-tier pick, computed in the browser
  /chat     chat with a model, streamed over a websocket, with a Stop that stops the server
  /lab      live A/B of KV formats: each arm's text side by side, running KL and top-1
  /runs     the run history; /system the machine, memory, models and KV in use
  /v1/...   OpenAI-compatible chat/completions, completions (streaming or not) and models
  /api/...  kvlab's JSON API (plan, runs, A/B, models, system); /metrics for Prometheus

Models are the --model files, or, without --model, the GGUF files found in the usual places:
~/.cache/kvlab/models, the Hugging Face cache, Ollama's model store and LM Studio's folder.
A --model file is loaded at start; a found one on first use.

--kv auto (the default) runs the auto KV-tier policy when a model loads: the least compressed
of f16, q8_0, q8_0/q4_0, q5_1/q4_0 whose caches (one per concurrent generation, at the full
--ctx) fit the free memory less the weights and a 1.5 GiB reserve. The choice and its reason
are logged; --kv FORMAT overrides it.

Chat sessions persist in the data directory (--data, else beside the run history): the
conversations, and for the CPU engine a KV snapshot of each recent turn (at most
--session-bytes per model, the oldest dropped first), so a conversation continued after a
restart reuses its cache. --no-persist keeps them in memory only.

--device cuda runs every model on the GPU (device 0, native/cuda/engine, as 'kvlab run
--device cuda' does): the driver is opened once at start (without one the server refuses to
start, in one line), each model's weights are uploaded once when it loads, every generation
slot gets a KV cache on the card, and --kv auto budgets against the GPU's free memory. A model
whose head dimension the kernels do not take (64, 128 or 256) is refused with an error naming
it; serve it with --device cpu. The GPU's KV cache cannot truncate yet, so a prompt reuses a
cached prefix only when it extends the cache's whole contents (the next turn of a chat);
otherwise the cache is reset and the prompt prefilled again.

` + kvResidentHelp + `
With a tail, --kv auto and the memory check budget the GPU part of each generation slot's
cache (the resident cells and a chunk); each slot's tail takes pinned host memory.

The server listens on 127.0.0.1:8080 (loopback only). Any other address needs --api-key (or
KVLAB_API_KEY) of at least 16 characters: clients send it as Authorization: Bearer KEY; the
pages ask for it once. Requests naming another Host than the address, localhost or a loopback
IP get 421 (DNS rebinding), unless --allow-host names it; state-changing requests and
websockets from another origin get 403, and POST APIs take only application/json (415); see
docs/security.md.
At most --max-concurrent generations run at once and --max-queue wait; past that requests get
503 {"error":{"code":"busy"}}. Ctrl-C finishes in-flight work (up to 10 s), then stops.`,
		Example: `  kvlab serve
  kvlab serve --model stories260K.gguf --kv q8_0/q4_0
  kvlab serve --model model.gguf --device cuda
  kvlab serve --model model.gguf --device cuda --ctx 65536 --kv-resident 16384 --max-concurrent 1
  kvlab serve --addr 0.0.0.0:8080 --api-key "$(openssl rand -hex 16)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "TCP address to listen on (host:port); not loopback needs --api-key")
	f.StringArrayVar(&o.models, "model", nil, "GGUF model file to serve (repeatable); without it, models are discovered")
	f.StringVar(&o.kv, "kv", "auto", "KV format or K/V pair of every cache, or auto for the KV-tier policy")
	f.IntVar(&o.ctx, "ctx", 0, "context per sequence in tokens; 0 is the model's trained context, at most 4096")
	f.IntVar(&o.kvWindow, "kv-window", 0, "FP16 overlay: the most recent `N` cells of every cache also kept exact, over the compressed cache")
	f.IntVar(&o.kvSinks, "kv-sink", 0, "FP16 overlay: the first `N` cells of every cache (attention sinks) also kept exact")
	f.StringVar(&o.apiKey, "api-key", os.Getenv("KVLAB_API_KEY"), "API key required on every route but /healthz (default $KVLAB_API_KEY)")
	f.StringVar(&o.dataDir, "data", "", "directory of the run history runs.db (default: the database `kvlab runs` reads)")
	f.Int64Var(&o.sessionBytes, "session-bytes", server.DefaultSessionBytes, "bytes of KV snapshots of chat turns kept on disk per model")
	f.BoolVar(&o.noPersist, "no-persist", false, "keep chat sessions in memory only (lost on restart)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "generations running at once")
	f.IntVar(&o.batch, "batch", server.DefaultBatch, "most generations one CPU forward pass runs (continuous batching); 1 runs each on its own")
	f.DurationVar(&o.batchGather, "batch-gather", server.DefaultBatchGather, "continuous batching's arrival gather: the most a prompt pass that starts from idle waits for more prompts to share it, so that requests sent together run their prompts in one pass; the wait ends sooner once no prompt has arrived for 2ms (8ms once several wait: a burst) or the pass is full (at most 1s; 0: no wait, the first prompt starts at once)")
	f.Int64Var(&o.kvBudgetMiB, "kv-budget", 0, "paged KV on the CPU: `MiB` of KV memory per model shared by every generation in pages of 64 cells; a generation waits until the pages it may fill are free, chats that start alike share prefix pages. 0 pages whenever the cache layout allows it (not when every layer is a sliding window), with room for --max-concurrent whole-context generations within the free memory left after the weights; -1 gives each generation its whole context up front")
	f.IntVar(&o.maxQueue, "max-queue", server.DefaultMaxQueue, "generations waiting for a slot before requests are refused as busy (0: none)")
	f.IntVar(&o.threads, "threads", 0, "threads per forward pass; 0 uses every CPU")
	f.StringVar(&o.device, "device", "cpu", "where the forward pass runs: cpu or cuda")
	f.IntVar(&o.kvResident, "kv-resident", 0, kvResidentUsage)
	f.BoolVar(&o.noDiscover, "no-discover", false, "do not search the usual places for models")
	f.StringArrayVar(&o.allowHosts, "allow-host", nil, "host name (or pattern, *.lan) the server also answers to, besides its address and localhost (repeatable)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log the models loaded, the auto KV tier's choice and every request (by default serve prints only the URL it listens on, and errors)")
	return cmd
}

// runServe starts the server and serves until SIGINT or SIGTERM.
func runServe(cmd *cobra.Command, o serveOptions) error {
	// On success serve prints one line, the URL; --verbose adds what it loads and each request.
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	if o.maxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent %d: must be at least 1", o.maxConcurrent)
	}
	if o.kvBudgetMiB < -1 || o.kvBudgetMiB > 1<<30 {
		return fmt.Errorf("--kv-budget %d: must be -1 (no paging), 0 (the default) or up to %d MiB", o.kvBudgetMiB, 1<<30)
	}
	if o.batch < 1 {
		return fmt.Errorf("--batch %d: must be at least 1", o.batch)
	}
	if o.batchGather < 0 || o.batchGather > time.Second {
		return fmt.Errorf("--batch-gather %v: must be 0 (no wait) to 1s", o.batchGather)
	}
	if o.maxQueue < 0 {
		return fmt.Errorf("--max-queue %d: must not be negative", o.maxQueue)
	}
	if o.device != "cpu" && o.device != "cuda" {
		return fmt.Errorf("--device %q: want cpu or cuda", o.device)
	}
	if err := checkKVResident(o.kvResident, o.device, o.kvWindow, o.kvSinks, 0); err != nil {
		return err
	}
	models, places, err := serveModels(o)
	if err != nil {
		return err
	}
	historyPath, err := historyPath(o.dataDir)
	if err != nil {
		return err
	}
	queue := o.maxQueue
	if queue == 0 {
		queue = -1
	}
	gather := o.batchGather
	if gather == 0 {
		gather = -1 // server.Config: negative is no wait
	}
	server.Version = version
	srv, err := server.New(server.Config{
		Addr: o.addr, Logger: log, APIKey: o.apiKey, Models: models, Places: places.Describe(), KV: o.kv, Ctx: o.ctx, KVWindow: o.kvWindow, KVSinks: o.kvSinks,
		KVResident: o.kvResident, KVSpillChunk: spillChunk,
		DataDir: persistDir(o, historyPath), SessionBytes: o.sessionBytes,
		Threads: o.threads, Device: o.device, MaxConcurrent: o.maxConcurrent, Batch: o.batch, BatchGather: gather, KVBudget: kvBudget(o.kvBudgetMiB), MaxQueue: queue, HistoryPath: historyPath,
		AllowHosts: o.allowHosts,
	})
	if err != nil {
		return err
	}
	if len(o.models) > 0 {
		if err := srv.Preload(); err != nil {
			srv.Close()
			return err
		}
	}
	ln, err := net.Listen("tcp", srv.Addr())
	if err != nil {
		srv.Close()
		return fmt.Errorf("serve: %w", err)
	}
	printBanner(cmd.OutOrStdout(), displayAddr(ln.Addr()), models, places, o.verbose)
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return srv.ServeListener(ctx, ln)
}

// serveModels resolves the --model files, or discovers models when there are none.
func serveModels(o serveOptions) ([]discover.Model, discover.Places, error) {
	home, _ := os.UserHomeDir()
	places := discover.DefaultPlaces(home)
	if len(o.models) == 0 {
		if o.noDiscover || home == "" {
			return nil, places, nil
		}
		return discover.Find(places), places, nil
	}
	var out []discover.Model
	names := map[string]int{}
	for _, path := range o.models {
		m, err := discover.Inspect(path)
		if err != nil {
			return nil, places, fmt.Errorf("--model %s: %w", path, err)
		}
		names[m.Name]++
		if n := names[m.Name]; n > 1 {
			m.Name = fmt.Sprintf("%s#%d", m.Name, n)
		}
		out = append(out, m)
	}
	return out, places, nil
}

// persistDir is where chat sessions persist: --data, else the run history's directory; "" with
// --no-persist.
func persistDir(o serveOptions, historyPath string) string {
	switch {
	case o.noPersist:
		return ""
	case o.dataDir != "":
		return o.dataDir
	case historyPath != "":
		return filepath.Dir(historyPath)
	}
	return ""
}

// historyPath is the run history database: runs.db in --data DIR, else the one `kvlab runs`
// reads by default ($KVLAB_DB, or runs.db in kvlab's configuration directory).
func historyPath(dataDir string) (string, error) {
	if dataDir != "" {
		return filepath.Join(dataDir, "runs.db"), nil
	}
	p, err := history.DefaultPath()
	if err != nil {
		return "", fmt.Errorf("the run history: %w (set --data DIR)", err)
	}
	return p, nil
}

// printBanner says where the server is: one line; with verbose, also what it serves.
func printBanner(w io.Writer, addr string, models []discover.Model, places discover.Places, verbose bool) {
	fmt.Fprintf(w, "kvlab: serving http://%s/ (Ctrl-C to stop)\n", addr)
	if !verbose {
		return
	}
	if len(models) == 0 {
		fmt.Fprintln(w, "kvlab: no models: the planner works; for chat and the lab, restart with --model FILE.gguf or put a .gguf file in:")
		for _, p := range places.Describe() {
			fmt.Fprintln(w, "  "+p)
		}
		return
	}
	for _, m := range models {
		fmt.Fprintf(w, "kvlab: model %s (%s, %s, %s)\n", m.Name, m.Arch, web.Bytes(m.Size), m.Source)
	}
}

// displayAddr is a listen address as a browser can open it: an unspecified host becomes
// localhost.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// kvBudget is --kv-budget's MiB as server.Config.KVBudget bytes (-1: server.KVBudgetOff).
func kvBudget(mib int64) int64 {
	if mib < 0 {
		return server.KVBudgetOff
	}
	return mib << 20
}
