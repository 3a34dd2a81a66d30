package client

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slackask/slackask/webhook"
)

// VerifyCallback reads the body of a callback request that slackask sent
// and checks its signature with secret (the server's
// SLACKASK_CALLBACK_SECRET), allowing webhook.DefaultTolerance between the
// request's timestamp and this host's clock. It returns the body, the ask
// resource as JSON (or, for an ask's callbackEvents, the event: a body
// with a "seq"), only when the signature holds. A refusal has code
// UNAUTHORIZED and wraps one of webhook's Err… reasons (answer 401); a body
// over webhook.MaxBodyBytes is refused as ErrMalformed after reading that
// much; a failed read is returned as it is. The ask id in the
// body (an event's seq) is the key to deduplicate on: a callback may come
// more than once.
func VerifyCallback(secret []byte, r *http.Request) ([]byte, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, webhook.MaxBodyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("client: verify callback: read body: %w", err)
		}
	}
	if len(body) > webhook.MaxBodyBytes {
		return nil, fmt.Errorf("client: verify callback: %w: body over %d bytes", webhook.ErrMalformed, webhook.MaxBodyBytes)
	}
	if err := webhook.Verify(secret, r.Header, body, time.Now(), 0); err != nil {
		return nil, fmt.Errorf("client: verify callback: %w", err)
	}
	return body, nil
}
