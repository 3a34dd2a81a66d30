package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"
)

// callback is the part of an interactive payload the bot reads, decoded
// straight from the frame: decoding the whole payload into
// slack.InteractionCallback would also build the message and the view it
// came from, block by block through slack-go's per-type unmarshallers,
// which the bot never reads (BenchmarkDecodePayload compares the two).
// Field names follow slack-go's where the bot reads the same thing.
type callback struct {
	Type slack.InteractionType `json:"type"`
	User struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		TeamID string `json:"team_id"`
	} `json:"user"`
	Team struct {
		ID string `json:"id"`
	} `json:"team"`
	// Enterprise is the Grid organization (absent outside Grid), and
	// IsEnterpriseInstall marks a payload of an org-wide install, which
	// is routed by Enterprise (its team may be absent).
	Enterprise struct {
		ID string `json:"id"`
	} `json:"enterprise"`
	IsEnterpriseInstall bool             `json:"is_enterprise_install"`
	APIAppID            string           `json:"api_app_id"`
	Container           slack.Container  `json:"container"`
	TriggerID           string           `json:"trigger_id"`
	Actions             []*payloadAction `json:"actions"`
	// State is a block_actions payload's state of the whole message, kept
	// raw: only a Submit reads it (blockState), and most payloads are a
	// select changing.
	State json.RawMessage `json:"state"`
	View  struct {
		ID              string           `json:"id"`
		CallbackID      string           `json:"callback_id"`
		PrivateMetadata string           `json:"private_metadata"`
		State           *slack.ViewState `json:"state"`
	} `json:"view"`

	// blockActions are the actions with a block_id, set by decodeEnvelope.
	blockActions []*slack.BlockAction
}

// payloadAction is one of a payload's actions; BlockID, shallower than the
// embedded action's, tells a block action (which has one) from others.
type payloadAction struct {
	slack.BlockAction
	BlockID *string `json:"block_id"`
}

// decodeEnvelope reads a Socket Mode frame in one pass: the envelope's
// type and, for an interactive one, its payload as the callback the
// routing works on. It returns an error when the frame is not a JSON
// object of that shape (the type is still set when it could be read).
func decodeEnvelope(frame []byte) (typ string, cb *callback, err error) {
	var env struct {
		Type    string   `json:"type"`
		Payload callback `json:"payload"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		return env.Type, &callback{}, fmt.Errorf("decode envelope: %w", err)
	}
	cb = &env.Payload
	cb.collectBlockActions()
	return env.Type, cb, nil
}

// decodeCallback decodes an interactive payload as HTTP mode receives it
// (the form field payload), as decodeEnvelope decodes one in an envelope.
func decodeCallback(raw []byte) (*callback, error) {
	var cb callback
	if err := json.Unmarshal(raw, &cb); err != nil {
		return &callback{}, fmt.Errorf("decode payload: %w", err)
	}
	cb.collectBlockActions()
	return &cb, nil
}

// collectBlockActions sets blockActions: as slack-go, an action with a
// block_id is a block action; the others are attachment actions, which
// the bot never sends.
func (cb *callback) collectBlockActions() {
	for _, a := range cb.Actions {
		if a != nil && a.BlockID != nil {
			a.BlockAction.BlockID = *a.BlockID
			cb.blockActions = append(cb.blockActions, &a.BlockAction)
		}
	}
}

// blockState decodes the state of a block_actions payload: nil for other
// payloads and for one without a state, an error when it does not decode
// as slack.BlockActionStates.
func (cb *callback) blockState() (*slack.BlockActionStates, error) {
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.State) == 0 || string(cb.State) == "null" {
		return nil, nil
	}
	var st slack.BlockActionStates
	if err := json.Unmarshal(cb.State, &st); err != nil {
		return nil, fmt.Errorf("block_actions state: %w", err)
	}
	return &st, nil
}

// The payload types whose ack waits for the decode (or, for
// block_actions, the Journal): a view_submission's ack may carry
// validation errors, and both it and block_actions may ask for a change,
// acked only once stored or journaled. Each is spelled with its closing
// quote, for hasString.
var (
	viewSubmissionTail = []byte(`view_submission"`)
	blockActionsTail   = []byte(`block_actions"`)
)

// hasString reports whether frame holds a word between raw quotes (tail
// is the word and its closing quote), as bytes.Contains(frame, `"`+tail)
// does. It looks for tail, then checks the byte before it: a pattern
// that begins with a quote, which JSON is full of, sends bytes.Index to
// its brute-force search over the whole frame.
func hasString(frame, tail []byte) bool {
	for i := 0; ; {
		j := bytes.Index(frame[i:], tail)
		if j < 0 {
			return false
		}
		if k := i + j; k > 0 && frame[k-1] == '"' {
			return true
		}
		i += j + 1
	}
}

// hasUnicodeEscape reports whether frame holds the bytes \u, as
// bytes.Contains(frame, `\u`) does, by the backslashes alone.
func hasUnicodeEscape(frame []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(frame[i:], '\\')
		if j < 0 {
			return false
		}
		k := i + j
		if k+1 < len(frame) && frame[k+1] == 'u' {
			return true
		}
		i = k + 1
	}
}

