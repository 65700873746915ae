package kvcache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

var testID = Identity{Name: "test.gguf", Hash: [32]byte{1, 2, 3}}

func snapCfg(t testing.TB, pair string, mut func(*Config)) Config {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPairNoT(pair), MaxCells: 160, Seed: 5}
	if mut != nil {
		mut(&cfg)
	}
	return cfg
}

func tokensOf(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i*7 + 1)
	}
	return out
}

// decodeOut is layer l's decode attention output for a fixed query.
func decodeOut(t *testing.T, c *Cache, l int) []float32 {
	t.Helper()
	cfg := c.Config()
	s := attn.Shape{Heads: 4, KVHeads: cfg.KVHeads, HeadDimK: cfg.HeadDimK, HeadDimV: cfg.HeadDimV, Scale: 0.125, Threads: 1}
	q := randVec(rand.New(rand.NewPCG(11, 12)), 4*cfg.HeadDimK)
	out := make([]float32, 4*cfg.HeadDimV)
	if err := attn.Decode(out, q, s, c.Keys(l, true), c.Values(l, true), 0, c.Len()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSnapshotRoundTripExact: a cache loaded from its own snapshot continues bit for bit like the
// cache that saved it.
func TestSnapshotRoundTripExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		pair string
		mut  func(*Config)
	}{
		{"f16", "f16", nil},
		{"q4_0", "q4_0", nil},
		{"q8_0/q4_0-r", "q8_0/q4_0-r", nil},
		{"tq4", "tq4", nil},
		{"turbo3", "turbo3", nil},
		{"q4_0 overlay", "q4_0", func(c *Config) { c.Window, c.Sinks = 16, 4 }},
		{"q4_0 mixed", "q4_0", func(c *Config) { c.Recent, c.Sinks = 24, 4 }},
		{"q8_0 mixed no sinks", "q8_0", func(c *Config) { c.Recent = 8 }},
		{"q8_0 head dim 8, one-cell prompt", "q8_0", func(c *Config) { c.HeadDimK, c.HeadDimV, c.KVHeads = 8, 8, 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := snapCfg(t, tc.pair, tc.mut)
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			fill(t, a, r, 1, 1) // a one-cell first write: the V rotation is chosen among the alternates
			fill(t, a, r, 89, 30)
			fill(t, a, r, 7, 1)
			var buf bytes.Buffer
			if err := WriteSnapshot(&buf, a, testID, tokensOf(a.Len())); err != nil {
				t.Fatal(err)
			}
			b, _ := New(cfg)
			toks, info, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), b, testID)
			if err != nil {
				t.Fatal(err)
			}
			if info.Upgraded || len(toks) != a.Len() || b.Len() != a.Len() || toks[5] != tokensOf(6)[5] {
				t.Fatalf("info %+v, %d tokens, %d cells; want exact, %d", info, len(toks), b.Len(), a.Len())
			}
			// Both continue with the same cells.
			ra, rb := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
			for i := 0; i < 30; i++ {
				fill(t, a, ra, 1, 1)
				fill(t, b, rb, 1, 1)
			}
			for l := 0; l < cfg.Layers; l++ {
				x, y := decodeOut(t, a, l), decodeOut(t, b, l)
				for i := range x {
					if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
						t.Fatalf("layer %d: output %d differs after the reload: %g vs %g", l, i, x[i], y[i])
					}
				}
			}
		})
	}
}

