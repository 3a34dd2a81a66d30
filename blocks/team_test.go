package blocks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// approvalRequest is a deploy approval with a veto, a required question
// and one that takes no other text.
func approvalRequest() interaction.Request {
	no := false
	return interaction.Request{Agent: agent, Questions: []interaction.Question{
		{ID: "deploy", Question: "Deploy v1.4.2?", Required: true, AllowOther: &no,
			Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}}},
		{ID: "window", Question: "When?", Options: opts("now", "tonight")},
		{ID: "notes", Question: "Anything to add?"},
	}}
}

func alice() interaction.User { return interaction.User{ID: "U0ALICE", Name: "alice"} }
func bob() interaction.User   { return interaction.User{ID: "U0BOB", Name: "bob"} }

// teamPending is a team ask with two of three responses in, and Progress
// set as a bug would pass it: the message must show none of it.
func teamPending() View {
	v := pendingView(approvalRequest())
	v.Rev = 3
	v.Progress = []interaction.Progress{{Selected: []string{"Yes"}}, {Selected: []string{"tonight"}}, {Custom: "alice's secret"}}
	v.Team = &Team{Wanted: 3, Answered: []interaction.User{alice(), bob()}}
	return v
}

func teamEnded() View {
	v := teamPending()
	v.Rev = 4
	v.Status = interaction.StatusAnswered
	v.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "deploy", Selected: []string{"Yes"}},
		{ID: "window", Selected: []string{"now", "tonight"}},
		{ID: "notes", Custom: "alice: ship it\nbob: watch the error rate"},
	}}
	v.AnsweredBy = &interaction.User{ID: "U0CAROL", Name: "carol"}
	v.EndedAt = t0
	v.Team = &Team{Wanted: 3, Answered: []interaction.User{alice(), bob(), {ID: "U0CAROL", Name: "carol"}},
		Tally: map[string]map[string]int{"deploy": {"Yes": 3}, "window": {"now": 1, "tonight": 1}}}
	return v
}

func teamCases() map[string]View {
	none := teamPending()
	none.Team = &Team{Wanted: 3}
	vetoed := teamEnded()
	vetoed.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "deploy", Selected: []string{"No"}}, {ID: "window", Selected: []string{}}, {ID: "notes", Selected: []string{}}}}
	vetoed.AnsweredBy = &interaction.User{ID: "U0BOB", Name: "bob"}
	vetoed.Team.Tally = map[string]map[string]int{"deploy": {"Yes": 1, "No": 1}}
	vetoed.Team.Answered = vetoed.Team.Answered[:2]
	expired := teamEnded()
	expired.Status, expired.Answer, expired.AnsweredBy = interaction.StatusExpired, nil, nil
	expired.Error = interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline")
	expired.Team.Answered = expired.Team.Answered[:1]
	onTimeout := teamEnded()
	onTimeout.AnsweredBy = nil
	// A dissenter typed instead of picking (issue 29 item 4): the team's
	// answer is the label, her text is under the tally; the notes
	// question, answered with text only, shows it once, as its answer.
	dissent := teamEnded()
	dissent.Answer.Answers[0] = interaction.AnswerItem{ID: "deploy", Selected: []string{"Yes"}}
	dissent.Team.Tally = map[string]map[string]int{"deploy": {"Yes": 2}, "window": {"now": 1, "tonight": 1}}
	dissent.Team.Texts = map[string][]PersonText{
		"deploy": {{User: alice(), Text: "Plan C: <!channel> ship Friday"}},
		"notes":  {{User: alice(), Text: "ship it"}, {User: bob(), Text: "watch the error rate"}},
	}
	return map[string]View{
		"team_answered_dissent": dissent,
		"team_pending":          teamPending(), "team_pending_none": none, "team_answered": teamEnded(),
		"team_vetoed": vetoed, "team_expired_partial": expired, "team_answered_at_deadline": onTimeout,
	}
}

