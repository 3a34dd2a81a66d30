// Command floor is the lower bound of the ack-latency benchmark: a bare
// slack-go Socket Mode program that acks every envelope at once and does
// nothing else. The benchmark driver (go run ./bench) runs it against the
// Slack fake with SLACK_BOT_TOKEN, SLACK_APP_TOKEN and SLACK_API_URL set.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	api := slack.New(os.Getenv("SLACK_BOT_TOKEN"),
		slack.OptionAppLevelToken(os.Getenv("SLACK_APP_TOKEN")),
		slack.OptionAPIURL(os.Getenv("SLACK_API_URL")))
	sm := socketmode.New(api)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case evt := <-sm.Events:
				if evt.Request != nil && evt.Request.EnvelopeID != "" {
					if err := sm.Ack(*evt.Request); err != nil {
						fmt.Fprintf(os.Stderr, "floor: ack: %v\n", err)
					}
				}
			}
		}
	}()
	if err := sm.RunContext(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}
