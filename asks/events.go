package asks

import (
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// The data of the events the lifecycle records (store.Event.Data), as
// README "Audit trail" lists them. Each is emitted in the store write that
// makes its change, behind the check that makes that change happen once,
// so a retried or raced write records nothing twice.

// postedData: where a message of the ask was posted.
type postedData struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// remindedData: the how-manieth reminder this is (from 1).
type remindedData struct {
	Reminder int `json:"reminder"`
}

// responseData: a person's answer (each submission of a team ask; the
// answer of a one-response ask).
type responseData struct {
	User   *interaction.User  `json:"user,omitempty"`
	Answer interaction.Answer `json:"answer"`
}

// endedData: how the ask ended, and who ended it (nobody for a deadline).
type endedData struct {
	Status interaction.Status `json:"status"`
	By     *interaction.User  `json:"by,omitempty"`
}

// escalatedData: the step that fired and the people it added.
type escalatedData struct {
	Step  int      `json:"step"`
	Added []string `json:"added"`
}

// handedOffData: who handed the ask to whom.
type handedOffData struct {
	From interaction.User `json:"from"`
	To   interaction.User `json:"to"`
}

// notifiedData: a person (or user group) told of the ask, and how:
// "mention" in its message, "thread" in a reply under it, "dm".
type notifiedData struct {
	User string `json:"user"`
	How  string `json:"how"`
}

// emitNotified records that each of ids was told of the ask, how.
func emitNotified(r *Record, ids []string, how string) {
	for _, id := range ids {
		if id != "" {
			r.Emit(store.EventNotified, nil, notifiedData{User: id, How: how})
		}
	}
}

// setPosted stores at as where the ask's main message is and, when
// that is news, records the posted event (and, for its first place, the
// people its message mentions).
func setPosted(r *Record, at Posted) {
	channel, ts := at.Channel, at.TS
	landed := at.Ref != "" || ts != ""
	news := landed && (r.TS != ts || r.Channel != channel)
	first := !r.Posted()
	r.Channel, r.TS, r.Ref = channel, ts, at.Ref
	if landed {
		leaveQueue(r) // posted: out of its post queue
	}
	if news {
		r.Emit(store.EventPosted, nil, postedData{Channel: channel, TS: ts})
		if first {
			emitNotified(r, r.Mention, "mention")
		}
	}
}

// emitResponse records user's answer.
func emitResponse(r *Record, user *interaction.User, ans interaction.Answer) {
	r.Emit(store.EventResponse, user, responseData{User: user, Answer: ans})
}
