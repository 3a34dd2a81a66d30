package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/slackask/slackask/bot"
)

func cmdManifest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	name := fs.String("name", "slackask", "the `NAME` the app shows in Slack")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: slackask manifest [--name NAME]\n\n"+
			"Prints the Slack app manifest (JSON) to create the app from: Socket Mode,\n"+
			"interactivity and the bot scopes slackask needs.\n\nflags:\n")
		printFlags(fs.Output(), fs)
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "manifest", err)
	}
	b, err := bot.Manifest(*name)
	if err != nil {
		fmt.Fprintf(stderr, "slackask manifest: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}
