package main

import (
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"syscall"

	"github.com/kvlab/kvlab/server"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	var addr string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the kvlab pages: the planner at /plan",
		Long: `Serve kvlab over HTTP. This version serves the planner at /plan: the size ladder, the spill
cliff and the auto KV-tier pick, computed in your browser by the planner compiled to
WebAssembly (embedded in this binary). Once the page has loaded it keeps working with the server
stopped. Dropping a GGUF file on the page reads only its header, in the browser.

The server listens on 127.0.0.1:8080 by default (loopback only); --addr changes it. /healthz
answers {"status":"ok"}. Stop it with Ctrl-C.`,
		Example: "  kvlab serve\n  kvlab serve --addr :9000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			srv := server.New(server.Config{Addr: addr, Logger: log})
			ln, err := net.Listen("tcp", srv.Addr())
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kvlab: serving http://%s/plan (Ctrl-C to stop)\n", displayAddr(ln.Addr()))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return srv.ServeListener(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "TCP address to listen on (host:port)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every request")
	return cmd
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
