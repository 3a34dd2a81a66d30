package blocks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// Team is what the message of an ask that collects several people's
// responses shows about them: who has answered and, once it ended, the
// tally. It never holds anyone's picks of a pending ask: the message is
// shared, and each person's picks are theirs alone.
type Team struct {
	Wanted   int                       // responses the ask collects (≥ 1)
	Answered []interaction.User        // who has responded, in order
	Tally    map[string]map[string]int // per question id, per label: how many picked it (shown once ended)
	// Texts holds, per question id, what each person typed (Other… or a
	// free-text answer), in the order of their responses: shown under the
	// tally once ended, since the team's answer then holds only labels.
	Texts map[string][]PersonText
}

// PersonText is one person's typed answer to a question.
type PersonText struct {
	User interaction.User
	Text string
}

// Block kinds of the team parts of a message.
const (
	kindTeam  Kind = "team"  // who has answered
	kindTally Kind = "tally" // the votes per label of a question, once ended
)

// maxAnsweredShown bounds the people named in the "who has answered" line;
// the rest are counted.
const maxAnsweredShown = 50

// teamBlock says how many of the wanted responses are in and whose:
// "2 of 3 answered: @alice, @bob". Only who, never what.
func teamBlock(v View) slack.Block {
	t := v.Team
	n := len(t.Answered)
	text := fmt.Sprintf("%d of %d answered", n, max(t.Wanted, 1))
	if n == 0 {
		text = fmt.Sprintf("0 of %d answered yet: each person picks and presses *Submit* for themselves", max(t.Wanted, 1))
		if interaction.TapResponds(v.Request) {
			text = fmt.Sprintf("0 of %d answered yet: each person taps their own answer", max(t.Wanted, 1))
		}
	}
	var who []string
	for i, u := range t.Answered {
		if i == maxAnsweredShown {
			who = append(who, fmt.Sprintf("and %d more", n-i))
			break
		}
		who = append(who, user(&u))
	}
	if len(who) > 0 {
		text += ": " + joinCapped(who, ", ", maxListed)
	}
	elems := []slack.MixedElement{mrkdwn(text)}
	if veto := vetoLine(v.Request); veto != "" {
		elems = append(elems, mrkdwn(veto))
	}
	return slack.NewContextBlock(blockID(v, -1, kindTeam), elems...)
}

// vetoLine says, before anyone taps, which options end a team's ask for
// everyone: "*No* ends the vote for everyone"; "" when none does.
func vetoLine(r interaction.Request) string {
	var labels []string
	for _, q := range r.Questions {
		for _, o := range q.Options {
			if o.Veto {
				labels = append(labels, "*"+clipPlain(oneLine(o.Label), maxOptionText)+"*")
			}
		}
	}
	switch len(labels) {
	case 0:
		return ""
	case 1:
		return labels[0] + " ends the vote for everyone"
	}
	return joinCapped(labels, " or ", maxListed) + " ends the vote for everyone"
}

// tallyBlock lists the votes of question i of an ended team ask, most
// first ("Yes: 2 · No: 1"); nil when nobody picked an option of it.
func tallyBlock(v View, i int) slack.Block {
	q := v.Request.Questions[i]
	counts := v.Team.Tally[q.ID]
	if len(counts) == 0 {
		return nil
	}
	var parts []string
	seen := map[string]bool{}
	for _, o := range q.Options {
		if n, ok := counts[o.Label]; ok && !seen[o.Label] {
			seen[o.Label] = true
			parts = append(parts, clipPlain(oneLine(o.Label), maxOptionText)+": "+strconv.Itoa(n))
		}
	}
	for _, l := range sortedLabels(counts) {
		if !seen[l] {
			parts = append(parts, clipPlain(oneLine(l), maxOptionText)+": "+strconv.Itoa(counts[l]))
		}
	}
	elems := []slack.MixedElement{mrkdwn("Tally: " + joinCapped(parts, " · ", maxListed))}
	if t := typedText(v, i); t != "" {
		elems = append(elems, mrkdwn(t))
	}
	return slack.NewContextBlock(blockID(v, i, kindTally), elems...)
}

// typedText lists, under the tally of question i, what each person typed
// ("Typed: @alice: Plan C"), so that a dissenter's text does not vanish
// from the team's result; "" when nobody typed, or when the team's answer
// is the typed text already (nobody picked an option).
func typedText(v View, i int) string {
	texts := v.Team.Texts[v.Request.Questions[i].ID]
	if len(texts) == 0 {
		return ""
	}
	if item, ok := answerItem(v, i); ok && len(item.Selected) == 0 {
		return ""
	}
	var lines []string
	for _, t := range texts {
		lines = append(lines, user(&t.User)+": "+clipEscaped(oneLine(t.Text), maxProgressText))
	}
	return "Typed:\n" + joinCapped(lines, "\n", maxListed)
}

func sortedLabels(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// teamOutcome names who answered an ended team ask, for its outcome
// line; "" when nobody did.
func teamOutcome(v View) string {
	if v.Team == nil || len(v.Team.Answered) == 0 {
		return ""
	}
	var who []string
	for i, u := range v.Team.Answered {
		if i == maxAnsweredShown {
			who = append(who, fmt.Sprintf("and %d more", len(v.Team.Answered)-i))
			break
		}
		who = append(who, user(&u))
	}
	return fmt.Sprintf("Responses (%d of %d): %s", len(v.Team.Answered), max(v.Team.Wanted, 1), strings.TrimSpace(joinCapped(who, ", ", maxListed)))
}

// QuestionName names q in a short line of mrkdwn (its header, else its
// question reduced to plain words), escaped and at most 100 units, for
// notices such as "please answer …".
func QuestionName(q interaction.Question) string {
	name := oneLine(q.Header)
	if name == "" {
		name = oneLine(mdPlain(q.Question))
	}
	return clipEscaped(name, 100)
}