// TestSnapshotUpgrade: another pair, another configuration and version 1 load by re-encoding
// the cells into the cache's pair.
func TestSnapshotUpgrade(t *testing.T) {
	src := snapCfg(t, "q8_0", nil)
	a, _ := New(src)
	k, v := fill(t, a, rand.New(rand.NewPCG(3, 4)), 100, 50)
	var v2, v1 bytes.Buffer
	if err := WriteSnapshot(&v2, a, testID, tokensOf(100)); err != nil {
		t.Fatal(err)
	}
	f, _ := New(snapCfg(t, "f16", nil))
	fill(t, f, rand.New(rand.NewPCG(3, 4)), 100, 50)
	if err := WriteSnapshotV1(&v1, f, testID, tokensOf(100)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file []byte
		dst  Config
		from string
	}{
		{"q8_0 into q4_0", v2.Bytes(), snapCfg(t, "q4_0", nil), "version 2, q8_0"},
		{"q8_0 into q4_0 mixed", v2.Bytes(), snapCfg(t, "q4_0", func(c *Config) { c.Recent, c.Sinks = 16, 2 }), "q8_0"},
		{"q8_0 into another seed", v2.Bytes(), snapCfg(t, "q8_0", func(c *Config) { c.Seed = 6 }), "q8_0"},
		{"v1 into q4_0", v1.Bytes(), snapCfg(t, "q4_0", nil), "version 1"},
		{"v1 into q2k", v1.Bytes(), snapCfg(t, "q2k", nil), "version 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.dst)
			if err != nil {
				t.Fatal(err)
			}
			_, info, err := ReadSnapshot(bytes.NewReader(tc.file), c, testID)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Upgraded || !strings.Contains(info.From, tc.from) || c.Len() != 100 {
				t.Fatalf("info %+v, %d cells: want an upgrade from %q of 100 cells", info, c.Len(), tc.from)
			}
			kr, vr := c.Rows(1, true)
			row := make([]float32, 64)
			for cell := 0; cell < 100; cell += 9 {
				off := (cell*2 + 1) * 64
				kr[1].Row(row, cell)
				bound := 0.2
				if tc.dst.Pair.K.Grouped() {
					bound = 0.45 // 2-bit K of Gaussian rows
				}
				if e := relRMS(row, k[off:off+64]); e > bound {
					t.Errorf("cell %d K off by %.3f after the upgrade", cell, e)
				}
				vr[1].Row(row, cell)
				if e := relRMS(row, v[off:off+64]); e > 0.2 {
					t.Errorf("cell %d V off by %.3f after the upgrade", cell, e)
				}
			}
		})
	}
}

// reseal recomputes every checksum of a snapshot whose lengths still frame it, so that tests and
// the fuzzer reach the checks behind the checksums.
func reseal(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) < 16 {
		return b
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	if 16+n+4 > len(b) {
		return b
	}
	binary.LittleEndian.PutUint32(b[16+n:], crc32.Checksum(b[:16+n], castagnoli))
	for off := 16 + n + 4; off+12 <= len(b); {
		m := binary.LittleEndian.Uint64(b[off+4:])
		if m > uint64(len(b)) || off+12+int(m)+4 > len(b) {
			break
		}
		p := b[off+12 : off+12+int(m)]
		binary.LittleEndian.PutUint32(b[off+12+int(m):], crc32.Checksum(p, castagnoli))
		off += 12 + int(m) + 4
	}
	return b
}

