package blocks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// View is everything the renderer needs about an ask.
type View struct {
	AskID      string                 // short, [A-Za-z0-9_-], ≤ 40 bytes
	Rev        int                    // revision: bumped by the bot on every update; part of every block_id so an updated block gets a new id and clients reset its state to the initial options
	Request    interaction.Request    // the questions, as validated by interaction.Validate and slackid.CheckRequest
	Status     interaction.Status     // "" counts as pending
	Progress   []interaction.Progress // per question index (may be shorter/nil)
	Responders []string               // user ids U…/W… and group ids S… allowed to answer; empty = anyone
	Mention    []string               // ids to mention at the top (only ids that look like Slack ids U…/W…/S…: render <@U…> / <!subteam^S…>)
	Answer     *interaction.Answer    // the answer of an answered ask
	AnsweredBy *interaction.User      // who answered (or, for a cancelled ask, who cancelled)
	EndedAt    time.Time              // when the ask ended
	ExpiresAt  *time.Time             // the deadline, if any
	Error      *interaction.Error     // why it ended when not answered
	Note       string                 // optional extra line for ended asks, e.g. "answered elsewhere" (escaped)
	// Team is set for an ask that collects several people's responses:
	// the message then shows who has answered (never what, and never
	// Progress), has no Cancel, and once ended shows the tally.
	Team *Team
	// HandOff adds a "Hand off…" button to the bottom bar (an ask that
	// names who may answer).
	HandOff bool
}

// Block counts Slack allows, which Message and the modals stay within.
const (
	MaxMessageBlocks = 50  // blocks per message
	MaxModalBlocks   = 100 // blocks per modal
)

// Lengths the renderer works with, in UTF-16 units.
const (
	maxSection      = 3000 // section text
	maxOptionText   = 75   // option text and description, button text
	maxListed       = 1500 // mentions / responders lists
	maxProgressText = 500  // the "Other: …" line under a question
	maxAgent        = 200  // agent name or id
)

// Message renders v as one message for chat.postMessage / chat.update: the
// fallback text (a readable notification, ≤ 3000 characters) and the blocks.
// A pending ask gets its controls; an ended ask (any Status but pending and
// "") gets none, only the questions, answers and outcome. The result stays
// within Slack's limits for every request interaction.Validate and
// slackid.CheckRequest accept and any View fields, provided AskID is as
// documented.
func Message(v View) (text string, blocks []slack.Block) {
	if ended(v) {
		return endedText(v), endedBlocks(v)
	}
	return pendingText(v), pendingBlocks(v)
}

func ended(v View) bool {
	return v.Status != "" && v.Status != interaction.StatusPending
}

func pendingBlocks(v View) []slack.Block {
	b := []slack.Block{headBlock(v), whoBlock(v)}
	for i := range v.Request.Questions {
		if i > 0 {
			b = append(b, dividerBlock(v, i))
		}
		b = append(b, questionBlocks(v, i)...)
	}
	if v.Team != nil {
		b = append(b, teamBlock(v))
	}
	if bottom := bottomBlock(v); bottom != nil {
		b = append(b, bottom)
	}
	return b
}

// agentName is the name, as plain text in mrkdwn, of the agent: "Name (id)", the one that is
// set, or "An agent".
func agentName(r interaction.Request) string {
	if r.Agent == nil {
		return "An agent"
	}
	name, id := oneLine(r.Agent.Name), oneLine(r.Agent.ID)
	switch {
	case name != "" && id != "" && name != id:
		return clipPlain(name, maxAgent) + " (" + clipPlain(id, maxAgent) + ")"
	case name != "":
		return clipPlain(name, maxAgent)
	case id != "":
		return clipPlain(id, maxAgent)
	}
	return "An agent"
}

// mentions renders the ids of v.Mention that look like Slack ids, once each.
func mentions(ids []string, max int) string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if m, ok := mention(id); ok && !seen[id] {
			seen[id] = true
			out = append(out, m)
		}
	}
	return joinCapped(out, " ", max)
}

func headBlock(v View) slack.Block {
	n := len(v.Request.Questions)
	what := "has a question:"
	if n > 1 {
		what = fmt.Sprintf("has %d questions:", n)
	}
	if ended(v) {
		what = "asked:"
	}
	text := "*" + agentName(v.Request) + "* " + what
	if m := mentions(v.Mention, maxListed); m != "" && !ended(v) {
		text = m + "\n" + text
	}
	return slack.NewSectionBlock(mrkdwn(text), nil, nil, slack.SectionBlockOptionBlockID(blockID(v, -1, kindHead)))
}

// whoBlock says who may answer and until when.
func whoBlock(v View) slack.Block {
	elems := []slack.MixedElement{mrkdwn("Who may answer: " + responders(v.Responders))}
	if v.ExpiresAt != nil {
		elems = append(elems, mrkdwn("Answer by "+slackDate(*v.ExpiresAt)))
	}
	return slack.NewContextBlock(blockID(v, -1, kindWho), elems...)
}

func responders(ids []string) string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || strings.TrimSpace(id) == "" {
			continue
		}
		seen[id] = true
		m, ok := mention(id)
		if !ok {
			m = clipEscaped(oneLine(id), 40)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return "Anyone in this channel"
	}
	return joinCapped(out, ", ", maxListed)
}

func dividerBlock(v View, q int) slack.Block {
	return &slack.DividerBlock{Type: slack.MBTDivider, BlockID: blockID(v, q, kindDivider)}
}

// progressAt is the progress of question q the message shows: none for a
// team ask, whose message is everyone's.
func progressAt(v View, q int) interaction.Progress {
	if v.Team == nil && q >= 0 && q < len(v.Progress) {
		return v.Progress[q]
	}
	return interaction.Progress{}
}

// pendingText starts with the mentions of the people pinged (Mention) and
// of the named responders: a phone's push notification shows only this
// text, never the blocks (Slack, chat.postMessage and the 2026-07-13
// notification changelog), so a person named only in the blocks would get
// a push that does not say it is for them.
func pendingText(v View) string {
	var b strings.Builder
	if m := mentions(slices.Concat(v.Mention, v.Responders), 1000); m != "" {
		b.WriteString(m + " ")
	}
	b.WriteString(agentName(v.Request) + " asks: " + firstQuestion(v.Request))
	return b.String()
}

// firstQuestion is the escaped, shortened first question (its Markdown
// reduced to plain words) for the fallback
// text, with a count of the others.
func firstQuestion(r interaction.Request) string {
	if len(r.Questions) == 0 {
		return "(no question)"
	}
	s := clipEscaped(oneLine(mdPlain(r.Questions[0].Question)), 1000)
	if n := len(r.Questions) - 1; n == 1 {
		s += " (and 1 more question)"
	} else if n > 1 {
		s += fmt.Sprintf(" (and %d more questions)", n)
	}
	return s
}
