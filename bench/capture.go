package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/slackask/slackask/internal/slackfake"
)

// capturePayloads has the fake's scripted people act on the messages,
// exactly as in selectAction, with the benchmark itself connected as the
// only Socket Mode client, and keeps the n payloads the fake built. The
// ack loads replay them with Deliver: building a payload (a person's
// client state, the whole message, JSON) costs the fake far more CPU than
// sending it, and on a small machine that CPU is taken from the target.
func capturePayloads(ctx context.Context, fake *slackfake.Server, msgs []msgRef, n int) ([]json.RawMessage, error) {
	if fake.Connections() != 0 {
		return nil, errors.New("capture: another Socket Mode client is connected")
	}
	url, err := socketURL(ctx, fake)
	if err != nil {
		return nil, err
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("capture: dial: %w", err)
	}
	var (
		mu       sync.Mutex
		payloads []json.RawMessage
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var env struct {
				EnvelopeID string          `json:"envelope_id"`
				Payload    json.RawMessage `json:"payload"`
			}
			if json.Unmarshal(data, &env) != nil || env.EnvelopeID == "" {
				continue // hello
			}
			mu.Lock()
			payloads = append(payloads, env.Payload)
			mu.Unlock()
			if err := ws.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID}); err != nil {
				return
			}
		}
	}()
	defer func() {
		_ = ws.Close()
		<-readDone
		_ = waitConnections(context.Background(), fake, 0, 10*time.Second)
	}()
	if err := waitConnections(ctx, fake, 1, 10*time.Second); err != nil {
		return nil, err
	}
	for i := range n {
		if err := selectAction(fake, msgs, i)(ctx); err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(payloads) != n {
		return nil, fmt.Errorf("capture: %d payloads for %d actions", len(payloads), n)
	}
	return payloads, nil
}

// socketURL calls apps.connections.open on the fake.
func socketURL(ctx context.Context, fake *slackfake.Server) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", fake.APIURL()+"apps.connections.open", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+appToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		OK    bool   `json:"ok"`
		URL   string `json:"url"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if !out.OK {
		return "", fmt.Errorf("apps.connections.open: %s", out.Error)
	}
	return out.URL, nil
}

// replay delivers the i-th captured payload (round robin).
func replay(fake *slackfake.Server, payloads []json.RawMessage) func(i int) func(context.Context) error {
	return func(i int) func(context.Context) error {
		p := payloads[i%len(payloads)]
		return func(ctx context.Context) error {
			_, err := fake.Deliver(ctx, p)
			return err
		}
	}
}
