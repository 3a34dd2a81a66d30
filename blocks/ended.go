package blocks

import (
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// endedBlocks renders an ended ask: no interactive element, each question
// with its answer, and how it ended.
func endedBlocks(v View) []slack.Block {
	b := []slack.Block{headBlock(v)}
	for i, q := range v.Request.Questions {
		if i > 0 {
			b = append(b, dividerBlock(v, i))
		}
		text, _ := questionText(q, maxSection, "")
		b = append(b, section(text, blockID(v, i, kindQuestion)))
		if a := answerText(v, i); a != "" {
			b = append(b, section(a, blockID(v, i, kindAnswer)))
		}
		if v.Team != nil {
			if t := tallyBlock(v, i); t != nil {
				b = append(b, t)
			}
		}
	}
	return append(b, outcomeBlock(v))
}

func section(text, id string) slack.Block {
	return slack.NewSectionBlock(mrkdwn(text), nil, nil, slack.SectionBlockOptionBlockID(id))
}

// answerText is the answer to question i of an answered ask, "" when there
// is none to show.
func answerText(v View, i int) string {
	item, ok := answerItem(v, i)
	if !ok {
		return ""
	}
	const room = maxSection - 20
	why := ""
	if n := strings.TrimSpace(item.Note); n != "" && len(item.Selected) > 0 {
		why = "\n*Why:* " + clipEscaped(n, room/3)
	}
	switch custom := strings.TrimSpace(item.Custom); {
	case custom != "":
		// "Other:" only where there were options to choose instead; text
		// of several lines (a team's, one per person) starts on a line of
		// its own, so that its lines align.
		if len(v.Request.Questions[i].Options) > 0 {
			custom = "Other: " + custom
		}
		sep := " "
		if strings.Contains(custom, "\n") {
			sep = "\n"
		}
		return "*Answer:*" + sep + clipEscaped(custom, room)
	case len(item.Selected) == 1:
		return "*Answer:* " + clipPlain(item.Selected[0], room-textLen(why)) + why
	case len(item.Selected) > 1:
		return "*Answers:*\n" + clipPlain("• "+strings.Join(item.Selected, "\n• "), room-textLen(why)) + why
	}
	return "*Answer:* _skipped_"
}

// answerItem finds the answer item of question i by id.
func answerItem(v View, i int) (interaction.AnswerItem, bool) {
	if v.Status != interaction.StatusAnswered || v.Answer == nil {
		return interaction.AnswerItem{}, false
	}
	id := v.Request.Questions[i].ID
	for _, a := range v.Answer.Answers {
		if a.ID == id {
			return a, true
		}
	}
	return interaction.AnswerItem{}, false
}

func outcomeBlock(v View) slack.Block {
	elems := []slack.MixedElement{mrkdwn(outcome(v, slackDate))}
	if t := teamOutcome(v); t != "" {
		elems = append(elems, mrkdwn(t))
	}
	if n := strings.TrimSpace(v.Note); n != "" {
		elems = append(elems, mrkdwn(clipEscaped(n, 1000)))
	}
	return slack.NewContextBlock(blockID(v, -1, kindOutcome), elems...)
}

// outcome says how the ask ended, dates rendered by date.
func outcome(v View, date func(time.Time) string) string {
	at := ""
	if !v.EndedAt.IsZero() {
		at = " at " + date(v.EndedAt)
	}
	by := ""
	if u := user(v.AnsweredBy); u != "" {
		by = " by " + u
	}
	switch v.Status {
	case interaction.StatusAnswered:
		if v.Team != nil && by == "" {
			return "Deadline reached: answered with the responses in" + at
		}
		if v.Team != nil && v.Answer != nil {
			if _, label, ok := interaction.Vetoed(v.Request, *v.Answer); ok {
				return "Vetoed (" + clipPlain(oneLine(label), maxOptionText) + ")" + by + at
			}
		}
		return "Answered" + by + at
	case interaction.StatusCancelled:
		return "Cancelled" + by + at
	case interaction.StatusAborted:
		return "Withdrawn by the caller" + at
	case interaction.StatusExpired:
		deadline := v.EndedAt
		if v.ExpiresAt != nil {
			deadline = *v.ExpiresAt
		}
		if v.Team != nil && len(v.Team.Answered) > 0 {
			return "Expired: not enough answers before " + date(deadline)
		}
		if deadline.IsZero() {
			return "Expired: nobody answered in time"
		}
		return "Expired: nobody answered before " + date(deadline)
	}
	if v.Error != nil {
		return "Ended (" + clipEscaped(string(v.Error.Code), 40) + ")" + at
	}
	return "Ended" + at
}

// user renders who answered: a mention for a user id, else the name or
// id as plain text.
func user(u *interaction.User) string {
	if u == nil {
		return ""
	}
	if slackid.IsUser(u.ID) {
		return "<@" + u.ID + ">"
	}
	if n := oneLine(u.Name); n != "" {
		return clipPlain(n, maxAgent)
	}
	return clipPlain(oneLine(u.ID), maxAgent)
}

func endedText(v View) string {
	return agentName(v.Request) + " asked: " + firstQuestion(v.Request) + " — " + outcome(v, plainDate)
}
