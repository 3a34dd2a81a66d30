package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/slackask/slackask/bot"
)

func cmdManifest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "slackask", "the app's display name")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	b, err := bot.Manifest(*name)
	if err != nil {
		fmt.Fprintf(stderr, "slackask manifest: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}
