package main

import (
	"fmt"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/spf13/cobra"
)

// formatRow is one line of `kvlab formats`: a format pair and its cost at one head shape.
type formatRow struct {
	Format       string  `json:"format"`
	K            string  `json:"k"`
	V            string  `json:"v"`
	Description  string  `json:"description"`
	BitsPerValue float64 `json:"bits_per_value"`
	KBlockBytes  int     `json:"k_bytes_per_32_values"`
	VBlockBytes  int     `json:"v_bytes_per_32_values"`
	KRowBytes    float64 `json:"k_bytes_per_head"`
	VRowBytes    float64 `json:"v_bytes_per_head"`
	KBytes       float64 `json:"k_bytes_per_cell"`
	VBytes       float64 `json:"v_bytes_per_cell"`
	BytesPerCell float64 `json:"bytes_per_cell"`
	VsF16        float64 `json:"vs_f16"`
}

func newFormatsCmd() *cobra.Command {
	var headDim, kvHeads int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "formats",
		Short: "List KV formats with bits per value and bytes per cell for a head shape",
		Long: `List every KV-cache format kvlab stores, and the useful K/V pairs, with the exact storage
cost for one cell (one token) of one layer: K and V of --kv-heads heads of --head-dim values.

Formats are named as llama.cpp's -ctk/-ctv names (f16, q8_0, q4_0, …) plus fp8, q2k, tq4 and
the rotated Lloyd-Max tiers turbo2, turbo3 and turbo4. A pair is written K/V (q8_0/q4_0); one
name means both.

The quantized block formats, fp8 and q2k's K are stored through a randomized Hadamard rotation
per head by default (K also with per-channel scales and offsets fixed from the first cells
written); the bytes are the same. The suffix -r names the unrotated variant: byte-identical to
llama.cpp's for the block formats (q4_0-r, q8_0-r/q4_0-r), and for q2k-r its K per channel as
it comes.`,
		Example: "  kvlab formats --head-dim 128 --kv-heads 8 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if headDim < kvq.MinDim {
				return fmt.Errorf("--head-dim %d: must be at least %d", headDim, kvq.MinDim)
			}
			if kvHeads < 1 {
				return fmt.Errorf("--kv-heads %d: must be at least 1", kvHeads)
			}
			rows := formatRows(headDim, kvHeads)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"head_dim": headDim, "kv_heads": kvHeads, "formats": rows,
				})
			}
			t := &table{header: []string{"format", "bits/value", "K B/cell", "V B/cell", "K+V B/cell", "vs f16", "what"}, left: map[int]bool{6: true}}
			for _, r := range rows {
				t.add(r.Format, fmt.Sprintf("%.3g", r.BitsPerValue), fmt.Sprintf("%g", r.KBytes),
					fmt.Sprintf("%g", r.VBytes), fmt.Sprintf("%g", r.BytesPerCell),
					fmt.Sprintf("%.1f%%", 100*r.VsF16), r.Description)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "one cell of one layer: %d KV heads × head_dim %d, K and V\n", kvHeads, headDim)
			fmt.Fprintf(cmd.OutOrStdout(), "quantized formats are stored rotated (same bytes); -r names the unrotated variant (q4_0-r)\n\n")
			return t.write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&headDim, "head-dim", 128, "values per head (K and V)")
	cmd.Flags().IntVar(&kvHeads, "kv-heads", 8, "KV heads per layer")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// formatRows lists every symmetric pair whose V can hold V, the q2k scheme, then the useful
// asymmetric pairs.
func formatRows(headDim, kvHeads int) []formatRow {
	var pairs []kvq.Pair
	for _, f := range kvq.Formats() {
		if !f.KOnly() {
			pairs = append(pairs, kvq.Pair{K: f, V: f})
		}
	}
	seen := map[kvq.Pair]bool{}
	for _, p := range pairs {
		seen[p] = true
	}
	for _, p := range kvq.UsefulPairs {
		if !seen[p] {
			pairs = append(pairs, p)
		}
	}
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}.BytesPerToken(headDim, headDim, kvHeads)
	rows := make([]formatRow, 0, len(pairs))
	for _, p := range pairs {
		k := p.K.BytesPerToken(headDim, kvHeads)
		v := p.V.BytesPerToken(headDim, kvHeads)
		desc := p.K.Description()
		if p.K != p.V {
			desc = "K " + p.KName() + ", V " + p.VName()
		}
		rows = append(rows, formatRow{
			Format: p.String(), K: p.KName(), V: p.VName(), Description: desc,
			BitsPerValue: 8 * (k + v) / float64(2*headDim*kvHeads),
			KBlockBytes:  p.K.RowBytes(kvq.BlockSize), VBlockBytes: p.V.RowBytes(kvq.BlockSize),
			KRowBytes: p.K.BytesPerToken(headDim, 1), VRowBytes: p.V.BytesPerToken(headDim, 1),
			KBytes: k, VBytes: v, BytesPerCell: k + v, VsF16: (k + v) / f16,
		})
	}
	return rows
}
