package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newPlanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Size ladder, spill cliff and auto KV-tier pick for a model on a GPU",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("plan: not built yet")
		},
	}
}
