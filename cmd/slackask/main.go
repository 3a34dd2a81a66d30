// Command slackask lets programs ask people questions in Slack.
//
//	slackask serve      run the service (Socket Mode bot + HTTP API)
//	slackask ask        ask a question through a running service, print the answer
//	slackask mcp        MCP server on stdio, forwarding to a running serve
//	slackask manifest   print the Slack app manifest
//	slackask dev        run against a local Slack emulator with a web page
//	slackask keys       create, list and revoke scoped API keys
//	slackask installs   list OAuth installations; rekey them under a new encryption key
//
// Configuration comes from the environment; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/slackask/slackask/config"
)

const usage = `usage: slackask <command> [flags]

commands:
  serve      run the service: Socket Mode bot and HTTP API
  ask        ask a question through a running service and print the answer JSON
  events     print the audit trail of every ask as JSON lines (--follow to keep going)
  mcp        serve the ask_user_question MCP tool on stdio (forwards to SLACKASK_URL)
  manifest   print the Slack app manifest to create the app from
  dev        try it without Slack: a local Slack emulator with a web page
  keys       create, list and revoke scoped API keys
  installs   list OAuth installations; rekey them under a new encryption key
  version    print the version
  help       show this text

"slackask <command> --help" describes a command.

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
	if len(args) == 2 && isHelp(args[1]) {
		if text, ok := commandHelp()[args[0]]; ok {
			fmt.Fprint(stdout, text)
			return 0
		}
	}
	switch args[0] {
	case "version", "--version", "-version":
		if len(args) > 1 {
			return flagFailed(stderr, "version", errors.New("takes no arguments"))
		}
		fmt.Fprintf(stdout, "slackask %s\n", buildVersion())
		return 0
	case "serve":
		return cmdServe(ctx, args[1:], stderr)
	case "ask":
		return cmdAsk(ctx, args[1:], stdin, stdout, stderr)
	case "manifest":
		return cmdManifest(args[1:], stdout, stderr)
	case "events":
		return cmdEvents(ctx, args[1:], stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "dev":
		return cmdDev(ctx, args[1:], stdout, stderr)
	case "keys":
		return cmdKeys(ctx, args[1:], stdout, stderr)
	case "installs":
		return cmdInstalls(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "slackask: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// buildVersion is the module version the binary was built from (go install
// …@v1.2.3 records it), or "devel" when the build info has none.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// commandHelp is the --help text of the commands that take no flags of
// their own (ask and manifest describe their flags themselves).
func commandHelp() map[string]string {
	return map[string]string{
		"serve": `usage: slackask serve