// ackAfterDecode reports whether an envelope could be a view_submission
// or block_actions. A raw quote in JSON always delimits a string, so
// without \u escapes the bytes "view_submission" with their quotes occur
// exactly where a whole string (key or value) is view_submission (and so
// for block_actions); an envelope without them (view_closed, events,
// shortcuts) is acked at once, before its payload is decoded. A false
// positive (a label reading view_submission, any \u escape) only takes
// the slower path.
func ackAfterDecode(frame []byte) bool {
	return hasString(frame, viewSubmissionTail) || hasString(frame, blockActionsTail) || hasUnicodeEscape(frame)
}

// journaled reports whether an envelope goes to the Journal and is acked
// at once: a block_actions one, never a view_submission (its ack may
// carry errors). The bytes "block_actions" with their quotes must be
// there and "view_submission" must not (see ackAfterDecode); a frame with
// \u escapes, which could spell either, has its payload's type decoded.
// A false positive other than a view_submission (a label reading
// block_actions) only journals an envelope acked at once anyway.
func journaled(frame []byte) bool {
	if !hasString(frame, blockActionsTail) || hasString(frame, viewSubmissionTail) {
		return false
	}
	if !hasUnicodeEscape(frame) {
		return true
	}
	var env struct {
		Payload struct {
			Type string `json:"type"`
		} `json:"payload"`
	}
	return json.Unmarshal(frame, &env) == nil && env.Payload.Type == string(slack.InteractionTypeBlockActions)
}

// envelopeID returns the envelope_id of a Socket Mode frame, or "" when
// the frame has none (hello, disconnect) or is not a JSON object. Slack
// sends envelope_id first, so this reads a few dozen bytes, not the payload.
func envelopeID(frame []byte) string {
	if id, ok := leadingEnvelopeID(frame); ok {
		return id
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		// encoding/json (and so slack-go) matches keys case-insensitively.
		if k, _ := key.(string); strings.EqualFold(k, "envelope_id") {
			var id string
			if dec.Decode(&id) != nil {
				return ""
			}
			return id
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// envelopeIDPrefix is how Slack's (and the fake's) envelopes start.
var envelopeIDPrefix = []byte(`{"envelope_id":"`)

// leadingEnvelopeID reads the envelope_id of a frame that starts with it,
// as Slack's do, without a JSON decoder: the id is the bytes up to the
// next quote when they are plain printable ASCII (no escape, no control
// character, nothing to replace). ok is false for any other frame, which
// envelopeID then decodes.
func leadingEnvelopeID(frame []byte) (id string, ok bool) {
	rest, found := bytes.CutPrefix(frame, envelopeIDPrefix)
	if !found {
		return "", false
	}
	for i, c := range rest {
		switch {
		case c == '"':
			return string(rest[:i]), true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return "", false
		}
	}
	return "", false
}