// TestSnapshotErrors: every corrupt, truncated or foreign file gets its named error and leaves
// the cache empty.
func TestSnapshotErrors(t *testing.T) {
	cfg := snapCfg(t, "q4_0", func(c *Config) { c.Recent, c.Sinks = 16, 2 })
	a, _ := New(cfg)
	fill(t, a, rand.New(rand.NewPCG(5, 6)), 100, 25)
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, a, testID, tokensOf(100)); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	hdrLen := 16 + int(binary.LittleEndian.Uint32(good[12:])) + 4
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	other := testID
	other.Hash[0]++
	var foreign bytes.Buffer
	if err := WriteSnapshot(&foreign, a, other, tokensOf(100)); err != nil {
		t.Fatal(err)
	}
	small := cfg
	small.MaxCells = 50
	shape := cfg
	shape.Layers = 3
	dims := cfg
	dims.HeadDimV = 32

	for _, tc := range []struct {
		name string
		file []byte
		cfg  Config
		want error
	}{
		{"empty", nil, cfg, ErrSnapshotTruncated},
		{"not a snapshot", []byte("GGUF\x03\x00\x00\x00 and more bytes than a header"), cfg, ErrSnapshotNotKV},
		{"newer version", mutate(func(b []byte) []byte { b[8] = 9; return b }), cfg, ErrSnapshotVersion},
		{"version 0", mutate(func(b []byte) []byte { b[8] = 0; return b }), cfg, ErrSnapshotVersion},
		{"another model", foreign.Bytes(), cfg, ErrSnapshotModel},
		{"more layers", good, shape, ErrSnapshotShape},
		{"other head dim", good, dims, ErrSnapshotShape},
		{"more cells than the cache", good, small, ErrSnapshotTooLong},
		{"header byte flipped", mutate(func(b []byte) []byte { b[40] ^= 1; return b }), cfg, ErrSnapshotCorrupt},
		{"hash byte flipped", mutate(func(b []byte) []byte { b[16] ^= 1; return b }), cfg, ErrSnapshotCorrupt},
		{"huge header length", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 1<<31); return b }), cfg, ErrSnapshotCorrupt},
		{"cut in the magic", good[:5], cfg, ErrSnapshotTruncated},
		{"cut in the header", good[:hdrLen-3], cfg, ErrSnapshotTruncated},
		{"cut after the header", good[:hdrLen], cfg, ErrSnapshotTruncated},
		{"cut in a section", good[:hdrLen+100], cfg, ErrSnapshotTruncated},
		{"last checksum missing", good[:len(good)-2], cfg, ErrSnapshotTruncated},
		{"section byte flipped", mutate(func(b []byte) []byte { b[hdrLen+200] ^= 0x40; return b }), cfg, ErrSnapshotCorrupt},
		{"section length huge", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[hdrLen+4:], 1<<60); return b }), cfg, ErrSnapshotCorrupt},
		{"section of another layer", reseal(mutate(func(b []byte) []byte { b[hdrLen] = 1; return b })), cfg, ErrSnapshotCorrupt},
		{"trailing bytes", append(bytes.Clone(good), 0), cfg, ErrSnapshotCorrupt},
		{"bad pair, resealed", reseal(mutate(func(b []byte) []byte {
			i := bytes.Index(b, []byte("q4_0/q4_0"))
			copy(b[i:], "q9_9")
			return b
		})), cfg, ErrSnapshotCorrupt},
		{"store length, resealed", reseal(mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[hdrLen+12:], 1000)
			return b
		})), cfg, ErrSnapshotCorrupt},
		{"rotation, resealed", reseal(mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[hdrLen+16:], 40)
			return b
		})), cfg, ErrSnapshotCorrupt},
		{"calibration count, resealed", reseal(mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[hdrLen+20:], 3)
			return b
		})), cfg, ErrSnapshotCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, c, rand.New(rand.NewPCG(1, 1)), 10, 10) // a load empties what was there
			_, _, err = ReadSnapshot(bytes.NewReader(tc.file), c, testID)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !IsSnapshotError(err) {
				t.Errorf("IsSnapshotError(%v) is false", err)
			}
			if c.Len() != 0 {
				t.Errorf("the cache holds %d cells after a failed load", c.Len())
			}
		})
	}
	t.Run("q2k is not saved", func(t *testing.T) {
		c, _ := New(snapCfg(t, "q2k", nil))
		fill(t, c, rand.New(rand.NewPCG(1, 1)), 40, 40)
		if err := WriteSnapshot(&bytes.Buffer{}, c, testID, tokensOf(40)); !errors.Is(err, ErrSnapshotUnsupported) {
			t.Errorf("error %v, want ErrSnapshotUnsupported", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		c, _ := New(cfg)
		if _, _, err := LoadSnapshot(filepath.Join(t.TempDir(), "none.kv"), c, testID); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want ErrNotExist", err)
		}
	})
}

