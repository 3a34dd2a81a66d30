package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/slackask/slackask/client"
	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// cmdEvents prints the feed of every ask's events (or one ask's) as JSON
// lines, oldest first; with --follow it polls for more until ctx ends
// (Ctrl-C), which is a normal end (exit 0). Following long-polls: a
// request that finds nothing new is held by the server up to feedWait for
// the next event, and requests are --every apart at least once caught up
// (a server that does not hold them is polled). While following, a server
// that cannot be reached is
// retried (said once on stderr) rather than ending the command: a log
// shipper outlives restarts.
func cmdEvents(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	after := fs.Int64("after", 0, "print only events with a seq above this one (resume after the last seq you kept)")
	follow := fs.Bool("follow", false, "keep printing new events as they come, until Ctrl-C")
	every := fs.Duration("every", 2*time.Second, "with --follow: the least time between two requests once caught up (the server holds an empty page up to 50s for the next event)")
	limit := fs.Int("limit", store.FeedMax, fmt.Sprintf("events per request (1 to %d)", store.FeedMax))
	ask := fs.String("ask", "", "print the events of this one ask instead (no --after, --follow)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: slackask events [--after SEQ] [--follow] [flags]\n"+
			"       slackask events --ask ID\n\n"+
			"Prints the audit trail of every ask at SLACKASK_URL (default %s), oldest first, one JSON\n"+
			"object a line: {\"seq\",\"askId\",\"at\",\"kind\",\"by\"?,\"data\"?} (README \"Audit trail\").\n"+
			"seq is one increasing sequence across all asks: keep the last one printed and resume with\n"+
			"--after SEQ to miss nothing. Exit codes: 0 done (or Ctrl-C with --follow), 1 error, 2 usage.\n\nflags:\n", config.DefaultURL)
		printFlags(fs.Output(), fs)
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "events", err)
	}
	switch {
	case *after < 0:
		return flagFailed(stderr, "events", errors.New("--after: want a seq, 0 or more"))
	case *limit < 1 || *limit > store.FeedMax:
		return flagFailed(stderr, "events", fmt.Errorf("--limit: want 1 to %d", store.FeedMax))
	case *every <= 0:
		return flagFailed(stderr, "events", errors.New("--every: want a positive duration"))
	case *ask != "" && (*after != 0 || *follow):
		return flagFailed(stderr, "events", errors.New("--ask prints one ask's events: it takes no --after or --follow"))
	}
	cfg, ok := clientConfig("events", stderr)
	if !ok {
		return 2
	}
	c := client.New(cfg.URL, cfg.APIToken, nil)
	enc := json.NewEncoder(stdout)
	emit := func(evs []store.Event) error {
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "slackask events: %s; is SLACKASK_URL right?\n", interaction.ErrorMessage(err))
		return 1
	}
	if *ask != "" {
		evs, err := c.Events(ctx, *ask)
		if err == nil {
			err = emit(evs)
		}
		if err != nil {
			return fail(err)
		}
		return 0
	}
	var wait time.Duration
	if *follow {
		wait = feedWait
	}
	cursor, down := *after, false
	for {
		start := time.Now()
		evs, next, err := c.Feed(ctx, cursor, *limit, wait)
		switch {
		case ctx.Err() != nil:
			return 0
		case err != nil && !*follow:
			return fail(err)
		case err != nil && !retryableFeed(err):
			return fail(err)
		case err != nil:
			if !down {
				fmt.Fprintf(stderr, "slackask events: %s; retrying every %s\n", interaction.ErrorMessage(err), *every)
				down = true
			}
		default:
			if down {
				fmt.Fprintln(stderr, "slackask events: reconnected")
				down = false
			}
			if err := emit(evs); err != nil {
				return fail(err)
			}
			cursor = next
			if len(evs) > 0 && (len(evs) == *limit || *follow) {
				continue // more may be waiting: no pause
			}
			if !*follow {
				return 0
			}
		}
		// Caught up (the server held the empty page up to wait), or
		// failed: the next request comes --every after this one began.
		if !clock.Sleep(ctx, *every-time.Since(start)) {
			return 0
		}
	}
}

// feedWait is how long a follower asks the server to hold an empty page:
// below the idle timeout of common proxies (60 s).
const feedWait = 50 * time.Second

// retryableFeed reports whether a failed feed request is worth repeating
// while following: the server unreachable or failing (5xx), not a refusal
// (a bad token, a service without an audit trail).
func retryableFeed(err error) bool {
	var re *client.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 500
	}
	return true
}
