package dsh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// The reasons of {"accepted":false,"reason":…}.
const (
	reasonNotPending  = "not-pending"
	reasonBadResponse = "bad-response"
)

// reply is what the bridge tells the host about one question: an answer, or
// (answer nil) the error code "cancelled" with message.
type reply struct {
	answer  *interaction.Answer
	message string
}

// respondBody is the bare client-response of POST /api/respond.
type respondBody struct {
	Type   string        `json:"type"`
	RPCID  string        `json:"rpcId"`
	Result respondResult `json:"result"`
}

type respondResult struct {
	OK    bool          `json:"ok"`
	Value *respondValue `json:"value,omitempty"`
	Error *respondError `json:"error,omitempty"`
}

type respondValue struct {
	SessionID string             `json:"sessionId"`
	Answer    interaction.Answer `json:"answer"`
}

type respondError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// respondReply is the host's answer to POST /api/respond.
type respondReply struct {
	Accepted *bool  `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// body returns the JSON of r as the reply to question rpcID of sessionID.
func (r reply) body(rpcID, sessionID string) []byte {
	b := respondBody{Type: "client-response", RPCID: rpcID}
	if r.answer != nil {
		b.Result = respondResult{OK: true, Value: &respondValue{SessionID: sessionID, Answer: *r.answer}}
	} else {
		b.Result = respondResult{Error: &respondError{Code: "cancelled", Message: r.message, Details: map[string]any{}}}
	}
	return marshalJSON(b)
}

// marshalJSON is json.Marshal without HTML escaping (JSON.stringify does
// not escape "<", ">" or "&" either).
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("dsh: marshal: %v", err)) // plain structs of strings: cannot fail
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// replyFor is the reply for an ask that ended in Slack.
func replyFor(req interaction.Request, ask interaction.Ask) reply {
	errMsg := ""
	if ask.Error != nil {
		errMsg = ask.Error.Message
	}
	switch ask.Status {
	case interaction.StatusAnswered:
		if ask.Answer == nil {
			return reply{message: "the question was answered in Slack but slackask lost the answer"}
		}
		ans, err := fixAnswer(req, seamAnswer(req, ask))
		if err != nil {
			return reply{message: "the answer given in Slack does not fit the question (" + interaction.ErrorMessage(err) + ")"}
		}
		return reply{answer: &ans}
	case interaction.StatusCancelled:
		return reply{message: withDetail("a person cancelled the question in Slack", errMsg)}
	case interaction.StatusExpired:
		return reply{message: "the question timed out: nobody answered in Slack before the deadline"}
	case interaction.StatusAborted:
		return reply{message: withDetail("the question was withdrawn in slackask", errMsg)}
	default:
		return reply{message: fmt.Sprintf("the question ended in slackask with status %q", ask.Status)}
	}
}

// seamAnswer returns the answer of an ask in the seam's shape. A team
// ask's answer (several responses) may hold every tied label of a
// single-select question, which the seam cannot carry: such an item
// becomes custom text naming the tie and its votes, so that the agent
// learns of it instead of getting a cancellation. Other answers are
// returned as they are.
func seamAnswer(req interaction.Request, ask interaction.Ask) interaction.Answer {
	ans := *ask.Answer
	if ask.Wanted < 2 && len(ask.Responses) < 2 {
		return ans
	}
	single := make(map[string]bool, len(req.Questions))
	for i, q := range req.Questions {
		single[q.ID] = !interaction.Spec(req, i).Multi
	}
	out := interaction.Answer{Answers: make([]interaction.AnswerItem, len(ans.Answers))}
	for i, it := range ans.Answers {
		if single[it.ID] && len(it.Selected) > 1 && it.Custom == "" {
			tied := make([]string, len(it.Selected))
			for j, l := range it.Selected {
				tied[j] = fmt.Sprintf("%q (%d)", l, ask.Tally[it.ID][l])
			}
			it = interaction.AnswerItem{ID: it.ID, Selected: []string{}, Custom: "tie between " + strings.Join(tied, ", ")}
		}
		out.Answers[i] = it
	}
	return out
}

func withDetail(msg, detail string) string {
	if detail == "" {
		return msg
	}
	return msg + " (" + detail + ")"
}

// fixAnswer returns ans in the form the host accepts, or an INVALID_QUESTION
// error when it cannot be made so without guessing. It puts one item per
// question in question order (a missing item counts as skipped), drops
// repeated labels, lets custom text replace labels (the seam's rule) and
// treats blank custom text as none; then it checks the result with
// interaction.CheckAnswer (unknown labels, several labels for a
// single-select question and answers to unknown questions are not fixed).
// A valid answer is returned unchanged.
func fixAnswer(req interaction.Request, ans interaction.Answer) (interaction.Answer, error) {
	byID := make(map[string]interaction.AnswerItem, len(ans.Answers))
	for _, it := range ans.Answers {
		if prev, dup := byID[it.ID]; dup && !sameItem(prev, it) {
			return interaction.Answer{}, interaction.Errorf(interaction.InvalidQuestion, "two different answers to question %q", it.ID)
		}
		byID[it.ID] = it
	}
	out := interaction.Answer{Answers: make([]interaction.AnswerItem, 0, len(req.Questions))}
	for _, q := range req.Questions {
		it, ok := byID[q.ID]
		delete(byID, q.ID)
		item := interaction.AnswerItem{ID: q.ID, Selected: []string{}}
		if ok {
			if strings.TrimSpace(it.Custom) != "" {
				item.Custom = it.Custom
			} else {
				seen := map[string]bool{}
				for _, l := range it.Selected {
					if !seen[l] {
						seen[l] = true
						item.Selected = append(item.Selected, l)
					}
				}
			}
		}
		out.Answers = append(out.Answers, item)
	}
	for id := range byID {
		return interaction.Answer{}, interaction.Errorf(interaction.InvalidQuestion, "answer to unknown question %q", id)
	}
	if err := interaction.CheckAnswer(req, out); err != nil {
		return interaction.Answer{}, err
	}
	return out, nil
}

func sameItem(a, b interaction.AnswerItem) bool {
	if a.Custom != b.Custom || len(a.Selected) != len(b.Selected) {
		return false
	}
	for i := range a.Selected {
		if a.Selected[i] != b.Selected[i] {
			return false
		}
	}
	return true
}

// deliver posts r to the host and acts on its verdict: not-pending withdraws
// the ask ("answered elsewhere"); bad-response to an answer is followed by a
// cancel, so that the agent does not wait forever. Delivery that fails for
// good is logged; if the host still waits it replays the question on the
// next connect, and the bridge delivers again.
func (b *Bridge) deliver(ctx context.Context, q *question, askID string, r reply, log zerolog.Logger) {
	for {
		res, err := b.respond(ctx, r.body(q.rpcID, q.sessionID), log)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.Error().Err(err).Msg("dsh: could not reply to the host; the reply is sent again when the host replays the question")
			}
			return
		case *res.Accepted:
			ev := log.Info().Bool("answer", r.answer != nil)
			if r.answer == nil {
				ev = ev.Str("cancelled", r.message)
			}
			ev.Msg("dsh: the host accepted the reply")
			return
		case res.Reason == reasonNotPending:
			log.Info().Msg("dsh: the host no longer waits for the question")
			if askID != "" {
				b.withdraw(ctx, askID, NoteAnsweredElsewhere, log)
			}
			return
		case res.Reason == reasonBadResponse && r.answer != nil:
			log.Error().RawJSON("answer", mustJSON(r.answer)).Msg("dsh: the host refused the answer as bad-response; replying cancelled instead")
			r = reply{message: "slackask could not deliver the answer given in Slack: the host refused it"}
		default:
			log.Error().Str("reason", res.Reason).Msg("dsh: the host refused the reply")
			return
		}
	}
}

// respond posts body to /api/respond, retrying network errors, 429 and 5xx
// answers up to RespondAttempts times; it never retries a verdict.
func (b *Bridge) respond(ctx context.Context, body []byte, log zerolog.Logger) (respondReply, error) {
	var (
		res  respondReply
		last int
	)
	r := backoff.Retry{Pause: b.retryBackoff(), Tries: b.cfg.RespondAttempts, OnRetry: func(attempt int, err error, wait time.Duration) {
		log.Warn().Err(err).Int("attempt", attempt).Dur("retryIn", wait).Msg("dsh: POST /api/respond failed; retrying")
	}}
	err := r.Do(ctx, func(attempt int) error {
		last = attempt
		var (
			retry bool
			err   error
		)
		res, retry, err = b.postRespond(ctx, body)
		if err != nil && (!retry || ctx.Err() != nil) {
			return backoff.Stop(err)
		}
		return err
	})
	switch {
	case errors.Is(err, backoff.ErrInterrupted):
		return respondReply{}, ctx.Err()
	case err != nil:
		return respondReply{}, fmt.Errorf("POST /api/respond (attempt %d): %w", last, err)
	}
	return res, nil
}

// postRespond makes one attempt; retry says whether another may help.
func (b *Bridge) postRespond(ctx context.Context, body []byte) (res respondReply, retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, b.base+"/api/respond", bytes.NewReader(body))
	if err != nil {
		return res, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return res, true, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return res, true, err
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return res, true, fmt.Errorf("HTTP %s", resp.Status)
	}
	if jerr := json.Unmarshal(raw, &res); jerr != nil || res.Accepted == nil {
		return res, false, fmt.Errorf("HTTP %s: unexpected answer %q", resp.Status, truncate(raw, 200))
	}
	if *res.Accepted {
		res.Reason = ""
	}
	return res, false, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`null`)
	}
	return b
}