// A dissenter's text is under the tally of the question, once; where the
// team's answer is the text already it is not repeated.
func TestTeamTextUnderTheTally(t *testing.T) {
	_, bs := Message(teamCases()["team_answered_dissent"])
	s := string(goldenJSON(t, bs))
	if !strings.Contains(s, `Typed:\n<@U0ALICE>: Plan C: &lt;!channel&gt; ship Friday`) {
		t.Errorf("alice's text is not under the tally:\n%s", s)
	}
	if strings.Count(s, "watch the error rate") != 1 {
		t.Errorf("the notes text is shown %d times, want once", strings.Count(s, "watch the error rate"))
	}
}

// The team message, pending and ended, is as the golden files show and
// within Slack's limits.
func TestGoldenTeamMessages(t *testing.T) { goldenMessages(t, teamCases()) }

// A pending team message never carries anyone's picks: no initial option
// in any select, no "Other: …" or "Skipped" line, whatever Progress the
// view holds; it has Submit and no Cancel (one person cannot end it), and
// says who answered, not what.
func TestTeamMessageCarriesNoPicks(t *testing.T) {
	text, bs := Message(teamPending())
	s := string(goldenJSON(t, bs))
	for _, bad := range []string{"initial_option", "secret", "Skipped", "Other: ", "." + string(KindCancel)} {
		if strings.Contains(s, bad) {
			t.Errorf("pending team message carries %q", bad)
		}
	}
	for _, want := range []string{"2 of 3 answered: <@U0ALICE>, <@U0BOB>", string(KindSubmit)} {
		if !strings.Contains(s, want) {
			t.Errorf("pending team message lacks %q", want)
		}
	}
	if strings.Contains(text, "secret") {
		t.Errorf("fallback text %q", text)
	}
}

// A required question has no Skip, one that allows no other text no
// Other…; the others keep both.
func TestRequiredAndNoOtherButtons(t *testing.T) {
	v := pendingView(approvalRequest())
	_, bs := Message(v)
	got := map[int][]Kind{}
	for _, b := range bs {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, e := range ab.Elements.ElementSet {
			if btn, ok := e.(*slack.ButtonBlockElement); ok {
				r, err := ParseActionID(btn.ActionID)
				if err != nil {
					t.Fatal(err)
				}
				got[r.Question] = append(got[r.Question], r.Kind)
			}
		}
	}
	if want := fmt.Sprint(map[int][]Kind{-1: {KindSubmit, KindCancel}, 1: {KindOther, KindSkip}, 2: {KindOther, KindSkip}}); fmt.Sprint(got) != want {
		t.Fatalf("buttons %v, want %v", got, want)
	}
}

// The biggest team asks stay within Slack's 50 blocks, pending and ended.
func TestTeamMessageBlockCount(t *testing.T) {
	v := pendingView(hugeRequest())
	v.Team = &Team{Wanted: 50}
	tally := map[string]map[string]int{}
	for i := range 50 {
		v.Team.Answered = append(v.Team.Answered, interaction.User{ID: fmt.Sprintf("U0P%03d", i)})
	}
	for _, q := range v.Request.Questions {
		counts := map[string]int{}
		for _, o := range q.Options {
			counts[o.Label] = 1
		}
		counts[longString("free", 300)] = 2
		tally[q.ID] = counts
	}
	v.Team.Tally = tally
	for _, status := range []interaction.Status{interaction.StatusPending, interaction.StatusAnswered} {
		v.Status = status
		if status == interaction.StatusAnswered {
			v.Answer = &interaction.Answer{}
			for _, q := range v.Request.Questions {
				v.Answer.Answers = append(v.Answer.Answers, interaction.AnswerItem{ID: q.ID, Custom: longString("answer", 5000)})
			}
		}
		text, bs := Message(v)
		if len(bs) > MaxMessageBlocks {
			t.Fatalf("%s: %d blocks", status, len(bs))
		}
		reportProblems(t, checkMessage(t, string(status), v, text, bs))
	}
}
