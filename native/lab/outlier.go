package lab

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
)

// OutlierPair is one RoPE pair of every K head that OutlierModel scales: channels 2·Pair and
// 2·Pair+1 of the head (llama's interleaved RoPE layout), K by Factor and the matching Q
// channels of every query head by 1/Factor.
type OutlierPair struct {
	Pair   int
	Factor float32
}

// DefaultOutlierPairs are the pairs the outlier fixture scales: four pairs spread over the
// head, by 8, 16, 32 and 64 (powers of two, so the transform is exact in floating point).
var DefaultOutlierPairs = []OutlierPair{{3, 8}, {11, 16}, {20, 32}, {28, 64}}

// ParseOutlierPairs reads "PAIR:FACTOR,…" ("3:8,11:16").
func ParseOutlierPairs(s string) ([]OutlierPair, error) {
	var out []OutlierPair
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		p, x, ok := strings.Cut(strings.TrimSpace(f), ":")
		if !ok {
			return nil, fmt.Errorf("outlier pair %q: want PAIR:FACTOR", f)
		}
		pi, err := strconv.Atoi(p)
		if err != nil || pi < 0 {
			return nil, fmt.Errorf("outlier pair %q: the pair must be a non-negative integer", f)
		}
		fx, err := strconv.ParseFloat(x, 32)
		if err != nil || !(fx > 0) || math.IsInf(fx, 0) {
			return nil, fmt.Errorf("outlier pair %q: the factor must be positive", f)
		}
		out = append(out, OutlierPair{pi, float32(fx)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no outlier pairs in %q", s)
	}
	return out, nil
}

// OutlierModel writes to dst a copy of the llama-architecture GGUF src in which the K channels
// of the given RoPE pairs are scaled up and the matching Q channels scaled down by the same
// factor in every layer: a function-preserving transform (q·k, and so every attention score, is
// unchanged; RoPE rotates within a pair and commutes with scaling it), which gives the model
// K channels whose scale is far above the rest, as real models have and small fixtures lack.
// Q and K weights must be F32. The copy records the pairs under kvlab.outlier_pairs.
func OutlierModel(dst io.Writer, src *gguf.File, pairs []OutlierPair) error {
	arch := src.Architecture()
	heads, ok1 := src.Uint(arch + ".attention.head_count")
	kvHeads, ok2 := src.Uint(arch + ".attention.head_count_kv")
	embd, ok3 := src.Uint(arch + ".embedding_length")
	if !ok1 || !ok3 {
		return fmt.Errorf("outlier model: %s: no head count or embedding length", arch)
	}
	if !ok2 {
		kvHeads = heads
	}
	if heads == 0 || kvHeads == 0 || embd%heads != 0 {
		return fmt.Errorf("outlier model: %d heads, %d KV heads, embedding %d", heads, kvHeads, embd)
	}
	hd := int(embd / heads)
	for _, p := range pairs {
		if 2*p.Pair+1 >= hd {
			return fmt.Errorf("outlier model: pair %d is outside head dimension %d", p.Pair, hd)
		}
	}
	w := &gguf.Writer{Version: src.Version, Alignment: int(src.Alignment)}
	var desc []string
	for _, p := range pairs {
		desc = append(desc, fmt.Sprintf("%d:%g", p.Pair, p.Factor))
	}
	for _, k := range src.Keys() {
		if k == "general.alignment" {
			continue
		}
		v, _ := src.Value(k)
		w.AddKV(k, v)
	}
	w.AddKV("kvlab.outlier_pairs", strings.Join(desc, ","))
	scaled := 0
	for _, t := range src.Tensors() {
		data, err := src.TensorData(t.Name)
		if err != nil {
			return err
		}
		var inv bool
		var nh int
		switch {
		case strings.HasSuffix(t.Name, ".attn_k.weight"):
			nh = int(kvHeads)
		case strings.HasSuffix(t.Name, ".attn_q.weight"):
			nh, inv = int(heads), true
		}
		if nh > 0 {
			if t.Type != gguf.F32 || len(t.Dims) != 2 || int(t.Dims[1]) != nh*hd {
				return fmt.Errorf("outlier model: %s: want F32 [%d, %d], have %s %v", t.Name, embd, nh*hd, t.Type, t.Dims)
			}
			data = append([]byte(nil), data...)
			in := int(t.Dims[0])
			for h := 0; h < nh; h++ {
				for _, p := range pairs {
					f := p.Factor
					if inv {
						f = 1 / f
					}
					for _, ch := range []int{2 * p.Pair, 2*p.Pair + 1} {
						row := data[(h*hd+ch)*in*4 : (h*hd+ch+1)*in*4]
						for i := 0; i < in; i++ {
							x := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
							binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(x*f))
						}
					}
				}
			}
			scaled++
		}
		w.AddTensor(t.Name, t.Type, t.Dims, data)
	}
	if scaled == 0 {
		return fmt.Errorf("outlier model: no attn_q/attn_k weights found")
	}
	_, err := w.WriteTo(dst)
	return err
}
