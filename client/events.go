package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slackask/slackask/store"
)

// Events returns the audit trail of ask id, in order (GET
// /v1/asks/{id}/events). Errors as Get's, wrapped with "ask events".
func (c *Client) Events(ctx context.Context, id string) ([]store.Event, error) {
	var out struct {
		Events []store.Event `json:"events"`
	}
	if err := c.do(ctx, "ask events", http.MethodGet, "/v1/asks/"+url.PathEscape(id)+"/events", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// Feed returns a page of the feed of every ask's events (GET /v1/events):
// the events with a seq above after, in order, at most limit (0: the
// server's default), and next, the after of the following page. With
// wait > 0, a page that would be empty waits up to wait (capped by the
// server) for the next event. Following the feed is calling Feed again
// with next: no event is missed. Errors wrapped with "events feed".
func (c *Client) Feed(ctx context.Context, after int64, limit int, wait time.Duration) (evs []store.Event, next int64, err error) {
	q := waitQuery(wait)
	if q == nil {
		q = url.Values{}
	}
	q.Set("after", strconv.FormatInt(after, 10))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Events []store.Event `json:"events"`
		Next   int64         `json:"next"`
	}
	if err := c.do(ctx, "events feed", http.MethodGet, "/v1/events", q, nil, &out); err != nil {
		return nil, after, err
	}
	return out.Events, out.Next, nil
}
