// Command kvlab plans, measures and serves long-context LLM inference with a compressed KV
// cache. Run `kvlab --help` for the commands.
package main

import (
	"errors"
	"fmt"
	"github.com/kvlab/kvlab/internal/limits"
	"os"

	"github.com/spf13/cobra"
)

// version is set at link time (-ldflags "-X main.version=…").
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "kvlab",
		Short: "Plan, measure and serve LLMs with a compressed KV cache",
		Long: `kvlab answers three questions for people who serve long-context models:

  plan    Will it fit? KV bytes per token for every format, the longest resident context,
          sessions per card, and the decode-speed cliff when the KV tail spills to host.
  ab      What does a KV format cost? KL divergence, top-1 agreement, attention error,
          needle retrieval and tokens/s against an f16 cache, on your model.
  serve   Stream chat with the KV cache compressed, picked automatically when you don't.

Every command that prints a table also takes --json.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newBenchCmd(),
		newFormatsCmd(),
		newGateCmd(),
		newPlanCmd(),
		newServeCmd(),
		newRunCmd(),
		newAbCmd(),
		newRunsCmd(),
		newTokenizeCmd(),
		newInspectCmd(),
		newPplCmd(),
		newFixtureCmd(),
	)
	return root
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "kvlab:", limits.Clip(err.Error(), limits.MaxErrorBytes))
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// exitCoder is an error that carries its own process exit status.
type exitCoder interface{ ExitCode() int }
