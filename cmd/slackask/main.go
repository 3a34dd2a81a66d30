// Command slackask lets programs ask people questions in Slack.
//
//	slackask serve      run the service (Socket Mode bot + HTTP API)
//	slackask ask        ask a question through a running service, print the answer
//	slackask mcp        MCP server on stdio, forwarding to a running serve
//	slackask manifest   print the Slack app manifest
//	slackask dev        run against a local Slack emulator with a web page
//
// Configuration comes from the environment; see README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: slackask <command> [flags]

commands:
  serve      run the service: Socket Mode bot and HTTP API
  ask        ask a question through a running service and print the answer JSON
  mcp        serve the ask_user_question MCP tool on stdio (forwards to SLACKASK_URL)
  manifest   print the Slack app manifest to create the app from
  dev        try it without Slack: a local Slack emulator with a web page
  help       show this text

Configuration is read from the environment (SLACK_BOT_TOKEN, SLACK_APP_TOKEN,
SLACKASK_CHANNEL, …); see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], stderr)
	case "ask":
		return cmdAsk(ctx, args[1:], stdin, stdout, stderr)
	case "manifest":
		return cmdManifest(args[1:], stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "dev":
		return cmdDev(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "slackask: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
