package client_test

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"

	"github.com/slackask/slackask/client"
	"github.com/slackask/slackask/interaction"
)

// A receiver of slackask's callbacks: the README's Go snippet.
func ExampleVerifyCallback() {
	secret := []byte(os.Getenv("SLACKASK_CALLBACK_SECRET"))
	var seen sync.Map // ask ids already handled: a callback may come twice
	http.HandleFunc("POST /slackask", func(w http.ResponseWriter, r *http.Request) {
		body, err := client.VerifyCallback(secret, r)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ask interaction.Ask
		if err := json.Unmarshal(body, &ask); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if _, dup := seen.LoadOrStore(ask.ID, true); !dup {
			go handle(ask) // answer 2xx quickly; slow work elsewhere
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func handle(ask interaction.Ask) { _ = ask.Status }
