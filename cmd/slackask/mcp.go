package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/slackask/slackask/client"
	"github.com/slackask/slackask/mcp"
)

// cmdMCP serves the ask_user_question MCP tool on stdin/stdout, forwarding
// every ask to the `slackask serve` at SLACKASK_URL. Logs go to stderr.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "slackask mcp: takes no arguments (configure it with SLACKASK_URL and SLACKASK_API_TOKEN)\n")
		return 2
	}
	cfg, ok := clientConfig("mcp", stderr)
	if !ok {
		return 2
	}
	log, err := cfg.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "slackask mcp: %v\n", err)
		return 2
	}
	if stdin == nil {
		stdin = os.Stdin
	}
	svc := client.New(cfg.URL, cfg.APIToken, nil).Service()
	if err := mcp.ServeStdio(ctx, svc, mcp.Options{Logger: log, Context: ctx}, stdin, stdout); err != nil {
		log.Error().Err(err).Msg("mcp server stopped")
		return 1
	}
	return 0
}
