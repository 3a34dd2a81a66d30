package interaction

import (
	"context"
	"time"
)

// Status is where an ask stands. Every status but pending is final.
type Status string

// The statuses of an ask.
const (
	StatusPending   Status = "pending"
	StatusAnswered  Status = "answered"
	StatusCancelled Status = "cancelled" // a person pressed Cancel
	StatusAborted   Status = "aborted"   // the caller withdrew
	StatusExpired   Status = "expired"   // the deadline passed
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusAnswered, StatusCancelled, StatusAborted, StatusExpired:
		return true
	}
	return false
}

// Ended reports whether s is final.
func (s Status) Ended() bool { return s != StatusPending }

// User is a Slack user who answered.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Ask is the resource of one ask, as the HTTP API serves it.
type Ask struct {
	ID         string     `json:"id"`
	Status     Status     `json:"status"`
	Questions  []Question `json:"questions"`
	Agent      *Agent     `json:"agent,omitempty"`
	Channel    string     `json:"channel,omitempty"`
	TS         string     `json:"ts,omitempty"`
	ThreadTS   string     `json:"threadTs,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	Answer     *Answer    `json:"answer,omitempty"`
	AnsweredBy *User      `json:"answeredBy,omitempty"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
	Error      *Error     `json:"error,omitempty"`
	// Permalink is a link to the ask's message, once known.
	Permalink string `json:"permalink,omitempty"`
	// Wanted is how many people's responses the ask collects (absent: 1).
	Wanted int `json:"responsesWanted,omitempty"`
	// OnTimeout is what the deadline does (absent: OnTimeoutExpire).
	OnTimeout OnTimeout `json:"onTimeout,omitempty"`
	// Responses are the submissions of the people who answered, in order
	// of submission; a person who submits again replaces their response.
	Responses []Response `json:"responses,omitempty"`
	// Tally counts, per question id, the people who picked each label.
	Tally map[string]map[string]int `json:"tally,omitempty"`
	// CallbackURL receives the ask resource when the ask ends.
	CallbackURL string `json:"callbackUrl,omitempty"`
	// CallbackEvents are the kinds of events the callback receives
	// (absent: DefaultCallbackEvents, the ask resource at its end).
	CallbackEvents []string `json:"callbackEvents,omitempty"`
	// Notify is how named responders learn of the ask (absent: mention).
	Notify Notify `json:"notify,omitempty"`
	// RemindEvery repeats the reminder (absent: one reminder at most).
	RemindEvery Duration `json:"remindEvery,omitempty"`
	// Escalation lists the ask's escalation steps, each with FiredAt once
	// it has fired.
	Escalation []EscalationStep `json:"escalation,omitempty"`
	// Handoffs lists who handed the ask to whom, in order.
	Handoffs []Handoff `json:"handoffs,omitempty"`
	// Posting is PostingQueued while the ask waits for its turn to be
	// posted (the conversation is rate-limited); absent otherwise.
	Posting string `json:"posting,omitempty"`
	// QueuePlace is the ask's place in that queue (1: posted next), as
	// of the read that returned it.
	QueuePlace int `json:"queuePlace,omitempty"`

	// Where and to whom the ask was put, as the request said (Responders
	// with the server's default when it named none), so that a caller can
	// read back who may answer.

	// User is the person a direct ask (a DM) went to.
	User string `json:"user,omitempty"`
	// Mention lists the user and user-group ids the message mentions.
	Mention []string `json:"mention,omitempty"`
	// Responders lists the user and user-group ids allowed to answer;
	// absent: anyone in the conversation.
	Responders []string `json:"responders,omitempty"`

	// VetoedBy is the person whose response ended the ask with a veto.
	VetoedBy *User `json:"vetoedBy,omitempty"`
	// VetoedWith is the veto option that response selected.
	VetoedWith *VetoChoice `json:"vetoedWith,omitempty"`
}

// VetoChoice names a veto option: its question's id and its label.
type VetoChoice struct {
	Question string `json:"question"`
	Label    string `json:"label"`
}

// PostingQueued is Ask.Posting of an ask waiting for its turn to be posted.
const PostingQueued = "queued"

// Response is one person's submission to an ask that collects several.
type Response struct {
	User   User      `json:"user"`
	Answer Answer    `json:"answer"`
	At     time.Time `json:"at"`
}

// Request returns the questions and agent of the ask.
func (a Ask) Request() Request { return Request{Questions: a.Questions, Agent: a.Agent} }

// Result returns the answer of an answered ask, or the *Error an ended ask
// carries (ASK_CANCELLED, ASK_ABORTED, ASK_TIMEOUT). For a pending ask it
// returns an ASK_ABORTED error: the caller stopped waiting.
func (a Ask) Result() (Answer, error) {
	switch {
	case a.Status == StatusAnswered && a.Answer != nil:
		return *a.Answer, nil
	case a.Error != nil:
		return Answer{}, a.Error
	case a.Status == StatusCancelled:
		return Answer{}, Errorf(AskCancelled, "a person cancelled the question")
	case a.Status == StatusExpired:
		return Answer{}, Errorf(AskTimeout, "nobody answered before the deadline")
	default:
		return Answer{}, Errorf(AskAborted, "the caller withdrew the question")
	}
}