Runs the service: the Slack bot (Socket Mode, or HTTP mode's /slack/… routes)
and the HTTP API (with /mcp).

Environment:
` + envHelp([][3]string{
			{"SLACK_BOT_TOKEN", "", "bot token, xoxb-… (required)"},
			{"SLACK_APP_TOKEN", "", "app-level token, xapp-… with connections:write (required in Socket Mode)"},
			{"SLACKASK_SLACK_MODE", config.DefaultSlackMode, "socket (Socket Mode) or http (Slack POSTs to /slack/events and /slack/interactivity)"},
			{"SLACK_SIGNING_SECRET", "", "the app's signing secret: every HTTP mode request is verified with it (required in HTTP mode)"},
			{"SLACK_API_URL", config.DefaultSlackAPIURL, "Slack Web API base URL"},
			{"SLACKASK_CHANNEL", "", "default channel id for asks"},
			{"SLACKASK_RESPONDERS", "", "default user/user-group ids allowed to answer, comma-separated"},
			{"SLACKASK_TIMEOUT", "", "default deadline per ask (Go duration); 0 or unset means none"},
			{"SLACKASK_HTTP_ADDR", config.DefaultHTTPAddr, "listen address of the HTTP API"},
			{"SLACKASK_API_TOKEN", "", "bearer token of the HTTP API; required off loopback"},
			{"SLACKASK_DATABASE", config.DefaultDatabase, "SQLite file or postgres:// URL"},
			{"SLACKASK_RETENTION", config.DefaultRetention.String(), "how long ended asks are kept; 0 means forever"},
			{"SLACKASK_LOG_LEVEL", config.DefaultLogLevel, "trace, debug, info, warn, error, disabled"},
			{"SLACKASK_LOG_FORMAT", config.DefaultLogFormat, "json or console"},
			{"SLACKASK_DSH_URL", "", "dsh event mux URL; empty disables the dsh bridge"},
			{"SLACKASK_DSH_CHANNEL", "", "channel the dsh bridge asks in"},
			{"SLACKASK_SOCKET_CONNECTIONS", strconv.Itoa(config.DefaultSocketConnections), "Socket Mode connections of this process (1-10; Slack allows 10 per app)"},
			{"SLACKASK_CALLBACK_URL", "", "default callback URL: the ask resource is POSTed there when an ask ends"},
			{"SLACKASK_CALLBACK_SECRET", "", "key that signs callbacks (X-Slackask-Signature)"},
			{"SLACKASK_CALLBACK_ALLOW_PRIVATE", "false", "let callbacks reach loopback, link-local, private and metadata addresses"},
			{"SLACK_CLIENT_ID", "", "the app's client id: with SLACK_CLIENT_SECRET, turns on OAuth installs (/slack/install)"},
			{"SLACK_CLIENT_SECRET", "", "the app's client secret (OAuth installs)"},
			{"SLACKASK_ENCRYPTION_KEY", "", "32 random bytes, base64: seals installations' tokens at rest (required with OAuth)"},
			{"SLACKASK_ENCRYPTION_KEY_PREVIOUS", "", "the previous key, during a key rotation (see slackask installs rekey)"},
			{"SLACKASK_PUBLIC_URL", "", "slackask's public URL; its /slack/oauth_redirect is the OAuth redirect URL (required with OAuth)"},
			{"SLACK_AUTHORIZE_URL", config.DefaultSlackAuthorizeURL, "Slack's OAuth authorize page"},
			{"SLACKASK_OAUTH_PKCE", "false", "add PKCE (S256) to installs; only for an app whose PKCE setting is on"},
		}),
		"mcp": `usage: slackask mcp

Serves the ask_user_question and get_answer MCP tools on stdin/stdout, for an
MCP host that starts it as a subprocess. Every ask goes to the slackask serve
(or dev) at SLACKASK_URL.

Environment:
` + envHelp([][3]string{
			{"SLACKASK_URL", config.DefaultURL, "where the service listens"},
			{"SLACKASK_API_TOKEN", "", "its bearer token, if it has one"},
			{"SLACKASK_LOG_LEVEL", config.DefaultLogLevel, "log level (logs go to stderr)"},
			{"SLACKASK_LOG_FORMAT", config.DefaultLogFormat, "json or console"},
		}),
		"dev": `usage: slackask dev [--mode socket|http] [--oauth]

Runs slackask against a local Slack emulator with a web page, to try it
without a Slack workspace. It reads serve's environment; the tokens and the
channel are the emulator's. --mode http has the emulator reach slackask as
Slack's HTTP mode does: signed POSTs to /slack/interactivity and /slack/events.
--oauth (HTTP mode) starts with no bot token: open /slack/install, the
emulator's authorize page approves at once, and the installation is stored
sealed, as a workspace installing the app would.

Environment (besides serve's):
` + envHelp([][3]string{
			{"SLACKASK_DEV_ADDR", config.DefaultDevAddr, "listen address of the emulator's web page"},
			{"SLACKASK_HTTP_ADDR", config.DefaultHTTPAddr, "listen address of the HTTP API (the banner prints the SLACKASK_URL to use)"},
			{"SLACKASK_DATABASE", devDatabase, "database of the dev run"},
		}),
		"version": "usage: slackask version\n\nPrints the version slackask was built from.\n",
		"help":    usage,
	}
}

// envHelp formats variables as "  NAME  what (default D)", the
// descriptions aligned after the longest name.
func envHelp(vars [][3]string) string {
	width := 0
	for _, v := range vars {
		width = max(width, len(v[0]))
	}
	var out string
	for _, v := range vars {
		def := ""
		if v[1] != "" {
			def = " (default " + v[1] + ")"
		}
		out += fmt.Sprintf("  %-*s  %s%s\n", width, v[0], v[2], def)
	}
	return out
}

// parseFlags parses a command's flags the same way for every command: on
// --help it prints fs.Usage to stdout and returns flag.ErrHelp; a bad flag
// or a stray argument is returned for flagFailed to report, without the
// usage that flag would print (it would bury the error).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	case err != nil:
		return err
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// clientConfig loads the configuration of a command that talks to the
// service (SLACKASK_URL, SLACKASK_API_TOKEN); a bad one is reported on
// stderr as command's and ok is false (exit 2).
func clientConfig(command string, stderr io.Writer) (cfg config.Config, ok bool) {
	cfg, err := config.Load()
	if err == nil {
		err = cfg.ValidateClient()
	}
	if err != nil {
		fmt.Fprintf(stderr, "slackask %s: %v\n", command, err)
		return cfg, false
	}
	return cfg, true
}

// flagFailed reports err of command's flags as one line and where help is,
// and returns the exit code: 0 after --help, else 2.
func flagFailed(stderr io.Writer, command string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "slackask %s: %v\nsee slackask %s --help\n", command, err, command)
	return 2
}

// printFlags writes fs's flags as "  --name VALUE  usage (default D)",
// aligned, GNU style like the rest of the help.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if name != "" {
			left += " " + name
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && d != "[]" {
			usage += " (default " + d + ")"
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.usage)
	}
}
