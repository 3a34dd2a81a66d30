package asks

import (
	"slices"

	"github.com/slackask/slackask/interaction"
)

// Many reports whether r collects several people's responses (responses
// > 1 or "all"): each person then answers for themselves, in a draft of
// their own, and the ask ends when enough responses are in, on a veto, by
// the caller or at the deadline.
func Many(r Record) bool { return r.Wanted > 1 || len(r.Awaited) > 0 }

// Missing returns who r still waits for: the awaited people ("all"), or
// the listed user responders, that have no response yet. It is nil for an
// ask that waits for any N people (see Needed), or that names a group
// (isGroup: Surface.IsGroup).
func Missing(r Record, isGroup func(id string) bool) []string {
	people := r.Awaited
	if len(people) == 0 {
		people = MayAnswerIDs(r)
		if slices.ContainsFunc(people, isGroup) || len(r.Responders) == 0 {
			return nil
		}
	}
	return Unanswered(r, people)
}

// Unanswered returns those of people who have no response in r, each
// once, in the order given.
func Unanswered(r Record, people []string) []string {
	seen := make(map[string]bool, len(r.Responses)+len(people))
	for _, x := range r.Responses {
		seen[x.User.ID] = true
	}
	var out []string
	for _, u := range people {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// Needed is how many more responses r waits for.
func Needed(r Record) int { return max(r.Wanted-len(r.Responses), 0) }

// setDraft records p as user's progress on question q of r.
func setDraft(r *Record, user string, q int, p interaction.Progress) {
	if r.Drafts == nil {
		r.Drafts = map[string][]interaction.Progress{}
	}
	r.Drafts[user] = setProgress(slices.Clone(r.Drafts[user]), len(r.Questions), q, p)
}

// unanswered returns the indexes of the required questions ps leaves
// without a selection or text.
func unanswered(qs []interaction.Question, ps []interaction.Progress) []int {
	var out []int
	for i, q := range qs {
		p := progressOf(ps, i)
		if q.Required && len(p.Selected) == 0 && p.Custom == "" {
			out = append(out, i)
		}
	}
	return out
}

// respond stores user's response to the pending team ask r, built from
// their progress ps (kept as their draft, so that they can change and
// submit again). A person who submits again replaces their response,
// which moves to the end: responses stay in the order of their latest
// submission. The ask ends when the response selects a veto option
// (answered with that response) or when it brings the count to what r
// wants (answered with the team's answer); else the message is re-rendered
// to show who has answered.
func (s *Service) respond(r *Record, user interaction.User, ps []interaction.Progress) {
	if r.Drafts == nil {
		r.Drafts = map[string][]interaction.Progress{}
	}
	r.Drafts[user.ID] = ps
	ans := interaction.AnswerFrom(r.Request(), ps)
	r.Responses = slices.DeleteFunc(r.Responses, func(x interaction.Response) bool { return x.User.ID == user.ID })
	r.Responses = append(r.Responses, interaction.Response{User: user, Answer: ans, At: s.now()})
	emitResponse(r, &user, ans)
	_, r.Tally = interaction.TeamAnswer(r.Request(), r.Responses)
	u := user
	if q, label, ok := interaction.Vetoed(r.Request(), ans); ok {
		// Said in the resource, so that a caller need not find the veto
		// among options[].veto and the responses.
		r.VetoedBy, r.VetoedWith = &u, &interaction.VetoChoice{Question: q, Label: label}
		s.endRecord(r, ending{status: interaction.StatusAnswered, by: &u, answer: &ans})
		return
	}
	switch {
	case len(r.Responses) >= r.Wanted:
		s.endRecord(r, ending{status: interaction.StatusAnswered, by: &u})
	default:
		r.Rev++
		r.Synced = false
	}
}
