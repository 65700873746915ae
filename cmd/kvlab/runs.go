package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kvlab/kvlab/internal/history"
	"github.com/spf13/cobra"
)

func newRunsCmd() *cobra.Command {
	var (
		dbPath string
		asJSON bool
		limit  int
	)
	open := func(cmd *cobra.Command) (*history.DB, error) {
		path := dbPath
		if path == "" {
			var err error
			if path, err = history.DefaultPath(); err != nil {
				return nil, err
			}
		}
		return history.Open(cmdContext(cmd), path)
	}
	cmd := &cobra.Command{
		Use:   "runs [show ID]",
		Short: "List the stored A/B runs, or show one again",
		Long: `List the runs 'kvlab ab' stored in the run history, newest first: id, start time, status
(running means the process stopped before the run finished), model and arms. 'kvlab runs show
ID' prints a stored run's table again, or its JSON document with --json. The database is --db,
else $KVLAB_DB, else runs.db in kvlab's directory under the user configuration directory.`,
		Example: "  kvlab runs\n  kvlab runs show 3\n  kvlab runs --json --limit 10",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := open(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			list, err := db.List(cmdContext(cmd), history.ListOptions{Limit: limit})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if list == nil {
					list = []history.Summary{}
				}
				return writeJSON(w, map[string]any{"db": db.Path(), "runs": list})
			}
			if len(list) == 0 {
				fmt.Fprintf(w, "no runs in %s\n", db.Path())
				return nil
			}
			t := table{header: []string{"id", "started", "status", "model", "sha256", "arms", "time"}, left: map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true}}
			for _, r := range list {
				dur := "-"
				if !r.Finished.IsZero() {
					dur = r.Finished.Sub(r.Started).Round(100 * time.Millisecond).String()
				}
				sha := r.SHA256
				if len(sha) > 12 {
					sha = sha[:12]
				}
				t.add(strconv.FormatInt(r.ID, 10), r.Started.Local().Format("2006-01-02 15:04:05"), string(r.Status),
					r.Model, sha, strings.Join(r.Arms, ","), dur)
			}
			return t.write(w)
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print a stored run again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("run id %q: want a positive number", args[0])
			}
			db, err := open(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			r, err := db.Get(cmdContext(cmd), id)
			if err != nil {
				return err
			}
			out := abOutput{ID: r.ID, DB: db.Path(), File: r.Model.Path, SHA256: r.Model.SHA256, Status: r.Status,
				Started: r.Started, Machine: r.Machine, Settings: r.Config, ABReport: r.Report}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, out)
			}
			fmt.Fprintf(w, "run %d (%s), started %s on %s (%s/%s, %d CPUs, kvlab %s)\n", r.ID, r.Status,
				r.Started.Local().Format(time.RFC3339), r.Machine.CPU, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.Version)
			fmt.Fprintf(w, "model %s, sha256 %s\n", r.Model.Path, r.Model.SHA256)
			if r.Report == nil {
				if r.Error != "" {
					fmt.Fprintf(w, "failed: %s\n", r.Error)
				} else {
					fmt.Fprintln(w, "no results: the run did not finish")
				}
				return nil
			}
			out.ID = 0 // the table's "stored as" line is for fresh runs
			return printAB(w, &out)
		},
	}
	var asCSV bool
	var ids []int64
	export := &cobra.Command{
		Use:   "export --csv|--json [--id N]…",
		Short: "Write the stored runs' results as CSV (one row per run and arm) or one JSON document",
		Long: `Export the run history for a spreadsheet or a notebook. --csv writes one row per run and
arm: the run's id, start, status, model and its SHA-256, then the arm's measurements (decode and
prompt KL and top-1, perplexity, attention error, needles, speeds, KV bytes). --json writes every
run with its full report. --id picks runs (repeatable); by default every complete run is written.`,
		Example: "  kvlab runs export --csv > runs.csv\n  kvlab runs export --json --id 3 --id 4",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asCSV == asJSON {
				return fmt.Errorf("choose one format: --csv or --json")
			}
			db, err := open(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			ctx := cmdContext(cmd)
			if len(ids) == 0 {
				list, err := db.List(ctx, history.ListOptions{})
				if err != nil {
					return err
				}
				for i := len(list) - 1; i >= 0; i-- { // oldest first
					if list[i].Status == history.Complete {
						ids = append(ids, list[i].ID)
					}
				}
			}
			var runs []*history.Run
			for _, id := range ids {
				r, err := db.Get(ctx, id)
				if err != nil {
					return fmt.Errorf("run %d: %w", id, err)
				}
				runs = append(runs, r)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if runs == nil {
					runs = []*history.Run{}
				}
				return writeJSON(w, map[string]any{"db": db.Path(), "runs": runs})
			}
			return writeRunsCSV(w, runs)
		},
	}
	export.Flags().BoolVar(&asCSV, "csv", false, "write CSV: one row per run and arm")
	export.Flags().Int64SliceVar(&ids, "id", nil, "export this run (repeatable; default every complete run)")
	cmd.AddCommand(export)
	for _, c := range []*cobra.Command{cmd, show, export} {
		c.Flags().StringVar(&dbPath, "db", "", "run history database (default $KVLAB_DB, else runs.db in the user config dir)")
		c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many runs (newest first); 0 lists all")
	cmd.AddCommand(show)
	return cmd
}

// writeRunsCSV writes one row per run and arm: the run's columns, then abCSVHeader's.
func writeRunsCSV(out io.Writer, runs []*history.Run) error {
	w := csv.NewWriter(out)
	w.Write(append([]string{"run", "started", "status", "model", "sha256"}, abCSVHeader...))
	for _, r := range runs {
		if r.Report == nil {
			continue
		}
		head := []string{strconv.FormatInt(r.ID, 10), r.Started.UTC().Format(time.RFC3339), string(r.Status), strings.TrimSuffix(r.Model.Name, ".gguf"), r.Model.SHA256}
		for _, row := range abCSVRows(r.Report) {
			w.Write(append(append([]string{}, head...), row...))
		}
	}
	w.Flush()
	return w.Error()
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