// AskInput is everything a caller may say when asking: the seam's request
// plus where and to whom to put it. Its JSON is the body of POST /v1/asks.
type AskInput struct {
	Request
	// Channel is the conversation to post in; empty means the default.
	Channel string `json:"channel,omitempty"`
	// User, a user id, sends the ask as a DM instead.
	User string `json:"user,omitempty"`
	// ThreadTS posts the ask as a reply in that thread.
	ThreadTS string `json:"threadTs,omitempty"`
	// Workspace is the team (T…) or Enterprise Grid organization (E…) id
	// to ask in; empty means the caller's API key's, else the server's.
	Workspace string `json:"workspace,omitempty"`
	// Mention lists user or user-group ids to mention in the message.
	Mention []string `json:"mention,omitempty"`
	// Responders lists the user and user-group ids allowed to answer; empty
	// means the default.
	Responders []string `json:"responders,omitempty"`
	// Timeout is the deadline from now; zero means the default.
	Timeout Duration `json:"timeout,omitempty"`
	// RemindAfter sends a reminder in the thread if still unanswered
	// (repeated with RemindEvery).
	RemindAfter Duration `json:"remindAfter,omitempty"`
	// IdempotencyKey makes a retried create return the existing ask.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Responses is how many people's submissions the ask collects before
	// it ends: a count ≥ 1 or "all" (every allowed responder). Zero value:
	// 1, the first Submit ends the ask.
	Responses ResponseCount `json:"responses,omitzero"`
	// OnTimeout says what the deadline does; empty means OnTimeoutExpire.
	OnTimeout OnTimeout `json:"onTimeout,omitempty"`
	// CallbackURL, when set, receives the ask resource (POST, signed) when
	// the ask ends; empty means the server's default.
	CallbackURL string `json:"callbackUrl,omitempty"`
	// CallbackEvents chooses what the callback receives, by event kind
	// (EventKinds): "ended" is the ask resource when the ask ends, any
	// other kind the event itself (POST, signed, at least once, in seq
	// order). Empty means DefaultCallbackEvents.
	CallbackEvents []string `json:"callbackEvents,omitempty"`
	// Notify "dm" also sends every named responder the ask in a DM;
	// empty means NotifyMention.
	Notify Notify `json:"notify,omitempty"`
	// RemindEvery, with RemindAfter, repeats the reminder at this
	// interval (at least MinRemindEvery), at most MaxReminders in all.
	RemindEvery Duration `json:"remindEvery,omitempty"`
	// Escalation steps add and notify further responders while the ask
	// is pending.
	Escalation []EscalationStep `json:"escalation,omitempty"`
}

// ListFilter selects asks for a history listing.
type ListFilter struct {
	Status Status    // empty: every status
	Before time.Time // zero: no bound; else only asks created before it
	Limit  int       // <= 0: a default
}

// AskService is the durable ask service the front doors use. Methods are
// safe for concurrent use and return *Error values (possibly wrapped).
type AskService interface {
	// Create validates in, posts the ask and returns it pending. With an
	// IdempotencyKey already used it returns the existing ask unchanged.
	Create(ctx context.Context, in AskInput) (Ask, error)
	// Get returns the ask, or NOT_FOUND.
	Get(ctx context.Context, id string) (Ask, error)
	// Wait blocks until the ask has ended or ctx is done and returns the ask
	// as it then is; ctx ending is not an error. NOT_FOUND for unknown ids.
	Wait(ctx context.Context, id string) (Ask, error)
	// Withdraw ends a pending ask as aborted and returns it; an ended ask is
	// returned unchanged. NOT_FOUND for unknown ids.
	Withdraw(ctx context.Context, id string) (Ask, error)
	// List returns asks newest first.
	List(ctx context.Context, f ListFilter) ([]Ask, error)
}

// NoteWithdrawer is implemented by AskServices that can say why an ask
// was withdrawn, e.g. "answered elsewhere". The note is shown on the ended
// message. Errors as for Withdraw.
type NoteWithdrawer interface {
	WithdrawWithNote(ctx context.Context, id, note string) (Ask, error)
}

// WithdrawNoted withdraws ask id with note when svc can show one (it is a
// NoteWithdrawer and note is set), else plainly. Errors as for Withdraw.
func WithdrawNoted(ctx context.Context, svc AskService, id, note string) (Ask, error) {
	if nw, ok := svc.(NoteWithdrawer); ok && note != "" {
		return nw.WithdrawWithNote(ctx, id, note)
	}
	return svc.Withdraw(ctx, id)
}
