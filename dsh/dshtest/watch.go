package dshtest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// QuestionWatch is a second, passive mux client of a host that
// timestamps the question/requested frames it sees.
type QuestionWatch struct {
	mu    sync.Mutex
	times map[string]time.Time
	order []string
}

// WatchQuestions connects a QuestionWatch to the host at base (retrying
// for up to 30 s while the host starts); it closes when the test ends.
func WatchQuestions(t testing.TB, base string) *QuestionWatch {
	w := &QuestionWatch{times: map[string]time.Time{}}
	var c *websocket.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, _, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/events.mux", nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, raw, err := c.ReadMessage()
			if err != nil {
				return
			}
			now := time.Now()
			var f struct {
				RPCID  string `json:"rpcId"`
				Method string `json:"method"`
			}
			if json.Unmarshal(raw, &f) == nil && f.Method == "question/requested" {
				w.mu.Lock()
				if _, ok := w.times[f.RPCID]; !ok {
					w.times[f.RPCID] = now
					w.order = append(w.order, f.RPCID)
				}
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = c.Close(); <-done })
	return w
}

// At returns when the question with rpc id rpc was first seen.
func (w *QuestionWatch) At(rpc string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.times[rpc]
	return at, ok
}

// Newest returns the rpc id of the latest question seen, or "".
func (w *QuestionWatch) Newest() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return ""
	}
	return w.order[len(w.order)-1]
}
