package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/slackask/slackask/bot"
)

func cmdManifest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	name := fs.String("name", "slackask", "the `NAME` the app shows in Slack")
	mode := fs.String("mode", "socket", "how Slack reaches slackask, `MODE`: socket (Socket Mode) or http (Slack POSTs to --url)")
	base := fs.String("url", "", "with --mode http: slackask's public https `URL` (e.g. https://slackask.example.com)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: slackask manifest [--name NAME] [--mode http --url URL]\n\n"+
			"Prints the Slack app manifest (JSON) to create the app from: Socket Mode (or,\n"+
			"with --mode http, the request URLs of HTTP mode), interactivity and the bot\n"+
			"scopes slackask needs.\n\nflags:\n")
		printFlags(fs.Output(), fs)
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "manifest", err)
	}
	var (
		b   []byte
		err error
	)
	switch *mode {
	case "socket":
		if *base != "" {
			fmt.Fprintf(stderr, "slackask manifest: --url is for --mode http\n")
			return 2
		}
		b, err = bot.Manifest(*name)
	case "http":
		u, perr := url.Parse(*base)
		if perr != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			fmt.Fprintf(stderr, "slackask manifest: --mode http needs --url https://HOST[/PATH], the public URL Slack POSTs to (Slack requires https)\n")
			return 2
		}
		b, err = bot.HTTPManifest(*name, strings.TrimSuffix(u.String(), "/"))
	default:
		fmt.Fprintf(stderr, "slackask manifest: --mode must be socket or http, not %q\n", *mode)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "slackask manifest: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}
