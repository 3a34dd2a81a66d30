// Command wire is the environment's floor in the ack-latency benchmark:
// the least a Socket Mode client can do. It opens one connection
// (apps.connections.open through slack-go's Web API, then gorilla/websocket,
// as slack-go does), reads each frame, decodes its envelope_id and writes
// the ack; no payload decoding, no channels between goroutines, nothing
// else. Whatever latency it shows is the machine's and the load
// generator's, not a client's. The benchmark driver (go run ./bench) runs
// it against the Slack fake with SLACK_BOT_TOKEN, SLACK_APP_TOKEN and
// SLACK_API_URL set.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "wire: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	api := slack.New(os.Getenv("SLACK_BOT_TOKEN"),
		slack.OptionAppLevelToken(os.Getenv("SLACK_APP_TOKEN")),
		slack.OptionAPIURL(os.Getenv("SLACK_API_URL")))
	_, url, err := api.StartSocketModeContext(ctx)
	if err != nil {
		return fmt.Errorf("apps.connections.open: %w", err)
	}
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	stopClose := context.AfterFunc(ctx, func() { _ = ws.Close() })
	defer stopClose()
	for {
		_, frame, err := ws.ReadMessage()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(frame, &env) != nil || env.EnvelopeID == "" {
			continue // hello
		}
		ack, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, ack); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
}
