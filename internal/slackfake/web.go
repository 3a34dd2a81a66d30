package slackfake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slackask/slackask/internal/slacksign"
)

// webTarget is where the fake POSTs in HTTP mode.
type webTarget struct {
	interactivity, events string
}

// webClient makes the fake's HTTP mode requests, each on a connection of
// its own (no idle connection outlives a test). Config.AckTimeout bounds
// each one, as Slack gives an interactive request 3 s.
var webClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// UseHTTP switches the fake to Slack's HTTP mode: Deliver (and every
// Person act) POSTs each interactive payload, form-encoded and signed with
// Config.SigningSecret, to interactivityURL, and takes a 200 answered
// within Config.AckTimeout as its ack (its JSON body as the ack's
// payload); any other answer, or none in time, is an interaction that
// failed in front of the person. Events (OpenHome, DeliverEvent) are
// POSTed as JSON to eventsURL. Empty URLs switch back to Socket Mode.
func (s *Server) UseHTTP(interactivityURL, eventsURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.web = webTarget{interactivity: interactivityURL, events: eventsURL}
}

// post sends p's payload, of envelope type typ, as HTTP mode does (an
// interactive payload form-encoded to the interactivity URL, an
// events_api one as JSON to the events URL), and takes a 200 as its ack.
// It runs on its own goroutine, so that a Deliver whose ctx ends first
// still records the outcome, as with a socket.
func (s *Server) post(web webTarget, typ string, p *pendingAck) {
	target, body, ctype := web.interactivity, []byte(url.Values{"payload": {string(p.payload)}}.Encode()), "application/x-www-form-urlencoded"
	if typ == "events_api" {
		target, body, ctype = web.events, p.payload, "application/json"
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		s.logf("http: %s request: %v", typ, err)
		return
	}
	req.Header.Set("Content-Type", ctype)
	s.sign(req.Header, body)
	s.mu.Lock()
	now := time.Now()
	p.sent, s.sock.sent = now, now
	s.mu.Unlock()
	resp, err := webClient.Do(req)
	if err != nil {
		s.logf("http: interactive request %s: %v", p.id, err)
		return // the deadline records the failure
	}
	defer resp.Body.Close()
	ack, _ := io.ReadAll(io.LimitReader(resp.Body, maxAckBytes+1))
	if resp.StatusCode != http.StatusOK {
		s.logf("http: interactive request %s answered %d", p.id, resp.StatusCode)
		return
	}
	if len(bytes.TrimSpace(ack)) == 0 {
		ack = nil
	} else if !json.Valid(ack) {
		s.logf("http: interactive request %s answered 200 with a body that is not JSON: taken as an empty ack", p.id)
		ack = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackLocked(p.id, ack, "http")
}

// sign sets Slack's signature headers for body, at the wall clock's time
// (the receiver checks it against its own, as with Slack).
func (s *Server) sign(h http.Header, body []byte) {
	slacksign.SetHeaders(h, []byte(s.cfg.SigningSecret), body, time.Now())
}

// DeliverEvent POSTs an Events API event_callback carrying event (the
// inner event object, e.g. {"type":"app_uninstalled"}) for team (and
// enterprise, for an org-wide install: then team may be empty) to the
// events URL of UseHTTP, signed, and returns the answer's status. Slack
// retries an event whose answer is not 2xx: so may the caller.
func (s *Server) DeliverEvent(ctx context.Context, team, enterprise string, event any) (int, error) {
	ev, err := json.Marshal(event)
	if err != nil {
		return 0, fmt.Errorf("slackfake: marshalling event: %w", err)
	}
	s.mu.Lock()
	web, app := s.web, s.cfg.AppID
	s.mu.Unlock()
	cb := map[string]any{
		"type": "event_callback", "team_id": team, "api_app_id": app, "event": json.RawMessage(ev),
		"event_id": "Ev" + newUUID()[:8], "event_time": s.cfg.Now().Unix(),
	}
	if enterprise != "" {
		cb["enterprise_id"], cb["is_enterprise_install"] = enterprise, team == ""
	}
	body, _ := json.Marshal(cb)
	return s.postEvent(ctx, web, body)
}

// VerifyEventsURL sends the url_verification Slack sends when an events
// URL is set, and reports whether the answer echoed the challenge.
func (s *Server) VerifyEventsURL(ctx context.Context) error {
	s.mu.Lock()
	web := s.web
	s.mu.Unlock()
	challenge := newUUID()
	body, _ := json.Marshal(map[string]string{"type": "url_verification", "token": "deprecated", "challenge": challenge})
	status, answer, err := s.postEventBody(ctx, web, body)
	if err != nil {
		return err
	}
	var got struct {
		Challenge string `json:"challenge"`
	}
	if status != http.StatusOK || (json.Unmarshal(answer, &got) != nil || got.Challenge != challenge) && string(bytes.TrimSpace(answer)) != challenge {
		return fmt.Errorf("slackfake: url_verification answered %d %.200s, without the challenge", status, answer)
	}
	return nil
}

func (s *Server) postEvent(ctx context.Context, web webTarget, body []byte) (int, error) {
	status, _, err := s.postEventBody(ctx, web, body)
	return status, err
}

func (s *Server) postEventBody(ctx context.Context, web webTarget, body []byte) (int, []byte, error) {
	if web.events == "" {
		return 0, nil, fmt.Errorf("slackfake: no events URL (UseHTTP)")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, web.events, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	s.sign(req.Header, body)
	resp, err := webClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("slackfake: events request: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, answer, nil
}
