package mcp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slackask/slackask/interaction"
)

// maxSummaryText bounds the free text quoted per answer in a team summary:
// the full text is in the answer's custom.
const maxSummaryText = 200

// teamSummary says, for an ask that collected several people's responses,
// how the team's answer came about: how many responded, who answered what
// (in order of submission), and whether a veto or the deadline ended it.
// It is "" for an ask that collects one response, whose answer is the one
// person's.
func teamSummary(ask interaction.Ask) string {
	wanted := max(ask.Wanted, 1)
	if wanted < 2 && len(ask.Responses) < 2 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Team answer from %d of %d wanted responses: for each question the answer above holds the label(s) most people chose (every tied label on a tie), or, where nobody chose a label, the typed text as one line per person.\n",
		len(ask.Responses), wanted)
	b.WriteString("Who answered what:")
	for _, r := range ask.Responses {
		b.WriteString("\n- " + userName(r.User) + ": " + describeResponse(ask.Questions, r.Answer))
	}
	if len(ask.Responses) == 0 {
		b.WriteString(" nobody.")
	}
	vetoed := false
	if by := ask.AnsweredBy; by != nil {
		for _, r := range ask.Responses {
			if r.User.ID != by.ID {
				continue
			}
			if q, label, ok := interaction.Vetoed(ask.Request(), r.Answer); ok {
				vetoed = true
				fmt.Fprintf(&b, "\n%s vetoed (%s: %s): the answer above is their response alone.", userName(*by), q, label)
			}
			break
		}
	}
	// An answered team ask short of its count without a veto was ended by
	// its deadline (onTimeout "answer"): only the caller, the deadline or
	// a veto end one early.
	if !vetoed && ask.Status == interaction.StatusAnswered && len(ask.Responses) < wanted {
		b.WriteString("\nThe deadline passed before everyone answered: the answer is made of the responses that came in.")
	}
	return b.String()
}

func userName(u interaction.User) string {
	if u.Name != "" {
		return u.Name
	}
	return u.ID
}

// describeResponse words one person's answer as "id: label, label; id:
// label (why: "note"); id: "text"; id: skipped", in the order of the
// questions.
func describeResponse(qs []interaction.Question, a interaction.Answer) string {
	byID := make(map[string]interaction.AnswerItem, len(a.Answers))
	for _, it := range a.Answers {
		byID[it.ID] = it
	}
	parts := make([]string, 0, len(qs))
	for _, q := range qs {
		it := byID[q.ID]
		var v string
		switch {
		case len(it.Selected) > 0:
			v = strings.Join(it.Selected, ", ")
			if it.Note != "" {
				v += " (why: " + strconv.Quote(clip(it.Note, maxSummaryText)) + ")"
			}
		case it.Custom != "":
			v = strconv.Quote(clip(it.Custom, maxSummaryText))
		default:
			v = "skipped"
		}
		parts = append(parts, q.ID+": "+v)
	}
	return strings.Join(parts, "; ")
}
