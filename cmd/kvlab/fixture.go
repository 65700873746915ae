package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/spf13/cobra"
)

func newFixtureCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fixture",
		Short: "Derive test models from a GGUF file (function-preserving transforms)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newFixtureOutlierCmd())
	return cmd
}

func newFixtureOutlierCmd() *cobra.Command {
	var in, out, pairs string
	cmd := &cobra.Command{
		Use:   "outlier --model FILE.gguf --out NEW.gguf",
		Short: "Write a copy of a llama model with outlier K channels that computes the same function",
		Long: `Write a copy of a llama-architecture GGUF model (F32 Q and K weights) in which a few RoPE
pairs of every K head are scaled up and the matching Q channels scaled down by the same factor
in every layer. Every attention score q·k is unchanged (RoPE rotates within a pair, which
commutes with scaling it), so greedy output and the f16-cache perplexity stay the same, but the
K cache now has channels whose scale is far above the rest, as real models' K caches do. Use it
to see how a KV format copes with outlier channels: kvlab ab --model NEW.gguf.

--pairs lists PAIR:FACTOR (pair p is channels 2p and 2p+1 of a head); powers of two keep the
transform exact in floating point. The pairs are recorded in the copy as kvlab.outlier_pairs.`,
		Example: "  kvlab fixture outlier --model ../shared/models/kvlab-tiny-64.gguf --out /tmp/tiny-outlier.gguf",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in == "" || out == "" {
				return errors.New("--model and --out are required")
			}
			ps := lab.DefaultOutlierPairs
			if pairs != "" {
				var err error
				if ps, err = lab.ParseOutlierPairs(pairs); err != nil {
					return fmt.Errorf("--pairs: %w", err)
				}
			}
			src, err := gguf.Open(in)
			if err != nil {
				return err
			}
			defer src.Close()
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			if err := lab.OutlierModel(f, src, ps); err != nil {
				f.Close()
				os.Remove(out)
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: K pairs scaled (pair:factor) %v\n", out, ps)
			return nil
		},
	}
	cmd.Flags().StringVar(&in, "model", "", "source GGUF model (llama architecture, F32 Q/K weights)")
	cmd.Flags().StringVar(&out, "out", "", "the GGUF file to write")
	cmd.Flags().StringVar(&pairs, "pairs", "", "RoPE pairs to scale, PAIR:FACTOR,… (default 3:8,11:16,20:32,28:64)")
	return cmd
}