// TestSnapshotSaveAtomic: SaveSnapshot replaces the file whole, and a process killed during a
// save leaves the previous snapshot readable.
func TestSnapshotSaveAtomic(t *testing.T) {
	if os.Getenv("KVLAB_SNAPSHOT_CHILD") != "" {
		return // the child's work is in TestSnapshotKillChild
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "seq.kv")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotKillChild$", "-test.v")
	cmd.Env = append(os.Environ(), "KVLAB_SNAPSHOT_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	mid := false
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	for sc.Scan() {
		if strings.Contains(sc.Text(), "KVLAB-MID-SAVE") {
			mid = true
			break
		}
	}
	deadline.Stop()
	cmd.Process.Kill() // SIGKILL: no deferred clean-up runs
	cmd.Wait()
	if !mid {
		t.Fatal("the child never reached the middle of its second save")
	}
	c, _ := New(killCfg())
	toks, _, err := LoadSnapshot(path, c, testID)
	if err != nil {
		t.Fatalf("the snapshot before the killed save does not load: %v", err)
	}
	if len(toks) != 40 || toks[0] != 100 {
		t.Fatalf("loaded %d tokens starting %v: want the first save's 40 from 100", len(toks), toks[:min(len(toks), 1)])
	}
	left, _ := filepath.Glob(filepath.Join(dir, "seq.kv.*.tmp"))
	if len(left) != 1 {
		t.Errorf("temporary files %v: want the killed save's one", left)
	}
}

func killCfg() Config {
	return Config{Layers: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, MaxCells: 400, Pair: mustPairNoT("q8_0")}
}

// TestSnapshotKillChild is TestSnapshotSaveAtomic's child process: it saves one snapshot, then
// stops for good in the middle of a second one.
func TestSnapshotKillChild(t *testing.T) {
	path := os.Getenv("KVLAB_SNAPSHOT_CHILD")
	if path == "" {
		t.Skip("the child of TestSnapshotSaveAtomic")
	}
	c, _ := New(killCfg())
	fill(t, c, rand.New(rand.NewPCG(1, 1)), 40, 40)
	first := make([]int32, 40)
	for i := range first {
		first[i] = int32(100 + i)
	}
	if err := SaveSnapshot(path, c, testID, first); err != nil {
		t.Fatal(err)
	}
	fill(t, c, rand.New(rand.NewPCG(2, 2)), 300, 100)
	snapshotSectionHook = func(l int) {
		if l == 1 {
			fmt.Println("KVLAB-MID-SAVE")
			os.Stdout.Sync()
			time.Sleep(time.Hour)
		}
	}
	SaveSnapshot(path, c, testID, tokensOf(340))
}

func FuzzReadSnapshot(f *testing.F) {
	for _, seed := range snapshotSeeds(f) {
		f.Add(seed)
	}
	cfgs := []Config{fuzzCfg("q4_0", 0, 0), fuzzCfg("q4_0", 8, 0), fuzzCfg("q8_0", 0, 4)}
	caches := make([]*Cache, len(cfgs))
	for i, cfg := range cfgs {
		caches[i], _ = New(cfg)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, reseal(data)} {
			for _, c := range caches {
				toks, _, err := ReadSnapshot(bytes.NewReader(b), c, testID)
				if err != nil {
					if c.Len() != 0 {
						t.Fatalf("%v, and the cache holds %d cells", err, c.Len())
					}
					continue
				}
				if len(toks) != c.Len() {
					t.Fatalf("%d tokens for %d cells", len(toks), c.Len())
				}
				// The loaded cache reads and grows without panicking.
				for l := 0; l < c.cfg.Layers; l++ {
					decodeOut(t, c, l)
				}
				if c.Len() < c.Cap() {
					k := make([]float32, c.cfg.KVHeads*c.cfg.HeadDimK)
					v := make([]float32, c.cfg.KVHeads*c.cfg.HeadDimV)
					for l := 0; l < c.cfg.Layers; l++ {
						if err := c.Write(l, k, v, 1); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	})
}

func mustPairNoT(s string) kvq.Pair {
	p, err := kvq.ParsePair(s)
	if err != nil {
		panic(err)
	}
	return p
}

func fuzzCfg(pair string, recent, window int) Config {
	return Config{Layers: 2, KVHeads: 1, HeadDimK: 32, HeadDimV: 32, MaxCells: 64, Pair: mustPairNoT(pair),
		Recent: recent, Window: window, Sinks: min(recent, window, 2) + 1}
}

// snapshotSeeds are small valid snapshots of the fuzz caches' shape.
func snapshotSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, cfg := range []Config{fuzzCfg("q4_0", 0, 0), fuzzCfg("q4_0", 8, 0), fuzzCfg("q8_0", 0, 4)} {
		c, err := New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		r := rand.New(rand.NewPCG(9, 9))
		for _, n := range []int{20, 1, 1} {
			k, v := randVec(r, n*cfg.KVHeads*cfg.HeadDimK), randVec(r, n*cfg.KVHeads*cfg.HeadDimV)
			for l := 0; l < cfg.Layers; l++ {
				c.Write(l, k, v, n)
			}
			c.Commit(n)
		}
		var b bytes.Buffer
		if err := WriteSnapshot(&b, c, testID, tokensOf(c.Len())); err != nil {
			tb.Fatal(err)
		}
		out = append(out, b.Bytes())
		if cfg.Recent == 0 && cfg.Window == 0 {
			var v1 bytes.Buffer
			WriteSnapshotV1(&v1, c, testID, tokensOf(c.Len()))
			out = append(out, v1.Bytes())
		}
	}
	return out
}

// TestWriteFuzzCorpus writes the committed seed corpus (KVLAB_WRITE_CORPUS=1).
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("KVLAB_WRITE_CORPUS") == "" {
		t.Skip("set KVLAB_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzReadSnapshot")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadSnapshot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, b := range snapshotSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
